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
[ ${#names[@]} -gt 0 ] || names=(mnist dcgan regression custom_dataset sequence archive)
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
    archive)  # libtorch's files, which the suite's dl build must read
      rm -rf data/torch_compat_archive && mkdir -p data/torch_compat_archive
      "$work/$name" save data/torch_compat_archive
      args=(load data/torch_compat_archive) ;;
    *) args=() ;;
  esac
  "$work/$name" "${args[@]}" > "data/torch_compat_$name.txt"
  echo "data/torch_compat_$name.txt: $(wc -l < "data/torch_compat_$name.txt") lines"
done

# The other way: what dl's build of archive.cpp saves, libtorch must read (prints the same lines).
if [[ " ${names[*]} " == *" archive "* ]]; then
  blas=/usr/include/x86_64-linux-gnu/openblas-pthread
  g++ -std=c++20 -O1 -fopenmp -I../include -Itorch_compat/shim -I$blas -DDL_HAVE_LIBZIP=1 -DDL_HAVE_ZLIB=1 \
    torch_compat/archive.cpp -o "$work/archive_dl" -lzip -lz
  mkdir -p "$work/from_dl"
  "$work/archive_dl" save "$work/from_dl"
  "$work/archive" load "$work/from_dl" > "$work/libtorch_reads_dl.txt"
  if diff -q data/torch_compat_archive.txt "$work/libtorch_reads_dl.txt" > /dev/null; then
    echo "libtorch's torch::load reads dl's torch::save archives: OK"
  else
    echo "libtorch read dl's archives differently:"; diff data/torch_compat_archive.txt "$work/libtorch_reads_dl.txt"; exit 1
  fi
fi
