#!/usr/bin/env bash
# Installs LMDX's built files under a prefix, as `./lmdx install` and `./lmdx deb` ask:
#   install.sh --prefix PREFIX [--destdir DIR] [--strip] BAZEL_BIN
# PREFIX/bin/lmdx and lmdxpp, PREFIX/include/lmdx/lmdx.h and lmdx.hpp, PREFIX/lib/liblmdx.so, a
# pkg-config file (PREFIX/lib/pkgconfig/lmdx.pc) and a CMake package (PREFIX/lib/cmake/LMDX).
# With --destdir the files go under DIR/PREFIX but name PREFIX, for a package's staging tree.
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
prefix="" destdir="" strip=0 bin=""
while (($#)); do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a folder}"; shift 2 ;;
    --destdir) destdir="${2:?--destdir needs a folder}"; shift 2 ;;
    --strip) strip=1; shift ;;
    *) bin="$1"; shift ;;
  esac
done
[[ -n "$prefix" && -n "$bin" ]] || { echo "usage: install.sh --prefix PREFIX [--destdir DIR] [--strip] BAZEL_BIN" >&2; exit 2; }
[[ "$prefix" == /* ]] || { echo "lmdx install: the prefix must be an absolute path, not '$prefix'" >&2; exit 2; }

version="$(cat "$repo/VERSION")"
root="$destdir$prefix"

for built in tools/lmdx preprocessor/lmdxpp api/liblmdx.so; do
  [[ -f "$bin/$built" ]] || { echo "lmdx install: $bin/$built is not built" >&2; exit 1; }
done

# Installs one file, refusing to go on silently after a write that failed (a full disk, a
# read-only prefix).
put() {
  local mode="$1" from="$2" to="$3"
  install -D -m "$mode" "$from" "$to" || { echo "lmdx install: cannot write $to" >&2; exit 1; }
}

put 0755 "$bin/tools/lmdx" "$root/bin/lmdx"
put 0755 "$bin/preprocessor/lmdxpp" "$root/bin/lmdxpp"
put 0755 "$bin/api/liblmdx.so" "$root/lib/liblmdx.so"
put 0644 "$repo/include/lmdx/lmdx.h" "$root/include/lmdx/lmdx.h"
put 0644 "$repo/include/lmdx/lmdx.hpp" "$root/include/lmdx/lmdx.hpp"
if ((strip)); then
  # Debug information is most of their size (57 MB of liblmdx.so's); a package leaves it out.
  strip --strip-debug "$root/lib/liblmdx.so" "$root/bin/lmdx" "$root/bin/lmdxpp"
fi

# The templates name the prefix the files will be found at, not the staging folder.
fill() {
  local from="$1" to="$2"
  mkdir -p "$(dirname "$to")"
  sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@VERSION_MAJOR@|${version%%.*}|g" \
    "$from" >"$to" || { echo "lmdx install: cannot write $to" >&2; exit 1; }
  chmod 0644 "$to"
}
fill "$here/lmdx.pc.in" "$root/lib/pkgconfig/lmdx.pc"
fill "$here/LMDXConfig.cmake.in" "$root/lib/cmake/LMDX/LMDXConfig.cmake"
fill "$here/LMDXConfigVersion.cmake.in" "$root/lib/cmake/LMDX/LMDXConfigVersion.cmake"

echo "lmdx install: LMDX $version in $root"
echo "  bin/lmdx, bin/lmdxpp, lib/liblmdx.so, include/lmdx/, lib/pkgconfig/lmdx.pc, lib/cmake/LMDX/"
