"""PyTorch side of bench/autograd.cpp: prints the median time (ms) of one workload.
usage: autograd.py chain N reps | tiny OPS reps | chain_rss N | rows ROWS reps"""
import resource
import sys

import torch

from bench_common import median_ms

torch.set_num_threads(2)
what = sys.argv[1]


if what in ("chain", "chain_rss"):
    n = int(sys.argv[2])
    torch.manual_seed(0)
    a, b, c, d = (torch.randn(n, requires_grad=True) for _ in range(4))

    def step():
        for t in (a, b, c, d):
            t.grad = None
        y = torch.sigmoid(a * b + c) * d
        y.sum().backward()

    if what == "chain":
        print(median_ms(step, int(sys.argv[3])))
    else:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        step()
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024.0)  # MiB above the inputs
elif what == "tiny":
    ops, reps = int(sys.argv[2]), int(sys.argv[3])
    x = torch.randn(16, requires_grad=True)

    def fwd():
        y = x
        for _ in range(ops):
            y = y * 1.0001 + 0.001
        return y

    def fwd_bwd():
        x.grad = None
        fwd().sum().backward()

    print(median_ms(fwd, reps), flush=True)
    print(median_ms(fwd_bwd, reps))
elif what == "rows":
    rows, reps = int(sys.argv[2]), int(sys.argv[3])
    base_in = torch.randn(rows, 256, requires_grad=True)
    w = torch.randn(256, requires_grad=True)

    def rows_step():
        base_in.grad = None
        w.grad = None
        y = base_in * 1.0
        for i in range(rows):
            y[i].mul_(w)
        y.sum().backward()

    print(median_ms(rows_step, reps))
