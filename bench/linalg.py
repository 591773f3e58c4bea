#!/usr/bin/python3
"""PyTorch side of bench/linalg.cpp: prints, per round, the median time (ms) of torch.linalg.solve
(A [512, 512], B [512, 512]), torch.linalg.svd (full_matrices=False) and torch.linalg.cholesky on
512 x 512 float32 matrices, 2 threads.
usage: linalg.py N ROUNDS"""
import sys

import torch

from bench_common import median_ms

torch.set_num_threads(2)
n, rounds = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
A = torch.randn(n, n) + n**0.5 * torch.eye(n)
B = torch.randn(n, n)
S = A @ A.mT + torch.eye(n)

for _ in range(rounds):
    print(median_ms(lambda: torch.linalg.solve(A, B), 7), median_ms(lambda: torch.linalg.svd(A, full_matrices=False), 5),
          median_ms(lambda: torch.linalg.cholesky(S), 7), flush=True)
