#!/bin/sh
# Times the build of bench/compile_time/*.cpp — three user translation units: tensors only
# (tensors_matmul), an MLP training loop (mlp_train) and a CNN training loop (lenet_train) — at -O2
# with the flags a dl user gets from pkg-config / Meson, and prints wall time, CPU time and the
# compiler's peak memory. Budget for a training TU: 15 s and 1.5 GB on this 2-core machine.
#   bench/compile_time.sh [extra compiler flags]     e.g. -DDL_COMPILED_KERNELS (with -ldl_kernels to link)
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/compile_time/*.cpp; do
  /usr/bin/time -f "$(basename "$f" .cpp): %e s wall, %U s user, %M KB peak" \
    g++ -std=c++20 -O2 -march=native -fopenmp -I"$here/../include" -DDL_HAVE_ZLIB=1 -DDL_HAVE_LIBZIP=1 -DDL_USE_CBLAS=1 -DDL_HAVE_LAPACKE=1 \
    -I/usr/include/x86_64-linux-gnu/openblas-pthread "$@" \
    -c "$f" -o /dev/null
done
