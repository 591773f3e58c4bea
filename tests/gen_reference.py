#!/usr/bin/python3
"""Reference values from PyTorch for dl's tests (tensor ops, reductions, indexing, printing,
gradients). Run with Debian's python3-torch:  /usr/bin/python3 tests/gen_reference.py
Writes tests/data/reference.txt (one tensor per line: name dtype shape | values) and
tests/data/print.txt (repr strings). The test suite reads these files and never needs PyTorch."""
import math
import os

import torch

torch.manual_seed(0)
HERE = os.path.dirname(os.path.abspath(__file__))
records = []
DT = {torch.float32: "float32", torch.float64: "float64", torch.int32: "int32", torch.int64: "int64",
      torch.uint8: "uint8", torch.bool: "bool"}


def put(name, t):
    t = t.detach()
    vals = t.reshape(-1).tolist()
    if t.dtype.is_floating_point:
        s = " ".join(repr(float(v)) for v in vals)
    else:
        s = " ".join(str(int(v)) for v in vals)
    records.append(f"{name} {DT[t.dtype]} {t.dim()} {' '.join(str(d) for d in t.shape)} | {s}")


# ---------------------------------------------------------------- elementwise
x = torch.randn(3, 5)
x[0, 0] = 0.5
x[0, 1] = 1.5
x[0, 2] = -2.5
x[0, 3] = 0.0
pos = torch.rand(3, 5) * 3 + 0.1
unit = torch.rand(3, 5) * 1.8 - 0.9
put("x", x)
put("pos", pos)
put("unit", unit)
unary = {
    "neg": lambda: -x, "abs": lambda: x.abs(), "exp": lambda: x.exp(), "expm1": lambda: x.expm1(),
    "log": lambda: pos.log(), "log1p": lambda: pos.log1p(), "log2": lambda: pos.log2(), "log10": lambda: pos.log10(),
    "sqrt": lambda: pos.sqrt(), "rsqrt": lambda: pos.rsqrt(), "sin": lambda: x.sin(), "cos": lambda: x.cos(),
    "tan": lambda: unit.tan(), "asin": lambda: unit.asin(), "acos": lambda: unit.acos(), "atan": lambda: x.atan(),
    "sinh": lambda: x.sinh(), "cosh": lambda: x.cosh(), "tanh": lambda: x.tanh(), "erf": lambda: x.erf(),
    "sigmoid": lambda: x.sigmoid(), "relu": lambda: x.relu(), "reciprocal": lambda: pos.reciprocal(),
    "sign": lambda: x.sign(), "floor": lambda: x.floor(), "ceil": lambda: x.ceil(), "round": lambda: x.round(),
    "trunc": lambda: x.trunc(), "square": lambda: x.square(), "pow2": lambda: x.pow(2), "pow3": lambda: x.pow(3), "pow0": lambda: x.pow(0),
    "pow2_5": lambda: pos.pow(2.5), "pow_m1_5": lambda: pos.pow(-1.5), "pow0_5": lambda: pos.pow(0.5),
    "clamp": lambda: x.clamp(-0.5, 0.5), "clamp_min": lambda: x.clamp(min=0.2), "clamp_max": lambda: x.clamp(max=-0.2),
}
for k, f in unary.items():
    put("unary." + k, f())

