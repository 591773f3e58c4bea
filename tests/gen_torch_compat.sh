#!/usr/bin/env bash
# Builds each libtorch program of tests/torch_compat/ against Debian's libtorch (libtorch-dev 1.13)
# and records what it prints in tests/data/torch_compat_NAME.txt; the suite builds the same sources
# against dl/torch.hpp and compares (tests/torch_compat/check.py). Needs libtorch-dev and
# dataset-fashion-mnist (libtorch's MNIST reader takes the IDX files unzipped: they are unzipped
# into a temporary directory).
#   bash tests/gen_torch_compat.sh [NAME...]
set -euo pipefail
cd "$(dirname "$0")"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(mnist dcgan regression custom_dataset)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/fashion-mnist"
for f in /usr/share/datasets/fashion-mnist/*.gz; do gunzip -c "$f" > "$work/fashion-mnist/$(basename "$f" .gz)"; done
for name in "${names[@]}"; do
  g++ -std=c++17 -O2 "torch_compat/$name.cpp" -o "$work/$name" -I/usr/include/torch/csrc/api/include \
    -ltorch -ltorch_cpu -lc10 -lz
  case "$name" in
    mnist | dcgan) args=("$work/fashion-mnist") ;;
    custom_dataset) args=(/usr/share/datasets/fashion-mnist) ;;
    *) args=() ;;
  esac
  "$work/$name" "${args[@]}" > "data/torch_compat_$name.txt"
  echo "data/torch_compat_$name.txt: $(wc -l < "data/torch_compat_$name.txt") lines"
done
