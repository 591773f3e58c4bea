#!/usr/bin/python3
"""PyTorch side of bench/conv.cpp: the same layers, the same output format (name, value, unit).

Run through bench/run_kernels.py, or directly:
  env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 bench/conv.py
"""
import os

import torch
import torch.nn.functional as F

from bench_common import median_seconds, report

torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))




def layer(name, fwd, params):
    with torch.no_grad():
        report(f"{name}_fwd/torch", 1e3 * median_seconds(fwd, 15), "ms")
    gy = torch.randn_like(fwd())

    def step():
        for p in params:
            p.grad = None
        fwd().backward(gy)

    report(f"{name}_fwdbwd/torch", 1e3 * median_seconds(step, 15), "ms")


batch = 64
x = torch.randn(batch, 1, 28, 28)
w, b = torch.randn(6, 1, 5, 5, requires_grad=True), torch.randn(6, requires_grad=True)
layer("lenet_conv1", lambda: F.conv2d(x, w, b, 1, 2), [w, b])
x2 = torch.randn(batch, 6, 14, 14, requires_grad=True)
w2, b2 = torch.randn(16, 6, 5, 5, requires_grad=True), torch.randn(16, requires_grad=True)
layer("lenet_conv2", lambda: F.conv2d(x2, w2, b2), [x2, w2, b2])
p1 = torch.randn(batch, 6, 28, 28, requires_grad=True)
layer("lenet_pool1", lambda: F.max_pool2d(p1, 2), [p1])
p2 = torch.randn(batch, 16, 10, 10, requires_grad=True)
layer("lenet_pool2", lambda: F.max_pool2d(p2, 2), [p2])
for n in (1, 8):
    x3 = torch.randn(n, 64, 56, 56, requires_grad=True)
    w3 = torch.randn(64, 64, 3, 3, requires_grad=True)
    layer(f"conv3x3_64_56_b{n}", lambda: F.conv2d(x3, w3, None, 1, 1), [x3, w3])