a = torch.randn(2, 3, 4)
b = torch.randn(3, 1)
c = torch.randn(4)
put("a", a)
put("b", b)
put("c", c)
put("bin.add", a + b)
put("bin.sub", a - c)
put("bin.mul", a * b)
put("bin.div", a / c)
put("bin.chain", torch.sigmoid(a * b + c) * 2.0)
put("bin.maximum", torch.maximum(a, c))
put("bin.minimum", torch.minimum(a, b))
put("bin.pow", pos.pow(torch.randn(5) * 0 + torch.tensor([0.5, 1.0, 2.0, -1.0, 3.0])))
put("bin.remainder", torch.remainder(a * 5, b))
put("bin.lerp", torch.lerp(a, c.expand(2, 3, 4), torch.full((2, 3, 4), 0.3)))
put("bin.lerp_hi", torch.lerp(a, c.expand(2, 3, 4), 0.75))
put("bin.where", torch.where(a > 0, a, b * 10))
put("bin.gt", a > b)
put("bin.le", a <= c)
put("bin.eq", a.round() == b.round())
put("bin.scalar", 2.0 - a / 4.0 + 1.0)
put("bin.t_plus", x.t() + x.t().exp())
put("bin.strided", x[:, ::2] * 3)
nanv = torch.tensor([1.0, float("nan"), -2.0, float("inf")])
put("nan.v", nanv)
put("nan.maximum", torch.maximum(nanv, torch.tensor([0.0, 0.0, float("nan"), 1.0])))
put("nan.relu", nanv.relu())
put("nan.clamp", nanv.clamp(-1, 1))
put("nan.sign", nanv.sign())
# integers
ia = torch.tensor([[7, -3, 0], [5, 9, -8]], dtype=torch.int64)
ib = torch.tensor([2, -4, 3], dtype=torch.int64)
put("ia", ia)
put("ib", ib)
put("int.add", ia + ib)
put("int.mul", ia * ib)
put("int.div", ia / ib)
put("int.remainder", torch.remainder(ia, ib))
put("int.pow", ia.pow(2))
put("int.abs", ia.abs())
put("int.plus_float", ia + 0.5)
put("int.relu", ia.relu())
put("int.clamp", ia.clamp(-2, 5))
u8 = torch.tensor([200, 100, 5], dtype=torch.uint8)
put("u8", u8)
put("u8.add", u8 + torch.tensor([100, 200, 5], dtype=torch.uint8))
i32 = torch.tensor([1, 2, 3], dtype=torch.int32)
put("i32", i32)
put("i32.plus_i64", i32 + torch.tensor([10, 20, 30]))
put("i32.times_float", i32 * torch.tensor([0.5, 0.25, 2.0]))
ma = torch.tensor([True, False, True, False])
mb = torch.tensor([True, True, False, False])
put("ma", ma)
put("mb", mb)
put("bool.and", ma & mb)
put("bool.or", ma | mb)
put("bool.xor", ma ^ mb)
put("bool.not", ~ma)
put("bool.add", ma + mb)

# ---------------------------------------------------------------- reductions
r = torch.randn(3, 4, 5)
put("r", r)
put("red.sum", r.sum())
put("red.sum0", r.sum(0))
put("red.sum1k", r.sum(1, keepdim=True))
put("red.sum2", r.sum(2))
put("red.sum02", r.sum((0, 2)))
put("red.mean", r.mean())
put("red.mean12k", r.mean((1, 2), keepdim=True))
put("red.prod1", r.prod(1))
put("red.prod", (r[0] / 2 + 1).prod())
put("red.max", r.max())
put("red.min", r.min())
v, i = r.max(1)
put("red.max1.values", v)
put("red.max1.indices", i)
v, i = r.min(2, keepdim=True)
put("red.min2k.values", v)
put("red.min2k.indices", i)
put("red.amax02", r.amax((0, 2)))
put("red.amin1k", r.amin(1, keepdim=True))
put("red.argmax", r.argmax())
put("red.argmax0", r.argmax(0))
put("red.argmin2k", r.argmin(2, keepdim=True))
put("red.var", r.var())
put("red.var1", r.var(1))
put("red.var_biased02k", r.var((0, 2), unbiased=False, keepdim=True))
put("red.std", r.std())
put("red.std2", r.std(2))
put("red.norm", r.norm())
put("red.norm1_1", r.norm(1, dim=1))
put("red.norm_inf2", r.norm(float("inf"), dim=2))
put("red.norm3_0", r.norm(3, dim=0))
put("red.logsumexp1", r.logsumexp(1))
put("red.logsumexp02k", r.logsumexp((0, 2), keepdim=True))
put("red.all", (r > -3).all())
put("red.any1", (r > 1.5).any(1))
put("red.all2k", (r > -1).all(2, keepdim=True))
put("red.expr_sum1", ((r - 1) ** 2).sum(1))
put("red.t_sum0", r[0].t().sum(0))
ri = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
put("ri", ri)
put("red.int_sum", ri.sum())
put("red.int_sum1", ri.sum(1))
put("red.int_prod0", ri.prod(0))
put("red.int_max", ri.max())
put("red.bool_sum", (ri > 2).sum())
# 37000 elements (more than one 32768-element reduction block), from an exact integer formula the
# C++ test reproduces bit for bit: ((i * 7919) % 1000) / 100 - 5 in float32.
big = ((torch.arange(37000) * 7919) % 1000).float().reshape(1000, 37) / 100 - 5
put("red.big_sum0", big.sum(0))
put("red.big_sum1", big.sum(1))
put("red.big_mean", big.mean())
put("red.nan_max", torch.tensor([1.0, float("nan"), 3.0]).max())

