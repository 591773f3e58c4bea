#!/usr/bin/python3
"""PyTorch side of bench/cross_entropy.cpp: prints the median time (microseconds per call) of one
cross-entropy workload, forward only and forward + backward, one number per line.
usage: cross_entropy.py N C SPATIAL SMOOTHING ROUNDS   (SPATIAL 0: logits [N, C], else [N, C, S, S])"""
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
n, c, s, smoothing, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
torch.manual_seed(0)
shape = [n, c, s, s] if s else [n, c]
x = torch.randn(*shape, requires_grad=True)
t = torch.randint(0, c, [n, s, s] if s else [n])


def fwd():
    with torch.no_grad():
        F.cross_entropy(x, t, label_smoothing=smoothing)


def fwd_bwd():
    x.grad = None
    F.cross_entropy(x, t, label_smoothing=smoothing).backward()


def per_call_us(f, calls):
    """Median over 15 samples of the mean time of `calls` consecutive calls, after a warm-up."""
    for _ in range(calls):
        f()
    samples = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    samples.sort()
    return samples[len(samples) // 2]


calls = max(1, int(2e5 // max(1, x.numel())))
for _ in range(rounds):
    print(per_call_us(fwd, calls), flush=True)
    print(per_call_us(fwd_bwd, calls), flush=True)
