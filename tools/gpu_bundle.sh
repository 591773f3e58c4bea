#!/usr/bin/env bash
# Builds nothing: packs the GPU executables of a build directory, and the shared libraries they use
# that a bare GPU machine may lack, into one folder to carry to a lent GPU machine (device tool).
# The CUDA libraries themselves (cudart, cuBLAS) are not copied: the GPU machine has them as pip
# packages, put on the library path by tools/gpu_run.sh.
#   tools/gpu_bundle.sh build gpu-bundle      # then run tools/gpu_run.sh gpu-bundle there
set -euo pipefail
build=${1:-build}
out=${2:-gpu-bundle}
rm -rf "$out"
mkdir -p "$out/lib"
for exe in "$build/tests/test_cuda" "$build/bench/bench_cuda"; do
  [ -x "$exe" ] || continue
  cp "$exe" "$out/"
  # Every resolved library except glibc's own and the CUDA toolkit's.
  ldd "$exe" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libcudart*|libcublas*) ;;
      *) cp -nL "$lib" "$out/lib/" ;;
    esac
  done
done
# The folder must not be tracked; the device tool carries it when named in `carry`.
grep -qx "/$out/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/$out/" >> .git/info/exclude; }
du -sh "$out"