# ---------------------------------------------------------------- views and indexing
w = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
put("w", w)
put("view.permute", w.permute(2, 0, 1).contiguous())
put("view.transpose", w.transpose(0, 2).contiguous())
put("view.narrow", w.narrow(2, 1, 2).contiguous())
put("view.slice", w[:, :, 1::2].contiguous())
put("view.slice_neg", w[:, -2:, :].contiguous())
put("view.select", w.select(1, -1).contiguous())
put("view.unsqueeze", w.unsqueeze(1).contiguous())
put("view.expand", w[:, :1, :].expand(2, 3, 4).contiguous())
put("view.flatten", w.flatten(1))
put("view.tview", w.permute(2, 0, 1).reshape(4, 6))
put("idx.cat1", torch.cat([w, w * 2], 1))
put("idx.cat2", torch.cat([w, w[:, :, :1]], 2))
put("idx.stack2", torch.stack([w, -w], 2))
put("idx.repeat", w[0].repeat(2, 1, 3))
put("idx.chunk1", torch.cat(w.chunk(2, 2), 0))
gi = torch.tensor([[[0, 3], [1, 1], [2, 0]], [[3, 3], [0, 1], [2, 2]]])
put("gi", gi)
put("idx.gather2", torch.gather(w, 2, gi))
put("idx.scatter2", torch.zeros(2, 3, 4).scatter_(2, gi, torch.ones(2, 3, 2) * 7))
put("idx.scatter_add2", torch.zeros(2, 3, 4).scatter_add_(2, gi, torch.arange(12.0).reshape(2, 3, 2)))
si = torch.tensor([2, 0, 2])
put("si", si)
put("idx.index_select1", torch.index_select(w, 1, si))
put("idx.index_add1", w.clone().index_add_(1, si, torch.ones(2, 3, 4), alpha=2))
put("idx.index_copy2", w.clone().index_copy_(2, torch.tensor([3, 0]), torch.full((2, 3, 2), -1.0)))
put("idx.index_fill0", w.clone().index_fill_(0, torch.tensor([1]), 5.0))
ip = w.clone()
ip.index_put_((torch.tensor([0, 1, 1]), torch.tensor([2, 0, 0])), torch.tensor([100.0, 200.0, 300.0]).unsqueeze(1), accumulate=True)
put("idx.index_put_acc", ip)
ip2 = w.clone()
ip2[torch.tensor([1]), torch.tensor([2])] = torch.tensor([-1.0, -2.0, -3.0, -4.0])
put("idx.index_put_rows", ip2)
put("idx.index", w[torch.tensor([1, 0]), torch.tensor([2, 1])])
put("idx.masked_fill", w.masked_fill(w > 10, -1.0))
put("idx.masked_select", torch.masked_select(w, w.remainder(5) == 0))
put("idx.nonzero", torch.nonzero(w.remainder(7) == 0))
pt = w.clone()
pt.put_(torch.tensor([0, 23, 5]), torch.tensor([-5.0, -6.0, -7.0]))
put("idx.put", pt)
pt2 = w.clone()
pt2.put_(torch.tensor([1, 1]), torch.tensor([10.0, 20.0]), accumulate=True)
put("idx.put_acc", pt2)

# ---------------------------------------------------------------- creation
put("create.arange", torch.arange(-3, 10, 3))
put("create.arange_f", torch.arange(0, 1, 0.1))
put("create.linspace", torch.linspace(-1, 2, 7))
put("create.linspace_f64", torch.linspace(0, 1, 11, dtype=torch.float64))
put("create.eye", torch.eye(3, 4))

# ---------------------------------------------------------------- gradients
ga = torch.randn(2, 3, 4, requires_grad=True)
gb = torch.randn(3, 1, requires_grad=True)
gc = torch.randn(4, requires_grad=True)
gd = torch.randn(2, 3, 4, requires_grad=True)
for name, t in (("ga", ga), ("gb", gb), ("gc", gc), ("gd", gd)):
    put(name, t)


