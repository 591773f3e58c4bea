#!/bin/sh
# usage: expect_compile_error.sh <expected text>... -- <compiler command...>
# Passes when the command fails and its diagnostics contain every expected text.
expected=""
while [ "$1" != "--" ]; do expected="$expected
$1"; shift; done
shift
out=$("$@" 2>&1) && { echo "the file compiled, but it must not:"; echo "$@"; exit 1; }
echo "$expected" | while IFS= read -r want; do
  [ -z "$want" ] && continue
  printf '%s' "$out" | grep -qF -- "$want" || { printf '%s\n' "$out" | head -40; echo "missing from the diagnostics: $want"; exit 1; }
done
