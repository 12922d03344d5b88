#!/usr/bin/env bash
# Builds a Debian package of LMDX from the built files, as `./lmdx deb` asks:
#   deb.sh BAZEL_BIN OUTPUT_DIR
# The package installs under /usr what `lmdx install` installs, and depends on the Debian
# packages that own the shared libraries its binaries load (found with ldd and dpkg -S, so the
# list follows the build), plus what `lmdx cc` runs (g++, protoc) and what lmdx.hpp includes.
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:?usage: deb.sh BAZEL_BIN OUTPUT_DIR}"
out="${2:?usage: deb.sh BAZEL_BIN OUTPUT_DIR}"
version="$(cat "$repo/VERSION")"
arch="$(dpkg --print-architecture)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

"$here/install.sh" --prefix /usr --destdir "$stage" --strip "$bin" >/dev/null

# The packages owning every shared library the binaries need, each at the version installed
# here or later (what they were built against).
depends=()
while read -r library; do
  [[ -n "$library" ]] || continue
  owner="$(dpkg -S "$library" 2>/dev/null | head -1 | cut -d: -f1)" || true
  if [[ -z "$owner" ]]; then
    # /lib is a link to /usr/lib on Debian 12; dpkg knows the file by one of the two names.
    owner="$(dpkg -S "$(readlink -f "$library")" 2>/dev/null | head -1 | cut -d: -f1)" || true
  fi
  [[ -n "$owner" ]] || { echo "lmdx deb: no Debian package owns $library" >&2; exit 1; }
  installed="$(dpkg-query -W -f='${Version}' "$owner")"
  depends+=("$owner (>= $installed)")
done < <(ldd "$stage/usr/lib/liblmdx.so" "$stage/usr/bin/lmdx" "$stage/usr/bin/lmdxpp" |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
# lmdx cc compiles and links with g++ and runs protoc on .proto files; lmdx.hpp includes protobuf.
depends+=("g++" "libprotobuf-dev" "protobuf-compiler" "pkg-config")
depends_line="$(printf '%s\n' "${depends[@]}" | sort -u | paste -sd, - | sed 's/,/, /g')"

mkdir -p "$stage/DEBIAN"
installed_kib="$(du -sk "$stage/usr" | cut -f1)"
cat >"$stage/DEBIAN/control" <<CONTROL
Package: lmdx
Version: $version
Architecture: $arch
Maintainer: LMDX developers <lmdx@localhost>
Installed-Size: $installed_kib
Depends: $depends_line
Recommends: libucx0, openmpi-bin
Section: libdevel
Priority: optional
Description: distributed shared memory runtime for C and C++
 LMDX runs a program written like a multithreaded one across the nodes of a
 cluster: shared variables kept coherent by a protocol chosen per region,
 threads and tasks started on any node, locks, barriers and semaphores, and
 typed messages. This package holds the runtime library, its C and C++
 headers, the lmdx tool (lmdx run, lmdx cc), the lmdxpp preprocessor, a
 pkg-config file and a CMake package (find_package(LMDX)).
CONTROL

mkdir -p "$out"
deb="$out/lmdx_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "$deb"