def record_grads(tag, loss, named):
    gs = torch.autograd.grad(loss, [t for _, t in named], allow_unused=True)
    for (name, t), g in zip(named, gs):
        put(f"grad.{tag}.{name}", g if g is not None else torch.zeros_like(t))


record_grads("chain", (torch.sigmoid(ga * gb + gc) * gd).sum(), [("a", ga), ("b", gb), ("c", gc), ("d", gd)])
record_grads("mixed", (ga.exp() / (1 + gb.abs()) - gc.tanh().pow(2)).mean(), [("a", ga), ("b", gb), ("c", gc)])
record_grads("where", torch.where(ga > 0, ga * gd, -ga).sum(), [("a", ga), ("d", gd)])
w_ = torch.linspace(-1, 1, 24).reshape(2, 3, 4)
record_grads("var", (ga.var(1) * w_[:, 0, :]).sum(), [("a", ga)])
record_grads("std", (ga.std((0, 2), keepdim=True) * torch.tensor([1.0, 2.0, 3.0]).reshape(1, 3, 1)).sum(), [("a", ga)])
record_grads("norm", ga.norm() + ga.norm(1, dim=2).sum() + ga.norm(3, dim=0).sum(), [("a", ga)])
record_grads("logsumexp", (ga.logsumexp(2) * w_[0, :, :2].t().reshape(2, 3)).sum(), [("a", ga)])
record_grads("max", ga.max(1).values.sum() + ga.amax((0, 2)).sum() * 2 + ga.max(), [("a", ga)])
record_grads("prod", (ga[0] / 4 + 1).prod(1).sum() + (ga[1, 0] / 4 + 1).prod(), [("a", ga)])
record_grads("views", (ga.permute(2, 0, 1)[1:3].reshape(2, 6) * w_.reshape(4, 6)[:2]).sum()
             + (ga.transpose(0, 1)[0] ** 2).sum() + ga.select(2, -1).expand(5, 2, 3).sum(), [("a", ga)])
record_grads("index", (torch.gather(ga, 2, gi) * 3).sum() + torch.index_select(ga, 1, si).pow(2).sum()
             + torch.cat([ga, gd * 2], 1).sum(1).pow(2).sum(), [("a", ga), ("d", gd)])
x2 = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
y2 = (x2.sin() * x2).sum()
(gx,) = torch.autograd.grad(y2, x2, create_graph=True)
(ggx,) = torch.autograd.grad((gx * gx).sum(), x2)
put("gg.x", x2)
put("gg.first", gx)
put("gg.second", ggx)

with open(os.path.join(HERE, "data", "reference.txt"), "w") as f:
    f.write("\n".join(records) + "\n")

# ---------------------------------------------------------------- printing
prints = {
    "p.floats": torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "p.frac": torch.tensor([1.5, -2.25, 0.125]),
    "p.sci_small": torch.tensor([1e-5, 1.0]),
    "p.sci_big": torch.tensor([1e10, 1.0]),
    "p.int_ratio": torch.arange(2000).float(),
    "p.ints": torch.tensor([1, -20, 300]),
    "p.int32": torch.tensor([1, 2], dtype=torch.int32),
    "p.double": torch.tensor([1.5, 2.0], dtype=torch.float64),
    "p.bool": torch.tensor([True, False]),
    "p.scalar": torch.tensor(3.0),
    "p.scalar_frac": torch.tensor(-0.5),
    "p.empty": torch.zeros(0),
    "p.empty2": torch.zeros(0, 3),
    "p.empty_int": torch.zeros(0, dtype=torch.int64),
    "p.nan": torch.tensor([float("nan"), 1.0, float("inf"), -float("inf")]),
    "p.cube": torch.arange(12.0).reshape(2, 3, 2),
    "p.wide": torch.arange(30.0) / 7,
    "p.big": torch.arange(2000.0).reshape(40, 50) / 3,
    "p.u8": torch.tensor([0, 255], dtype=torch.uint8),
    "p.neg_zero": torch.tensor([-0.0, 1.5]),
    "p.requires_grad": torch.tensor([1.0, 2.0], requires_grad=True),
}
with open(os.path.join(HERE, "data", "print.txt"), "w") as f:
    for k, t in prints.items():
        f.write(k + "\n" + repr(t).replace("torch.", "") + "\n%%\n")
print(f"wrote {len(records)} reference tensors and {len(prints)} print cases")
