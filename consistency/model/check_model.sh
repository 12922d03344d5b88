#!/usr/bin/env bash
# Checks the SPIN model of hlrc's and lrc's core (consistency/model/README.md) exhaustively: every
# configuration expected to pass must end with no error and a complete search, every one expected
# to fail must find a violation of DRF-SC, whose trail is printed. Exits 1 if any expectation
# fails, 2 on a usage or set-up error.
#
# Usage: check_model.sh [--list | --help | --quick | CONFIGURATION...]
#   With no configuration, runs them all (about 17 minutes of one core; at most 8 GiB at a
#   time). --quick runs a sample of 9 that finds each bug once and checks a few fixed
#   configurations (about 3 minutes; the test //consistency/model:model_check runs it). --list names them all and marks the sample.
#   LMDX_MODEL_MEMLIM_MB bounds the memory of one search (default 8192).
#
# pan is built in a temporary directory, never in the source tree.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="$here/lazy_release.pml"
# Under bazel test the model is a runfile of the test.
workspace="${TEST_WORKSPACE:-lmdx}"
for runfiles in "${TEST_SRCDIR:-}/$workspace" "${RUNFILES_DIR:-}/$workspace"; do
  [[ -r "$model" ]] && break
  model="$runfiles/consistency/model/lazy_release.pml"
done
memlim="${LMDX_MODEL_MEMLIM_MB:-8192}"

