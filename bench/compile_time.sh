#!/bin/bash
# Times the build of user translation units at -O2 with the flags a dl user gets from pkg-config /
# Meson, and prints wall time, CPU time (user + sys) and the compiler's peak memory:
#   - bench/compile_time/tensor_fused.cpp (dl/tensor.hpp, one fused expression, a matmul, a sum),
#     tensors_matmul.cpp (dl/dl.hpp and one product), mlp_train.cpp and lenet_train.cpp (training
#     loops), and the README's program samples/fashion_mnist_cnn*.cpp (each of its files);
#   - each three ways: header-only, compiled mode (DL_COMPILED_KERNELS, linked against
#     libdl_kernels from a Meson build directory) and compiled mode with a precompiled dl/dl.hpp;
#   - the parse time of dl/tensor.hpp and dl/dl.hpp alone (-fsyntax-only);
#   - lenet_train_libtorch.cpp, the libtorch twin of lenet_train.cpp, when Debian's libtorch-dev
#     is installed.
# Budget on a quiet 2-core machine: a training TU 15 s in compiled mode, 30 s header-only, 1.5 GB.
#
#   bench/compile_time.sh [build-dir]     (default: build; compiled mode is timed when the build
#                                          directory has libdl_kernels.so, and each program is linked)
# DL_SRC=<checkout> times another checkout's headers and programs with this script (before/after);
# ONLY="name ..." limits the programs; MODES="header-only compiled pch" limits the modes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${DL_SRC:-$here/..}
src=$(cd "$src" && pwd)
build=$(cd "${1:-$src/build}" 2>/dev/null && pwd)
modes=${MODES:-header-only compiled pch}
flags="-std=c++20 -O2 -march=native -fopenmp -I$src/include -DDL_HAVE_ZLIB=1 -DDL_HAVE_LIBZIP=1 -DDL_USE_CBLAS=1
  -DDL_HAVE_LAPACKE=1 -I/usr/include/x86_64-linux-gnu/openblas-pthread -Wno-maybe-uninitialized"
libs="-lopenblas -llapacke -llapack -lzip -lz"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fmt="%e s wall, %U+%S s cpu, %M KB peak"
have_lib=false
if [ -n "$build" ] && ls "$build"/libdl_kernels.so* >/dev/null 2>&1; then have_lib=true; fi

# Programs: name -> source files (a program of several files is timed file by file).
declare -A programs
for f in "$src"/bench/compile_time/*.cpp; do
  case $f in *_libtorch.cpp) continue ;; esac
  programs[$(basename "$f" .cpp)]=$f
done
cnn=$(ls "$src"/samples/fashion_mnist_cnn*.cpp 2>/dev/null | tr '\n' ' ')
[ -n "$cnn" ] && programs[fashion_mnist_cnn]=$cnn
extra=$(pkg-config --cflags CLI11 2>/dev/null)

echo "g++ $(g++ -dumpfullversion), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
for h in tensor dl; do
  echo "#include <dl/$h.hpp>" > "$out/parse_$h.cpp"
  /usr/bin/time -f "parse dl/$h.hpp: $fmt" g++ $flags -fsyntax-only "$out/parse_$h.cpp"
done

for mode in $modes; do
  mflags=""
  case $mode in
    compiled | pch)
      $have_lib || { echo "$mode: no libdl_kernels in '${1:-$src/build}' (meson setup + ninja first)"; continue; }
      mflags="-DDL_COMPILED_KERNELS=1" ;;
  esac
  if [ "$mode" = pch ]; then
    # What a user's build system does with cpp_pch / target_precompile_headers: dl/dl.hpp once.
    mkdir -p "$out/pch"
    printf '#include <dl/dl.hpp>\n' > "$out/pch/dl_pch.hpp"
    /usr/bin/time -f "pch: dl/dl.hpp precompiled once: $fmt" \
      g++ $flags $mflags -x c++-header "$out/pch/dl_pch.hpp" -o "$out/pch/dl_pch.hpp.gch" || continue
    mflags="$mflags -include $out/pch/dl_pch.hpp"
  fi
  for name in $(echo "${!programs[@]}" | tr ' ' '\n' | sort); do
    if [ -n "${ONLY:-}" ] && ! [[ " $ONLY " == *" $name "* ]]; then continue; fi
    objs=""
    for f in ${programs[$name]}; do
      o="$out/$(basename "$f" .cpp).o"
      /usr/bin/time -f "$name $(basename "$f"), $mode: $fmt" g++ $flags $mflags $extra -c "$f" -o "$o" || exit 1
      objs="$objs $o"
    done
    if [ "$mode" != header-only ]; then
      g++ -fopenmp $objs -o "$out/$name" "$(ls "$build"/libdl_kernels.so* | head -1)" -Wl,-rpath,"$build" $libs ||
        { echo "$name: compiled mode does not link"; exit 1; }
    fi
  done
done

if [ -e /usr/include/torch/csrc/api/include/torch/torch.h ] && [ -z "${ONLY:-}" ]; then
  /usr/bin/time -f "lenet_train_libtorch (libtorch $(dpkg-query -W -f '${Version}' libtorch-dev 2>/dev/null | cut -d+ -f1)): $fmt" \
    g++ -std=c++17 -O2 -I/usr/include/torch/csrc/api/include -c "$here/compile_time/lenet_train_libtorch.cpp" \
    -o "$out/lenet_train_libtorch.o"
fi
