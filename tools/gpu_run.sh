#!/usr/bin/env bash
# Runs on the lent GPU machine, from the repository root: the GPU tests, then the benchmark side by
# side with the machine's PyTorch. The bundle comes from tools/gpu_bundle.sh.
#   tools/gpu_run.sh gpu-bundle [--quick]
set -u
bundle=${1:-gpu-bundle}
shift || true
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])')
# The library path of dl's binaries only (PyTorch keeps the machine's own): the bundled libraries,
# then the CUDA libraries PyTorch's pip packages bring.
export DL_BUNDLE_LIBPATH="$PWD/$bundle/lib:$(ls -d "$sp"/nvidia/*/lib "$sp"/nvidia/*/*/lib 2>/dev/null | tr '\n' ':')${LD_LIBRARY_PATH:-}"
nvidia-smi -L || true
echo "== test_cuda"
LD_LIBRARY_PATH="$DL_BUNDLE_LIBPATH" "$bundle/test_cuda"
echo "test_cuda rc=$?"
if [ -x "$bundle/bench_cuda" ]; then
  echo "== bench/cuda.py"
  python3 bench/cuda.py "$bundle/bench_cuda" "$@"
  echo "bench rc=$?"
fi