# name | expected | model flags. Expected "pass": no error and a complete search; "fail": DRF-SC
# violated. Every configuration has 3 nodes and 2 threads per node; page p is homed at node p.
configs=(
  # Generated programs on 1 page of 1 word, values 0..2: any read or write at any time, lock
  # acquisitions and barrier rounds bounded.
  "fixed-hlrc-locks|pass|-DPAGES=1 -DLOCK_BUDGET=5 -DROUNDS=0"
  "fixed-lrc-locks|pass|-DLRC -DPAGES=1 -DLOCK_BUDGET=5 -DROUNDS=0"
  # Fix C's rule in Flush closes bug A as well (README.md, "Bug A"): bug-a takes fix C out with
  # fix A, and no-fix-a, without fix A alone, passes.
  "bug-a-hlrc-locks|fail|-DBUG_A -DBUG_C -DPAGES=1 -DLOCK_BUDGET=5 -DROUNDS=0"
  "no-fix-a-hlrc-locks|pass|-DBUG_A -DPAGES=1 -DLOCK_BUDGET=5 -DROUNDS=0"
  "fixed-hlrc-barrier|pass|-DPAGES=1 -DLOCK_BUDGET=3 -DROUNDS=1"
  "fixed-lrc-barrier|pass|-DLRC -DPAGES=1 -DLOCK_BUDGET=3 -DROUNDS=1"
  "bug-b-hlrc-barrier|fail|-DBUG_B -DPAGES=1 -DLOCK_BUDGET=3 -DROUNDS=1"
  "bug-b-lrc-barrier|fail|-DBUG_B -DLRC -DPAGES=1 -DLOCK_BUDGET=3 -DROUNDS=1"
  # Generated programs on 2 pages (homed at nodes 0 and 1), smaller budgets.
  "fixed-hlrc-pages|pass|-DPAGES=2 -DLOCK_BUDGET=2 -DROUNDS=0"
  "fixed-lrc-pages|pass|-DLRC -DPAGES=2 -DLOCK_BUDGET=2 -DROUNDS=0"
  "fixed-hlrc-pages-barrier|pass|-DPAGES=2 -DLOCK_BUDGET=0 -DROUNDS=1"
  "fixed-lrc-pages-barrier|pass|-DLRC -DPAGES=2 -DLOCK_BUDGET=0 -DROUNDS=1"
  # Generated programs on 1 page of 2 words (false sharing): a home's write put back within an
  # interval hides from a copy fetched meanwhile unless fix C names the page (README.md, "Bug C").
  "fixed-hlrc-sharing|pass|-DPAGES=1 -DWORDS=2 -DLOCK_BUDGET=2 -DROUNDS=0"
  "fixed-lrc-sharing|pass|-DLRC -DPAGES=1 -DWORDS=2 -DLOCK_BUDGET=2 -DROUNDS=0"
  "bug-c-hlrc-sharing|fail|-DBUG_C -DPAGES=1 -DWORDS=2 -DLOCK_BUDGET=2 -DROUNDS=0"
  "bug-c-lrc-sharing|fail|-DBUG_C -DLRC -DPAGES=1 -DWORDS=2 -DLOCK_BUDGET=2 -DROUNDS=0"
  # hlrc's one-sided first copies, registered in the home's memory (README.md, "Registered first
  # copies"), beside first copies asked for: smaller bounds, as both paths multiply the states.
  # Without the taking's rules a copy read while the home wrote with no fault (bug-r0), or before
  # a first-copy fetch of the other word by a third node made the page read-only (bug-r), misses
  # the home's later writes.
  "fixed-hlrc-first-locks|pass|-DFIRST_PATH=2 -DPAGES=1 -DLOCK_BUDGET=4 -DROUNDS=0"
  "bug-r0-hlrc-first-locks|fail|-DFIRST_PATH=2 -DBUG_R0 -DPAGES=1 -DLOCK_BUDGET=4 -DROUNDS=0"
  "fixed-hlrc-first-barrier|pass|-DFIRST_PATH=2 -DPAGES=1 -DLOCK_BUDGET=2 -DROUNDS=1"
  "fixed-hlrc-first-pages|pass|-DFIRST_PATH=2 -DPAGES=2 -DLOCK_BUDGET=1 -DROUNDS=0"
  "fixed-hlrc-first-sharing|pass|-DFIRST_PATH=2 -DPAGES=1 -DWORDS=2 -DLOCK_BUDGET=1 -DROUNDS=0"
  "bug-r-hlrc-first-sharing|fail|-DFIRST_PATH=2 -DBUG_R -DPAGES=1 -DWORDS=2 -DLOCK_BUDGET=3 -DROUNDS=0"
  # Skeletons on 2 pages: the scenarios' synchronisation, each access slot any access.
  "fixed-hlrc-skeleton-a|pass|-DSCRIPT=3 -DPAGES=2 -DLOCK_BUDGET=6 -DROUNDS=0"
  "fixed-lrc-skeleton-a|pass|-DLRC -DKMAX=3 -DSCRIPT=3 -DPAGES=2 -DLOCK_BUDGET=6 -DROUNDS=0"
  "bug-a-hlrc-skeleton-a|fail|-DBUG_A -DBUG_C -DSCRIPT=3 -DPAGES=2 -DLOCK_BUDGET=6 -DROUNDS=0"
  "no-fix-a-hlrc-skeleton-a|pass|-DBUG_A -DSCRIPT=3 -DPAGES=2 -DLOCK_BUDGET=6 -DROUNDS=0"
  "fixed-hlrc-skeleton-b|pass|-DSCRIPT=4 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
  "fixed-lrc-skeleton-b|pass|-DLRC -DSCRIPT=4 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
  "bug-b-hlrc-skeleton-b|fail|-DBUG_B -DSCRIPT=4 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
  "bug-b-lrc-skeleton-b|fail|-DBUG_B -DLRC -DSCRIPT=4 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
  # The two scenarios as written, on 2 pages: only the interleaving is free.
  "fixed-hlrc-scenario-a|pass|-DSCRIPT=1 -DPAGES=2 -DLOCK_BUDGET=6 -DROUNDS=0"
  "bug-a-hlrc-scenario-a|fail|-DBUG_A -DBUG_C -DSCRIPT=1 -DPAGES=2 -DLOCK_BUDGET=6 -DROUNDS=0"
  "fixed-hlrc-scenario-b|pass|-DSCRIPT=2 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
  "fixed-lrc-scenario-b|pass|-DLRC -DSCRIPT=2 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
  "bug-b-hlrc-scenario-b|fail|-DBUG_B -DSCRIPT=2 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
  "bug-b-lrc-scenario-b|fail|-DBUG_B -DLRC -DSCRIPT=2 -DPAGES=2 -DLOCK_BUDGET=4 -DROUNDS=1"
)

# --quick, for CI (the test //consistency/model:model_check): about 2 and a half minutes of one
# core, builds included. Each bug is found once, in generated programs or a skeleton, and a few
# fixed configurations pass, chosen among the cheapest that together cover both protocols, the
# barrier, two pages and false sharing (README.md gives every configuration's time).
quick=(
  bug-a-hlrc-locks
  bug-r0-hlrc-first-locks
  fixed-hlrc-first-locks
  bug-b-lrc-skeleton-b
  bug-c-lrc-sharing
  fixed-hlrc-sharing
  fixed-lrc-pages-barrier
  fixed-hlrc-skeleton-b
  fixed-lrc-skeleton-b
)

