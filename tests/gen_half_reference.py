"""Writes tests/data/half_ref.bin: PyTorch's float16 and bfloat16 values for tests/half.cpp.
Run with Debian's PyTorch: /usr/bin/python3 tests/gen_half_reference.py

- conv/*: float32 values (rounding ties, subnormals, overflow, NaN, infinities, random ones) and the
  bit patterns torch's .half() and .bfloat16() give them (round to nearest even).
- f16/*, bf16/*: elementwise results, reductions and products. Each op is computed as PyTorch's
  kernels define it for 16-bit floats: the operands widened to float, the op in float, the result
  rounded back once per op (what eager mode does on the GPU and in current CPU kernels; Debian's
  1.13 lacks some 16-bit CPU kernels, so the widening is written out here). Reductions and matrix
  products accumulate in float and round once.
"""
import torch

from refbin import Writer, det

w = Writer("half_ref.bin")

# ---- conversions
special = [0.0, -0.0, 1.0, -1.0, 0.5, 65504.0, 65519.996, 65520.0, -65520.0, 1e5, 3.4e38, 1e-8,
           2.0**-24, 2.0**-25, 2.0**-25 * 1.0000001, 3 * 2.0**-26, 2.0**-14, 2.0**-14 - 2.0**-24, 2.0**-15 + 2.0**-25,
           1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-11 + 2.0**-20, 2048 + 1, 2048 + 3, 1 + 2.0**-8, 1 + 3 * 2.0**-8,
           1 + 2.0**-8 + 2.0**-20, 0.1, -0.3, 3.14159265, 1e-40, -1e-45, 1.17549435e-38,
           float("inf"), float("-inf"), float("nan")]
g = torch.Generator().manual_seed(7)
rnd = torch.cat([torch.randn(200, generator=g) * 10.0 ** torch.randint(-9, 6, (200,), generator=g).float(),
                 torch.rand(100, generator=g) * 2.0**-14])
x = torch.cat([torch.tensor(special, dtype=torch.float32), rnd.float()])
w.put("conv/inputs", x.double())
w.put("conv/f16_bits", x.half().view(torch.int16).to(torch.int64) & 0xFFFF)
w.put("conv/bf16_bits", x.bfloat16().view(torch.int16).to(torch.int64) & 0xFFFF)


def op(dt, f, *xs):
    """f on the operands widened to float, rounded back to dt."""
    return f(*[t.float() for t in xs]).to(dt)


for dt, k in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
    a, b, c, d = (det([3, 7], s, dt) for s in (1, 2, 3, 4))
    # sigmoid(a * b + c) * d, one rounding per op (eager)
    ab = op(dt, torch.mul, a, b)
    abc = op(dt, torch.add, ab, c)
    sg = op(dt, torch.sigmoid, abc)
    w.put(f"{k}/expr", op(dt, torch.mul, sg, d))
    w.put(f"{k}/exp", op(dt, torch.exp, a))
    w.put(f"{k}/div", op(dt, torch.div, a, b))
    w.put(f"{k}/tanh", op(dt, torch.tanh, b))
    w.put(f"{k}/add_scalar", op(dt, lambda t: t + 2.5, a))
    # reductions: float accumulation, one rounding
    big = det([4096], 5, dt)
    w.put(f"{k}/sum_all", big.float().sum().to(dt))
    m = det([8, 512], 6, dt)
    w.put(f"{k}/mean_dim1", m.float().mean(1).to(dt))
    w.put(f"{k}/sum_dim0", m.float().sum(0).to(dt))
    w.put(f"{k}/amax_dim1", m.amax(1) if dt == torch.bfloat16 else m.float().amax(1).to(dt))
    # products: float accumulation
    p, q = det([5, 64], 7, dt), det([64, 3], 8, dt)
    w.put(f"{k}/mm", (p.float() @ q.float()).to(dt))
    # mixed promotion: dt with float32 gives float32
    f32 = det([3, 7], 9, torch.float32)
    w.put(f"{k}/mixed", a.float() + f32)
    # gradient of (x * x * det999).sum(): 2 * x * det999, each product rounded
    x = det([3, 7], 10, dt)
    wt = det([3, 7], 999, dt)
    gx = op(dt, torch.mul, op(dt, torch.mul, wt, x), x.new_full(x.shape, 2.0))
    w.put(f"{k}/grad_sq", gx)

w.save()
