"""PyTorch side of bench/half.cpp: prints the median time (ms) of one workload on 16-bit tensors,
or "nan" when this PyTorch has no CPU kernel for it.
usage: half.py chain|sum|cast|mm float16|bfloat16 N reps [M]   (M: the product's size, else round(sqrt(N) / 8))"""
import sys
import torch

from bench_common import median_ms

torch.set_num_threads(2)
what, dtype, n, reps = sys.argv[1], getattr(torch, sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.manual_seed(0)
a, b, c, d = (torch.randn(n).to(dtype) for _ in range(4))
f32 = torch.randn(n)
m = int(sys.argv[5]) if len(sys.argv) > 5 else int(round(n ** 0.5 / 8))
p, q = torch.randn(m, m).to(dtype), torch.randn(m, m).to(dtype)
f = {"chain": lambda: torch.sigmoid(a * b + c) * d, "sum": lambda: a.sum(), "cast": lambda: f32.to(dtype),
     "mm": lambda: p @ q}[what]
try:
    print(median_ms(f, reps))
except RuntimeError:  # Debian's PyTorch 1.13 has no CPU float16 kernel for some ops: no figure
    print("nan")
