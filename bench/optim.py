#!/usr/bin/python3
"""PyTorch side of bench/optim.cpp: prints, per round, the median time (ms) of one Adam step and one
SGD-with-momentum step over the same 1.1M parameters (PyTorch's default implementation, 2 threads).
usage: optim.py ROUNDS"""
import sys
import time

import torch

torch.set_num_threads(2)
torch.manual_seed(0)
shapes = [(256, 784), (256,), (128, 256), (128,), (10, 128), (10,), (865, 1000), (865,)]


def make():
    ps = [torch.randn(*s, requires_grad=True) for s in shapes]
    for p in ps:
        p.grad = torch.randn(p.shape)
    return ps


adam = torch.optim.Adam(make(), lr=1e-4)
sgd = torch.optim.SGD(make(), lr=1e-4, momentum=0.9)


def step_ms(f, calls=20):
    for _ in range(calls):
        f()
    samples = []
    for _ in range(21):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        samples.append((time.perf_counter() - t0) / calls * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


for _ in range(int(sys.argv[1])):
    print(step_ms(adam.step), step_ms(sgd.step), flush=True)
