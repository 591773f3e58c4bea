#!/usr/bin/python3
"""PyTorch side of bench/batch_norm.cpp: prints the median time (ms) of one workload.
usage: batch_norm.py fwd|fwdbwd reps N C [H W]   (train-mode F.batch_norm with weight, bias and
running statistics; fwdbwd also backpropagates a fixed output gradient to input, weight and bias)"""
import sys

import torch
import torch.nn.functional as F

from bench_common import median_ms

torch.set_num_threads(2)
what, reps = sys.argv[1], int(sys.argv[2])
shape = [int(s) for s in sys.argv[3:]]
C = shape[1]
torch.manual_seed(0)
x = torch.randn(shape, requires_grad=True)
w = torch.rand(C, requires_grad=True)
b = torch.randn(C, requires_grad=True)
rm, rv = torch.zeros(C), torch.ones(C)
gy = torch.randn(shape)


def fwd():
    with torch.no_grad():
        F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5)


def fwdbwd():
    x.grad = w.grad = b.grad = None
    F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5).backward(gy)


print(median_ms(fwd if what == "fwd" else fwdbwd, reps))
