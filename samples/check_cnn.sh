#!/bin/sh
# Smoke test of the CNN sample on a subset (run by meson test): training with a checkpoint and a plot
# ends with the accuracy line; resuming from the epoch-1 checkpoint gives the same final result as
# the uninterrupted run; bad options and a missing data folder give one line and a non-zero exit.
#   check_cnn.sh path/to/fashion_mnist_cnn
set -u
exe=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
args="--limit 1000 --batch-size 100 --threads 2 --seed 3"

"$exe" $args --epochs 2 --checkpoint "$dir/full.safetensors" --plot "$dir/curves.svg" > "$dir/full.txt" 2>&1 || { cat "$dir/full.txt"; fail "training failed"; }
tail -n 1 "$dir/full.txt" | grep -Eq '^test accuracy: [0-9]+\.[0-9]{2}%$' || fail "last line: $(tail -n 1 "$dir/full.txt")"
grep -q "<polyline" "$dir/curves.svg" || fail "no curves in the SVG"
grep -q "confusion matrix" "$dir/full.txt" || fail "no confusion matrix"
grep -q "^Trouser " "$dir/full.txt" || fail "no per-class accuracy"
# Not a terminal: plain progress lines, no carriage returns.
if grep -q "$(printf '\r')" "$dir/full.txt"; then fail "carriage returns in a log"; fi

"$exe" $args --epochs 2 --stop-after 1 --checkpoint "$dir/part.safetensors" > "$dir/part1.txt" 2>&1 || fail "first half failed"
grep -q "stopped after epoch 1" "$dir/part1.txt" || fail "did not stop after epoch 1"
"$exe" $args --epochs 2 --checkpoint "$dir/part.safetensors" --resume > "$dir/part2.txt" 2>&1 || { cat "$dir/part2.txt"; fail "resume failed"; }
grep -q "resumed from" "$dir/part2.txt" || fail "did not resume"
a=$(grep "^epoch 2/2  train" "$dir/full.txt" | sed 's/ *(.*//')
b=$(grep "^epoch 2/2  train" "$dir/part2.txt" | sed 's/ *(.*//')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "resumed epoch differs: '$a' vs '$b'"
[ "$(tail -n 1 "$dir/full.txt")" = "$(tail -n 1 "$dir/part2.txt")" ] || fail "final accuracy differs after resume"

"$exe" --epochs abc > "$dir/bad.txt" 2>&1 && fail "a bad option succeeded"
[ "$(wc -l < "$dir/bad.txt")" -eq 1 ] || { cat "$dir/bad.txt"; fail "a bad option printed more than one line"; }
"$exe" --data "$dir/nowhere" > "$dir/nodata.txt" 2>&1 && fail "a missing data folder succeeded"
[ "$(wc -l < "$dir/nodata.txt")" -eq 1 ] || { cat "$dir/nodata.txt"; fail "a missing data folder printed more than one line"; }
grep -q "not found" "$dir/nodata.txt" || fail "unclear data error: $(cat "$dir/nodata.txt")"
"$exe" --device cuda --limit 10 > "$dir/cuda.txt" 2>&1 && fail "--device cuda succeeded on a CPU build"
echo "ok: $(tail -n 1 "$dir/full.txt")"
