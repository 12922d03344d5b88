#!/usr/bin/env bash
# Regenerates tests/preprocessor/testdata/*.golden from their inputs with the current lmdxpp.
# Review the diff before committing: the goldens are what lmdxpp is held to.
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build //preprocessor:lmdxpp
lmdxpp="$(bazel info bazel-bin 2>/dev/null)/preprocessor/lmdxpp"
for input in tests/preprocessor/testdata/*.c tests/preprocessor/testdata/*.cc; do
  "$lmdxpp" "$input" --name "$input" -o "$input.golden"
done
git diff --stat -- tests/preprocessor/testdata
