#!/usr/bin/env bash
# Regenerates tests/preprocessor/testdata/*.golden from their inputs with the current lmdxpp.
# Review the diff before committing: the goldens are what lmdxpp is held to.
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build //preprocessor:lmdxpp
lmdxpp="$(bazel cquery --output=files //preprocessor:lmdxpp 2>/dev/null)"
for input in tests/preprocessor/testdata/*.c tests/preprocessor/testdata/*.cc; do
  "$lmdxpp" "$input" --name "$input" -o "$input.golden"
done
git diff --stat -- tests/preprocessor/testdata
