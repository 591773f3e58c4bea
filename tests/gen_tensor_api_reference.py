#!/usr/bin/python3
"""Writes tests/data/tensor_api_ref.bin, the PyTorch reference values of tests/tensor_api.cpp:
scatter/scatter_add with an index smaller than src, clamp with tensor bounds, the floating-point
classification ops and nan_to_num, the in-place view ops under autograd, and the single-dim
reductions, Tensor.unfold.

Run with Debian's PyTorch (1.13, CPU):  /usr/bin/python3 tests/gen_tensor_api_reference.py
Inputs are built on both sides with det(shape, seed); gradients are those of
loss = (out * det(out.shape, 999)).sum() ("<case>/g<name>").
"""
import math

import torch

from refbin import Writer, det

ref = Writer("tensor_api_ref.bin")
put, grads = ref.put, ref.grads


def leaf(t):
    return t.detach().clone().requires_grad_(True)


# ---------------------------------------------------------------------------- scatter, small index
# PyTorch's own backward fails here ("returned an invalid gradient at index 1 - got [3, 2] but
# expected shape compatible with [3, 4]"): the reference reads the same elements of src through a
# narrowed view, which gives the intended gradient (zero where src is not read).
idx = torch.tensor([[[0, 4], [2, 2], [1, 3]], [[3, 0], [4, 4], [0, 1]]])  # [2, 3, 2], dim 2, into size 5
put("scatter/index", idx)
for dt, tag in ((torch.float64, "d"), (torch.float32, "f")):
    x = leaf(det([2, 4, 5], 1, dt))
    src = leaf(det([2, 5, 4], 2, dt))
    read = src[:, :3, :2]
    out = x.scatter_add(2, idx, read)
    put(f"scatter_add_{tag}/out", out)
    grads(f"scatter_add_{tag}", out, [x, src], ["x", "src"])
    # scatter: duplicate indices in one row would make the value order-dependent; this index has
    # [2, 2] and [4, 4] rows, so use an index without duplicates per row for scatter
    idx2 = torch.tensor([[[0, 4], [2, 1], [1, 3]], [[3, 0], [4, 2], [0, 1]]])
    out = x.scatter(2, idx2, read)
    put(f"scatter_{tag}/out", out)
    grads(f"scatter_{tag}", out, [x, src], ["x", "src"])
put("scatter/index2", idx2)

# ---------------------------------------------------------------------------- clamp, tensor bounds
for dt, tag in ((torch.float64, "d"), (torch.float32, "f")):
    x = det([3, 4, 5], 3, dt) * 2
    x[0, 0, 0] = float("nan")
    x[1, 1, 1] = 0.5  # a tie with lo below
    lo = det([4, 1], 4, dt) - 0.5
    lo[1, 0] = 0.5
    hi = det([5], 5, dt) + 0.5
    hi[2] = -3.0  # hi < lo everywhere in this column: the result is hi
    x, lo, hi = leaf(x), leaf(lo), leaf(hi)
    out = torch.clamp(x, lo, hi)
    put(f"clamp_{tag}/out", out)
    grads(f"clamp_{tag}", out, [x, lo, hi], ["x", "lo", "hi"])
    out = torch.clamp(x, min=lo)
    put(f"clamp_min_{tag}/out", out)
    grads(f"clamp_min_{tag}", out, [x, lo], ["x", "lo"])
    out = torch.clamp(x, max=hi)
    put(f"clamp_max_{tag}/out", out)
    grads(f"clamp_max_{tag}", out, [x, hi], ["x", "hi"])
    out = torch.clamp(x, lo, torch.tensor(0.25, dtype=dt))  # a number for one bound (a 0-d tensor in PyTorch)
    put(f"clamp_mixed_{tag}/out", out)
    grads(f"clamp_mixed_{tag}", out, [x, lo], ["x", "lo"])

# ---------------------------------------------------------------------------- classification, nan_to_num
specials = [0.0, -1.5, float("nan"), float("inf"), -float("inf"), 1e30, -0.0, 3.0]
for dt, tag in ((torch.float64, "d"), (torch.float32, "f")):
    x = leaf(torch.tensor(specials, dtype=dt))
    for fn in ("isnan", "isinf", "isposinf", "isneginf", "isfinite"):
        put(f"{fn}_{tag}", getattr(torch, fn)(x))
    out = torch.nan_to_num(x)
    put(f"nan_to_num_{tag}/out", out)
    grads(f"nan_to_num_{tag}", out, [x], ["x"])
    out = torch.nan_to_num(x, nan=7.0, posinf=100.0, neginf=-200.0)
    put(f"nan_to_num_args_{tag}/out", out)
    grads(f"nan_to_num_args_{tag}", out, [x], ["x"])

# ---------------------------------------------------------------------------- in-place views
a = leaf(det([2, 3], 6))
b = a * 2
b.t_()
b.unsqueeze_(0)
b = b * 1.5
b.squeeze_()
b.transpose_(0, 1)
put("inplace_views/out", b)
grads("inplace_views", b, [a], ["a"])
# on a view of a non-leaf
a2 = leaf(det([2, 3], 7))
base = a2 * 3
w = base.view(3, 2)
w.t_()
out = w * det([2, 3], 8)
put("inplace_view_of_view/out", out)
grads("inplace_view_of_view", out, [a2], ["a"])

# ---------------------------------------------------------------------------- single-dim reductions
x = leaf(det([3, 4, 5], 9))
cases = {
    "amax": x.amax(1, True),
    "amin": x.amin(-1),
    "var": x.var(1, True, False),
    "var_biased": x.var(2, False, True),
    "std": x.std(0, True, False),
    "norm": x.norm(2.0, 1, False),
    "norm1": x.norm(1.0, -1, True),
    "logsumexp": x.logsumexp(1, True),
    "var_dims0": torch.var(x, [0]),
}
for name, out in cases.items():
    put(f"red_{name}/out", out)
    grads(f"red_{name}", out, [x], ["x"])

# ---------------------------------------------------------------------------- Tensor.unfold (a view)
# (dim, size, step) on a [4, 7, 5] input and on its transpose (non-contiguous): values, strides, gradients.
unfold_cases = {"d1_s3_st2": (1, 3, 2), "d1_s2_st3": (1, 2, 3), "dm1_s4_st1": (-1, 4, 1), "d0_s4_st1": (0, 4, 1),
                "d1_s7_st4": (1, 7, 4), "d2_s0_st2": (2, 0, 2)}
for name, (d, size, step) in unfold_cases.items():
    for tr in (False, True):
        x = leaf(det([4, 7, 5], 21))
        src = x.transpose(0, 2) if tr else x
        out = src.unfold(d, size, step)
        tag = f"unfold_{name}{'_t' if tr else ''}"
        put(f"{tag}/out", out)
        put(f"{tag}/shape", torch.tensor(out.shape, dtype=torch.int64))
        put(f"{tag}/strides", torch.tensor(out.stride(), dtype=torch.int64))
        grads(tag, out, [x], ["x"])

ref.save()
