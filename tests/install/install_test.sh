#!/usr/bin/env bash
# LMDX installed for other build systems, as a user outside the repository meets it:
#   1. ./lmdx install --prefix TMP; a C program built with gcc and pkg-config runs on 2 nodes
#      under the installed lmdx tool, with LMDX_HOME unset;
#   2. a CMake project (find_package(LMDX), LMDX::lmdx, lmdx_translate for the dialect) builds a
#      C and a C++ program that run on 2 nodes;
#   3. the installed `lmdx cc` builds the dialect program too;
#   4. ./lmdx deb builds a package whose control names its dependencies; with --apt (CI, as
#      root) it is installed with apt, a program built with the system's pkg-config runs on 2
#      nodes under /usr/bin/lmdx, and the package is removed again.
# Prints a line per check and, last, "N passed, N failed".
set -uo pipefail

repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
here="$repo/tests/install"
apt=0
[[ "${1:-}" == --apt ]] && apt=1
work="$(mktemp -d)"
installed_deb=0
cleanup() {
  ((installed_deb)) && apt-get remove -y lmdx >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

passed=0 failed=0
check() {
  local name="$1"
  shift
  local log="$work/log"
  if "$@" >"$log" 2>&1; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name"
    sed 's/^/  | /' "$log" | tail -40
    failed=$((failed + 1))
  fi
}

# Runs a program on 2 nodes with an installed tool and no trace of the repository, and checks
# that it says "verified".
runs_verified() {
  local tool="$1" program="$2"
  local out
  out="$(cd "$work" && env -u LMDX_HOME "$tool" run "$program" -n 2 2>&1)" || {
    echo "$out"
    return 1
  }
  echo "$out"
  grep -q '^verified' <<<"$out"
}

prefix="$work/prefix"
check "lmdx install --prefix" "$repo/lmdx" install --prefix "$prefix"

pkg_build() {
  gcc "$here/sum.c" -o "$work/sum_pc" \
    $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs lmdx)
}
check "gcc with pkg-config --cflags --libs lmdx" pkg_build
check "the pkg-config program on 2 nodes" runs_verified "$prefix/bin/lmdx" "$work/sum_pc"

cmake_build() {
  cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" &&
    cmake --build "$work/cmake" -j 2
}
check "CMake: find_package(LMDX), LMDX::lmdx, lmdx_translate" cmake_build
check "the CMake C program on 2 nodes" runs_verified "$prefix/bin/lmdx" "$work/cmake/sum"
check "the CMake C++ dialect program on 2 nodes" runs_verified "$prefix/bin/lmdx" \
  "$work/cmake/squares"

cc_build() {
  cd "$work" && env -u LMDX_HOME "$prefix/bin/lmdx" cc "$here/squares.cc" -o "$work/squares_cc"
}
check "the installed lmdx cc" cc_build
check "the lmdx cc program on 2 nodes" runs_verified "$prefix/bin/lmdx" "$work/squares_cc"

deb=""
deb_build() {
  deb="$("$repo/lmdx" deb --out "$work/deb" | tail -1)" || return 1
  [[ -f "$deb" ]] || return 1
  local contents depends
  contents="$(dpkg-deb -c "$deb")" && depends="$(dpkg-deb -f "$deb" Depends)" || return 1
  echo "$depends"
  grep -q './usr/lib/cmake/LMDX/LMDXConfig.cmake' <<<"$contents" &&
    grep -q './usr/lib/pkgconfig/lmdx.pc' <<<"$contents" &&
    grep -q './usr/bin/lmdxpp' <<<"$contents" &&
    grep -q 'libprotobuf32' <<<"$depends" && grep -q 'libsigsegv2' <<<"$depends" &&
    grep -q 'libjemalloc2' <<<"$depends"
}
check "lmdx deb: contents and dependencies" deb_build

if ((apt)); then
  apt_install() {
    [[ -z "$(dpkg-query -W -f='${Status}' lmdx 2>/dev/null | grep ' installed')" ]] || {
      echo "an lmdx package is installed already; not replacing it"
      return 1
    }
    installed_deb=1
    apt-get install -y "$deb"
  }
  check "apt install ./lmdx_VERSION.deb" apt_install
  system_build() {
    gcc "$here/sum.c" -o "$work/sum_system" $(pkg-config --cflags --libs lmdx)
  }
  check "gcc with the package's pkg-config file" system_build
  check "the package's program on 2 nodes" runs_verified /usr/bin/lmdx "$work/sum_system"
fi

echo "$passed passed, $failed failed"
((failed == 0))
