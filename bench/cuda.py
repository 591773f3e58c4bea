#!/usr/bin/env python3
"""GPU benchmark, side by side (issue 12): runs the workloads of bench/cuda.cu in PyTorch, eager and
torch.compile, then runs dl's binary on the same GPU and prints one table with the ratios.
usage: cuda.py PATH/TO/bench_cuda [--quick]
Medians over repetitions, timed with CUDA events, as bench/cuda.cu does."""
import os
import subprocess
import sys
import time

import torch

quick = "--quick" in sys.argv
binary = sys.argv[1]
dev = torch.device("cuda:0")
big = 1 << 24 if quick else 1 << 28


def median_ms(f, reps):
    f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


torch_figs = {}
x = torch.randn(big, device=dev)
y = torch.empty_like(x)
torch_figs["copy_kernel_TBps"] = 2 * big * 4 / median_ms(lambda: y.copy_(x), 20) / 1e9
del x, y


def fused(a, b, c, d):
    return torch.sigmoid(a * b + c) * d


fused_c = torch.compile(fused)
for n in (big, 1 << 24):
    a, b, c, d = (torch.randn(n, device=dev) for _ in range(4))
    k = n.bit_length() - 1
    torch_figs[f"fused_forward_2^{k}_ms"] = (median_ms(lambda: fused(a, b, c, d), 20),
                                            median_ms(lambda: fused_c(a, b, c, d), 20))
    del a, b, c, d

for n in (big, 1 << 24):
    a, b, c, d = (torch.randn(n, device=dev, requires_grad=True) for _ in range(4))
    g = torch.ones(n, device=dev)
    k = n.bit_length() - 1

    def step(f):
        for t in (a, b, c, d):
            t.grad = None
        f(a, b, c, d).backward(g)

    torch_figs[f"forward_backward_2^{k}_ms"] = (median_ms(lambda: step(fused), 10), median_ms(lambda: step(fused_c), 10))
    del a, b, c, d, g

xs = torch.randn(16, device=dev)
for _ in range(100):
    xs = xs * 1.0001
torch.cuda.synchronize()
per_op = []
for _ in range(7):
    t0 = time.perf_counter()
    for _ in range(1000):
        xs = xs * 1.0001
    torch.cuda.synchronize()
    per_op.append((time.perf_counter() - t0) / 1000 * 1e6)
per_op.sort()
torch_figs["tiny_op_us"] = per_op[len(per_op) // 2]

x = torch.randn(big, device=dev)
torch_figs["sum_all_TBps"] = big * 4 / median_ms(lambda: x.sum(), 20) / 1e9
del x
side = 4096 if quick else 16384
m = torch.randn(side, side, device=dev)
torch_figs["sum_rows_TBps"] = side * side * 4 / median_ms(lambda: m.sum(1), 20) / 1e9
del m

rows = 4096 if quick else 16384
m = torch.randn(rows, 4096, device=dev)
idx = torch.randint(0, 4096, (rows, 1024), device=dev)
sel = torch.randint(0, rows, (rows // 2,), device=dev)
torch_figs["gather_ms"] = median_ms(lambda: m.gather(1, idx), 20)
torch_figs["index_select_rows_ms"] = median_ms(lambda: m.index_select(0, sel), 20)
torch_figs["argmax_rows_ms"] = median_ms(lambda: m.argmax(1), 20)
del m, idx, sel

n = 2048 if quick else 8192
a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch_figs["gemm_tf32_TFLOPs" if tf32 else "gemm_fp32_TFLOPs"] = 2 * n**3 / median_ms(lambda: a @ b, 10) / 1e9
torch.backends.cuda.matmul.allow_tf32 = False
del a, b
torch.cuda.empty_cache()

env = dict(os.environ)
if "DL_BUNDLE_LIBPATH" in env:  # set by tools/gpu_run.sh: the libraries dl's binary was built with
    env["LD_LIBRARY_PATH"] = env["DL_BUNDLE_LIBPATH"]
out = subprocess.run([binary] + (["--quick"] if quick else []), capture_output=True, text=True, check=True, env=env).stdout
dl_figs = {}
for line in out.splitlines():
    if line.startswith("#"):
        print(line)
        continue
    name, value, _unit = line.split()
    dl_figs[name] = float(value)

print(f"torch {torch.__version__}")
print(f"{'workload':34} {'dl':>10} {'torch eager':>12} {'torch.compile':>14} {'eager/dl':>9} {'compile/dl':>11}")
lower_is_better = lambda name: name.endswith("_ms") or name.endswith("_us")
for name, v in dl_figs.items():
    t = torch_figs.get(name)
    if t is None:
        print(f"{name:34} {v:10.4g}")
        continue
    eager, comp = (t if isinstance(t, tuple) else (t, None))
    # Ratios > 1 mean dl is faster.
    r = (lambda o: o / v) if lower_is_better(name) else (lambda o: v / o)
    comp_s = f"{comp:14.4g}" if comp is not None else f"{'':14}"
    comp_r = f"{r(comp):11.2f}" if comp is not None else f"{'':11}"
    print(f"{name:34} {v:10.4g} {eager:12.4g} {comp_s} {r(eager):9.2f} {comp_r}")
