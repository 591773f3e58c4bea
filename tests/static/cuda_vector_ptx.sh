#!/usr/bin/env bash
# Checks that the generated kernels use 16-byte vector loads and stores (issue 12's contiguous path):
# compiles cuda_vector.cu to PTX and counts ld/st .v4.f32 (generic or .global).
#   usage: cuda_vector_ptx.sh <nvcc> <include dir> <source> [nvcc flags...]
set -euo pipefail
nvcc=$1 include=$2 src=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$nvcc" "$@" -I"$include" -ptx "$src" -o "$out/k.ptx"
loads=$(grep -cE 'ld(\.global)?(\.nc)?\.v4\.f32' "$out/k.ptx" || true)
stores=$(grep -cE 'st(\.global)?\.v4\.f32' "$out/k.ptx" || true)
echo "16-byte vector loads: $loads, stores: $stores"
# Forward: 4 operands and 1 output; backward: 4 operands and the incoming gradient, 4 adjoints;
# each for the two index widths (int32, int64).
[[ $loads -ge 18 && $stores -ge 10 ]] || { echo "the contiguous path lost its vector loads/stores"; exit 1; }
