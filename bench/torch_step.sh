#!/usr/bin/env bash
# The MLP and LeNet-5 training steps of bench/torch_step.cpp, one libtorch-style source built against
# dl/torch.hpp (with the native-dl twins) and against Debian's libtorch 1.13 (libtorch-dev), run in
# interleaved rounds on 2 threads; prints the medians (ms per step) side by side. Needs libtorch-dev.
#   bash bench/torch_step.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
blas=/usr/include/x86_64-linux-gnu/openblas-pthread
g++ -std=c++20 -O3 -march=native -fopenmp -Iinclude -Ibench/torch_shim -I$blas -DDL_USE_CBLAS=1 -DDL_HAVE_LAPACKE=1 \
  -DDL_HAVE_ZLIB=1 -DDL_BENCH_NATIVE -Wno-maybe-uninitialized bench/torch_step.cpp -o "$work/dl" \
  -L/usr/lib/x86_64-linux-gnu/openblas-pthread -lopenblas -llapacke -lz
g++ -std=c++17 -O3 -march=native bench/torch_step.cpp -o "$work/libtorch" -I/usr/include/torch/csrc/api/include \
  -ltorch -ltorch_cpu -lc10
# Both on 2 OpenMP threads with OpenBLAS single-threaded: libtorch's best setup here (with OpenBLAS's own
# pthread pool as well, its threads and libtorch's fight over the 2 cores: 6.2 ms per MLP step, not 1.6).
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1
for ((r = 0; r < rounds; ++r)); do
  "$work/dl" 1 | sed 's/^/dl_/'
  "$work/libtorch" 1 | sed 's/^/libtorch_/'
done > "$work/out"
python3 - "$work/out" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, ms = line.split()
    runs.setdefault(name, []).append(float(ms))
m = {k: statistics.median(v) for k, v in runs.items()}
print(f"ms per training step, medians of {len(runs['dl_mlp'])} interleaved rounds, 2 threads")
print(f"{'workload':<34}{'native dl':>11}{'dl/torch.hpp':>14}{'libtorch':>11}{'torch.hpp cost':>16}{'vs libtorch':>13}")
for w, label in (("mlp", "MLP 784-256-128-10, batch 128"), ("lenet", "LeNet-5, batch 64")):
    n, t, l = m[f"dl_native_{w}"], m[f"dl_{w}"], m[f"libtorch_{w}"]
    print(f"{label:<34}{n:>11.3f}{t:>14.3f}{l:>11.3f}{100 * (t / n - 1):>+15.1f}%{l / t:>12.2f}x")
PY
