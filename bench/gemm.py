#!/usr/bin/python3
"""PyTorch side of bench/gemm.cpp: the same products, the same output format (name, value, unit).

Run through bench/run_kernels.py, or directly (2 threads, OpenBLAS with its AVX-512 kernels):
  env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 bench/gemm.py
"""
import os

import torch
import torch.nn.functional as F

from bench_common import median_seconds, report

torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
torch.set_grad_enabled(False)




for n in (256, 512, 1024, 2048):
    a, b = torch.randn(n, n), torch.randn(n, n)
    s = median_seconds(lambda: torch.mm(a, b), 5 if n >= 1024 else 9)
    report(f"gemm{n}/torch", 2 * n**3 / s * 1e-9, "GFLOP/s")

batch = 128
for (fin, fout) in ((784, 256), (256, 128), (128, 10)):
    x, w, bias, g = torch.randn(batch, fin), torch.randn(fout, fin), torch.randn(fout), torch.randn(batch, fout)
    flops = 2 * batch * fin * fout
    shape = f"{batch}x{fin}x{fout}"
    s = median_seconds(lambda: torch.relu(F.linear(x, w, bias)))
    report(f"linear_relu_{shape}/torch", flops / s * 1e-9, "GFLOP/s")
    s = median_seconds(lambda: torch.mm(g.t(), x))
    report(f"grad_w_{shape}/torch", flops / s * 1e-9, "GFLOP/s")
    s = median_seconds(lambda: torch.mm(g, w))
    report(f"grad_x_{shape}/torch", flops / s * 1e-9, "GFLOP/s")