# What a configuration's flags make of the model, in words.
describe() {
  local flags=" $1 " text script
  flag() { # the value of -DNAME=value in the flags, else $2
    local value
    value="$(sed -n "s/.* -D$1=\([^ ]*\) .*/\1/p" <<<"$flags")"
    echo "${value:-$2}"
  }
  count() { # count noun: "1 page", "2 pages"
    if [[ "$1" == 1 ]]; then echo "1 $2"; else echo "$1 $2s"; fi
  }
  has() { [[ "$flags" == *" -D$1 "* ]]; }
  list_of() { # "A", "A and B", "A, B and C"
    case $# in
      1) echo "$1" ;;
      2) echo "$1 and $2" ;;
      *) echo "$1, $2 and $3" ;;
    esac
  }
  local fix fixes with=() without=()
  # Fix A is hlrc's alone.
  if has LRC; then text="lrc"; fixes="B C"; else text="hlrc"; fixes="A B C"; fi
  for fix in $fixes; do
    if has "BUG_$fix"; then without+=("$fix"); else with+=("$fix"); fi
  done
  if ((${#with[@]} == 1)); then text+=" with fix ${with[0]}"; fi
  if ((${#with[@]} > 1)); then text+=" with fixes $(list_of "${with[@]}")"; fi
  if ((${#with[@]} > 0 && ${#without[@]} > 0)); then text+=","; fi
  if ((${#without[@]} == 1)); then text+=" without fix ${without[0]}"; fi
  if ((${#without[@]} > 1)); then text+=" without fixes $(list_of "${without[@]}")"; fi
  case "$(flag FIRST_PATH 0)" in
    1) text+=", first copies registered" ;;
    2) text+=", first copies asked for or registered" ;;
  esac
  if has BUG_R0; then text+=" (the taking names nothing)"; fi
  if has BUG_R; then text+=" (the taking does not name pages served read-only)"; fi
  script="$(flag SCRIPT 0)"
  case "$script" in
    0) text+=", generated programs" ;;
    1) text+=", scenario A" ;;
    2) text+=", scenario B" ;;
    3) text+=", skeleton A" ;;
    4) text+=", skeleton B" ;;
  esac
  text+=", $(count "$(flag PAGES 2)" page) of $(count "$(flag WORDS 1)" word)"
  if [[ "$script" == 0 ]]; then
    text+=", $(count "$(flag LOCK_BUDGET 5)" "lock acquisition")"
    text+=", $(count "$(flag ROUNDS 1)" "barrier round")"
  fi
  echo "$text"
}

usage() { # the comment at the top, from its second line to its first blank one
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

in_quick() {
  local name
  for name in "${quick[@]}"; do [[ "$name" == "$1" ]] && return 0; done
  return 1
}

list() {
  local entry name expect flags mark
  for entry in "${configs[@]}"; do
    IFS='|' read -r name expect flags <<<"$entry"
    mark="       "
    in_quick "$name" && mark="(quick)"
    printf '%-26s %s expected to %s: %s\n' "$name" "$mark" "$expect" "$(describe "$flags")"
  done
}

wanted_names=()
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --list) list; exit 0 ;;
  --quick)
    if [[ $# -gt 1 ]]; then
      echo "check_model.sh: --quick takes no configuration" >&2
      exit 2
    fi
    wanted_names=("${quick[@]}")
    ;;
  -*) echo "check_model.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  *) wanted_names=("$@") ;;
esac

selected=()
if [[ ${#wanted_names[@]} -eq 0 ]]; then
  selected=("${configs[@]}")
else
  for wanted in "${wanted_names[@]}"; do
    found=""
    for entry in "${configs[@]}"; do
      [[ "${entry%%|*}" == "$wanted" ]] && found="$entry"
    done
    if [[ -z "$found" ]]; then
      echo "check_model.sh: no configuration named $wanted; --list shows them" >&2
      exit 2
    fi
    selected+=("$found")
  done
fi

for tool in spin gcc; do
  if ! command -v "$tool" >/dev/null; then
    echo "check_model.sh: $tool is not installed (./lmdx setup installs it)" >&2
    exit 2
  fi
done
if [[ ! -r "$model" ]]; then
  echo "check_model.sh: $model is missing" >&2
  exit 2
fi

work="$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/lmdx-model.XXXXXX")" || exit 2
trap 'rm -rf "$work"' EXIT

# Prints the steps of the trail in $dir (spin -t -p, kept to the model's own step lines and the
# failed assertion), at most 60 lines: the first 15 and the last 45.
trail_summary() {
  local dir="$1" flags="$2" lines count
  # shellcheck disable=SC2086  # flags are words
  lines="$(cd "$dir" && spin -t -p $flags lazy_release.pml 2>&1 |
    grep -E '^[[:space:]]*@ |assertion violated|text of failed' |
    sed -E 's/^[[:space:]]*@ /    /; s/^spin: /    spin: /')"
  count="$(printf '%s\n' "$lines" | wc -l)"
  if ((count > 60)); then
    printf '%s\n' "$lines" | head -n 15
    echo "    ... ($((count - 60)) steps left out)"
    printf '%s\n' "$lines" | tail -n 45
  else
    printf '%s\n' "$lines"
  fi
}

# seconds from $1 to $2 (date +%s.%N), to a tenth
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

run_start=$(date +%s.%N)
printf '%-26s %12s %13s %9s %7s %6s  %s\n' configuration states transitions memory search build \
  verdict
failures=0
for entry in "${selected[@]}"; do
  IFS='|' read -r name expect flags <<<"$entry"
  dir="$work/$name"
  mkdir -p "$dir"
  cp "$model" "$dir/lazy_release.pml"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  # flags are words
  if ! (cd "$dir" && spin -a $flags lazy_release.pml >spin.out 2>&1 &&
    gcc -O2 -w -DSAFETY -DMEMLIM="$memlim" -o pan pan.c >gcc.out 2>&1); then
    printf '%-26s %s\n' "$name" "BUILD FAILED"
    cat "$dir/spin.out" "$dir/gcc.out" 2>/dev/null | head -20
    failures=$((failures + 1))
    continue
  fi
  build=$(elapsed "$start" "$(date +%s.%N)")
  # A configuration expected to fail searches on for a shorter trail (-i).
  pan_flags=(-m2000000 -w26)
  [[ "$expect" == fail ]] && pan_flags+=(-i)
  start=$(date +%s.%N)
  (cd "$dir" && ./pan "${pan_flags[@]}" >pan.out 2>&1)
  end=$(date +%s.%N)
  out="$dir/pan.out"
  seconds=$(elapsed "$start" "$end")
  states=$(awk '/states, stored/ { print $1; exit }' "$out")
  transitions=$(awk '/transitions \(= stored\+matched\)/ { printf "%.0f", $1; exit }' "$out")
  memory=$(awk '/total actual memory usage/ { printf "%.0f MB", $1; exit }' "$out")
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -n 1)
  incomplete=""
  if grep -qE 'max search depth too small|reached -DMEMLIM bound|out of memory' "$out"; then
    incomplete=yes
  fi
  drf_violated=""
  if [[ "${errors:-0}" -gt 0 ]] && grep -q 'assertion violated (got==expected)' "$out"; then
    drf_violated=yes
  fi
  if [[ "$expect" == pass && "${errors:-}" == 0 && -z "$incomplete" ]]; then
    verdict="ok: no violation, complete search"
  elif [[ "$expect" == fail && -n "$drf_violated" ]]; then
    verdict="ok: DRF-SC violated, as expected"
  else
    failures=$((failures + 1))
    if [[ -n "$incomplete" ]]; then
      verdict="UNEXPECTED: the search did not complete"
    elif [[ "$expect" == pass ]]; then
      verdict="UNEXPECTED: $(grep -m1 -E 'assertion violated|error' "$out" ||
        echo "errors: ${errors:-?}")"
    else
      verdict="UNEXPECTED: no DRF-SC violation found"
    fi
  fi
  printf '%-26s %12s %13s %9s %7s %6s  %s\n' "$name" "${states:-?}" "${transitions:-?}" \
    "${memory:-?}" "$seconds" "$build" "$verdict"
  if [[ "${errors:-0}" -gt 0 ]]; then
    echo "  trail ($(describe "$flags")):"
    trail_summary "$dir" "$flags"
  fi
  if [[ "$verdict" == UNEXPECTED* ]]; then
    grep -vE '^[[:space:]]*$' "$out" | tail -n 25 | sed 's/^/  pan: /'
  fi
  rm -f "$dir/pan" "$dir/pan.c" "$dir/pan.h" "$dir/pan.m" "$dir/pan.b" "$dir/pan.t" "$dir/pan.p"
done

total=$(awk -v a="$run_start" -v b="$(date +%s.%N)" 'BEGIN {
  s = b - a; printf "%d min %02d s", int(s / 60), s - 60 * int(s / 60) }')
if ((failures > 0)); then
  echo "$failures of ${#selected[@]} configurations did not behave as expected ($total)"
  exit 1
fi
if ((${#selected[@]} == 1)); then
  echo "the configuration behaved as expected ($total)"
else
  echo "all ${#selected[@]} configurations behaved as expected ($total)"
fi
