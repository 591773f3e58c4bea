"""PyTorch side of bench/elementwise.cpp: prints the median time (ms) of one workload.
usage: elementwise.py chain|sum N reps"""
import sys
import torch

from bench_common import median_ms

torch.set_num_threads(2)
what, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
a, b, c, d = (torch.randn(n) for _ in range(4))


def chain():
    return torch.sigmoid(a * b + c) * d


f = {"chain": chain, "sum": lambda: a.sum()}[what]
print(median_ms(f, reps))
