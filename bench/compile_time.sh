#!/bin/sh
# Times the build of bench/compile_time/*.cpp — three user translation units: tensors only
# (tensors_matmul), an MLP training loop (mlp_train) and a CNN training loop (lenet_train) — at -O2
# with the flags a dl user gets from pkg-config / Meson, and prints wall time, CPU time and the
# compiler's peak memory, header-only and in compiled mode (DL_COMPILED_KERNELS, linked against
# libdl_kernels from a Meson build directory). Budget for a training TU: 15 s and 1.5 GB on this
# 2-core machine.
#   bench/compile_time.sh [build-dir]     (default: build; compiled mode is timed when the build
#                                          directory has libdl_kernels.so, and each program is linked)
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" 2>/dev/null && pwd)
flags="-std=c++20 -O2 -march=native -fopenmp -I$here/../include -DDL_HAVE_ZLIB=1 -DDL_HAVE_LIBZIP=1 -DDL_USE_CBLAS=1
  -DDL_HAVE_LAPACKE=1 -I/usr/include/x86_64-linux-gnu/openblas-pthread"
libs="-lopenblas -llapacke -llapack -lzip -lz"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for f in "$here"/compile_time/*.cpp; do
  name=$(basename "$f" .cpp)
  /usr/bin/time -f "$name, header-only: %e s wall, %U s user, %M KB peak" g++ $flags -c "$f" -o "$out/$name.o"
  if [ -n "$build" ] && [ -e "$build/libdl_kernels.so" ]; then
    /usr/bin/time -f "$name, compiled mode: %e s wall, %U s user, %M KB peak" \
      g++ $flags -DDL_COMPILED_KERNELS=1 -c "$f" -o "$out/$name.o"
    g++ -fopenmp "$out/$name.o" -o "$out/$name" -L"$build" -ldl_kernels -Wl,-rpath,"$build" $libs ||
      { echo "$name: compiled mode does not link"; exit 1; }
  fi
done
