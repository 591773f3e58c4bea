#!/usr/bin/env bash
# Runs on the lent GPU machine, from the repository root: the GPU tests, then the benchmark side by
# side with the machine's PyTorch. The bundle comes from tools/gpu_bundle.sh.
#   tools/gpu_run.sh gpu-bundle [--quick]
set -u
bundle=${1:-gpu-bundle}
shift || true
sp=$(python3 -c 'import site; print(site.getsitepackages()[0])')
export LD_LIBRARY_PATH="$PWD/$bundle/lib:$(ls -d "$sp"/nvidia/*/lib 2>/dev/null | tr '\n' ':')${LD_LIBRARY_PATH:-}"
nvidia-smi -L || true
echo "== test_cuda"
"$bundle/test_cuda"
echo "test_cuda rc=$?"
if [ -x "$bundle/bench_cuda" ]; then
  echo "== bench/cuda.py"
  python3 bench/cuda.py "$bundle/bench_cuda" "$@"
  echo "bench rc=$?"
fi
