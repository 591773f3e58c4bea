#!/bin/sh
# Times the build of bench/compile_time/*.cpp (user translation units) at -O2 with the flags a dl
# user gets from pkg-config / meson, and prints wall time, CPU time and peak memory of the compiler.
#   bench/compile_time.sh [extra compiler flags]
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/compile_time/*.cpp; do
  /usr/bin/time -f "$(basename "$f"): %e s wall, %U s user, %M KB peak" \
    g++ -std=c++20 -O2 -march=native -fopenmp -I"$here/../include" -DDL_HAVE_ZLIB=1 -DDL_HAVE_LIBZIP=1 "$@" \
    -c "$f" -o /dev/null
done
