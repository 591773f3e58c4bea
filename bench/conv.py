#!/usr/bin/python3
"""PyTorch side of bench/conv.cpp: the same layers, the same output format (name, value, unit); the
ResNet-18 CIFAR shapes pass by pass (torch.nn.grad.conv2d_input / conv2d_weight for the gradients).

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

# ResNet-18 on 32x32 inputs, batch 64: forward, input gradient, weight gradient in GFLOP/s.
resnet18_cifar = [("stem_3_64_32", 3, 64, 32, 3, 1), ("c64_64_32", 64, 64, 32, 3, 1), ("c64_128_32_s2", 64, 128, 32, 3, 2),
                  ("c128_128_16", 128, 128, 16, 3, 1), ("sc64_128_32_s2", 64, 128, 32, 1, 2), ("c128_256_16_s2", 128, 256, 16, 3, 2),
                  ("c256_256_8", 256, 256, 8, 3, 1), ("sc128_256_16_s2", 128, 256, 16, 1, 2), ("c256_512_8_s2", 256, 512, 8, 3, 2),
                  ("c512_512_4", 512, 512, 4, 3, 1), ("sc256_512_8_s2", 256, 512, 8, 1, 2)]
with torch.no_grad():
    for name, c, o, h, k, s in resnet18_cifar:
        xr, wr = torch.randn(64, c, h, h), torch.randn(o, c, k, k)
        pad = k // 2
        oh = (h + 2 * pad - k) // s + 1
        gyr = torch.randn(64, o, oh, oh)
        flops = 2.0 * 64 * o * oh * oh * c * k * k
        report(f"resnet18_{name}_fwd/torch", flops / median_seconds(lambda: F.conv2d(xr, wr, None, s, pad)) * 1e-9, "GFLOP/s")
        report(f"resnet18_{name}_input/torch",
               flops / median_seconds(lambda: torch.nn.grad.conv2d_input(xr.shape, wr, gyr, s, pad)) * 1e-9, "GFLOP/s")
        report(f"resnet18_{name}_weight/torch",
               flops / median_seconds(lambda: torch.nn.grad.conv2d_weight(xr, wr.shape, gyr, s, pad)) * 1e-9, "GFLOP/s")
