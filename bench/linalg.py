#!/usr/bin/python3
"""PyTorch side of bench/linalg.cpp: prints, per round, one line of median times (ms) of
torch.linalg.solve (A [n, n], B [n, n]), svd (full_matrices=False), cholesky, qr (reduced) and
eigh on n x n float32 matrices, 2 threads (the inputs are built as bench/linalg.cpp builds its own).
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
reps = 7 if n <= 512 else 3

for _ in range(rounds):
    print(median_ms(lambda: torch.linalg.solve(A, B), reps), median_ms(lambda: torch.linalg.svd(A, full_matrices=False), reps),
          median_ms(lambda: torch.linalg.cholesky(S), reps), median_ms(lambda: torch.linalg.qr(A), reps),
          median_ms(lambda: torch.linalg.eigh(S), reps), flush=True)
