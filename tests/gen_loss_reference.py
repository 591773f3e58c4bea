#!/usr/bin/python3
"""Writes the PyTorch reference values of two test areas:
  tests/data/loss_ref.bin             for tests/loss.cpp (softmax, log_softmax and the losses),
  tests/data/functional_conv_ref.bin  for tests/functional_conv.cpp (conv3d, conv_transpose1d,
                                      1-d pooling, bilinear).

Run with Debian's PyTorch (1.13, CPU):  /usr/bin/python3 tests/gen_loss_reference.py
Inputs are built on both sides with det(shape, seed); small integer or irregular inputs (class
targets, weights, masked targets) are stored. Each case stores its parameters ("<case>/params"),
its output and the gradients of loss = (out * det(out.shape, 999)).sum() ("<case>/g<name>").
"""
import math

import torch
import torch.nn.functional as F

from refbin import Writer, det

torch.set_default_dtype(torch.float64)
RED = {"none": 0, "mean": 1, "sum": 2, "batchmean": 3}


def leaf(t):
    return t.detach().clone().requires_grad_(True)


def class_targets(shape, C, seed, ignore_every=0, ignore_index=-100):
    """Class indices in [0, C) from det(), every `ignore_every`-th one set to ignore_index."""
    t = ((det(shape, seed) + 2) / 4 * C).floor().to(torch.int64).clamp(0, C - 1)
    if ignore_every:
        flat = t.reshape(-1)
        flat[ignore_every - 1 :: ignore_every] = ignore_index
    return t


# ============================================================================== loss_ref.bin
ref = Writer("loss_ref.bin")
put, params, grads = ref.put, ref.params, ref.grads

# ---------------------------------------------------------------------------- softmax
# params: ndim, shape..., dim, layout (0 plain, 1 transposed storage, 2 expression a * 2 + b)
softmax_cases = [([7, 13], 1, 0), ([7, 13], 0, 0), ([2, 3, 4, 5], 1, 0), ([2, 3, 37], -1, 0), ([5], 0, 0), ([], 0, 0),
                 ([3, 40], 1, 0), ([4, 1, 5], 1, 0), ([2, 5, 300], 1, 0), ([3, 17, 2], 2, 0), ([13, 7], 1, 1), ([13, 7], 0, 1),
                 ([6, 21], 1, 2), ([3, 4, 33], 1, 2), ([1, 3, 0], 1, 0), ([2, 3, 4], 0, 1), ([40, 9], 1, 0), ([33, 5], -1, 0)]
for k, (shape, dim, layout) in enumerate(softmax_cases):
    name = f"softmax/{k}"
    params(name, [len(shape), *shape, dim, layout])
    if layout == 1:  # a transposed view of [.., b, a] storage: the softmax dim is strided
        a = leaf(det(list(reversed(shape)) if len(shape) == 2 else [shape[0], shape[2], shape[1]], 3 * k) * 3)
        b = None
    else:
        a = leaf(det(shape, 3 * k) * 3)
        b = leaf(det(shape, 3 * k + 1)) if layout == 2 else None
    for fn, tag in ((F.softmax, "sm"), (F.log_softmax, "lsm")):
        if layout == 1:
            x = a.t() if len(shape) == 2 else a.transpose(1, 2)
        else:
            x = a * 2 + b if layout == 2 else a
        out = fn(x, dim)
        put(f"{name}/{tag}", out)
        ins, names = ([a, b], ["a", "b"]) if b is not None else ([a], ["a"])
        grads(f"{name}/{tag}", out, ins, names)

# rows holding -inf (masked logits) and a row that is all -inf (NaN, as PyTorch); long rows and
# short rows (one row per SIMD lane)
for name, shape in (("softmax_inf", [4, 19]), ("softmax_inf_short", [20, 6])):
    x = det(shape, 77) * 3
    x[0, 3] = -math.inf
    x[1, :2] = -math.inf
    x[2, :] = -math.inf
    put(name + "/x", x)
    put(name + "/sm", F.softmax(x, 1))
    put(name + "/lsm", F.log_softmax(x, 1))

# ---------------------------------------------------------------------------- cross_entropy (class indices)
# params: ndim, shape..., weighted, ignore_index, smoothing, reduction; targets stored
ce_shapes = [[8, 5], [5], [4, 3, 6], [2, 4, 3, 5], [40, 7], [16, 37], [6, 300], [2, 5, 300], [3, 1]]
k = 0
for shape in ce_shapes:
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = [] if len(shape) == 1 else [shape[0], *shape[2:]]
    for ci, (weighted, ignore, smoothing) in enumerate([(0, -100, 0.0), (1, 2, 0.0), (0, 1, 0.25), (1, -100, 0.1), (1, 0, 1.0)]):
        for red in ("none", "mean", "sum"):
            numel = math.prod(shape)
            if (numel > 250 and red == "sum") or (numel > 1000 and ci not in (1, 2)):  # keep the file small
                continue
            name = f"ce/{k}"
            every = 3 if ignore >= 0 and tshape else 0
            t = class_targets(tshape, C, 1000 + k, every, ignore)
            w = (det([C], 500 + k) + 2.5) if weighted else None
            x = leaf(det(shape, 2000 + k) * 2)
            out = F.cross_entropy(x, t, weight=w, ignore_index=ignore, label_smoothing=smoothing, reduction=red)
            params(name, [len(shape), *shape, weighted, ignore, smoothing, RED[red]])
            put(name + "/t", t)
            if w is not None:
                put(name + "/w", w)
            put(name + "/out", out)
            grads(name, out, [x], ["x"])
            k += 1

# every target ignored: mean is NaN, the gradient zero
x = leaf(det([3, 4], 9))
t = torch.full([3], -100, dtype=torch.int64)
out = F.cross_entropy(x, t)
put("ce_all_ignored/out", out)
grads("ce_all_ignored", out, [x], ["x"])

# ---------------------------------------------------------------------------- cross_entropy (probabilities)
k = 0
for shape in ([6, 5], [5], [2, 4, 3, 3]):
    C = shape[0] if len(shape) == 1 else shape[1]
    for weighted, smoothing in [(0, 0.0), (1, 0.3)]:
        for red in ("none", "mean", "sum"):
            name = f"ce_prob/{k}"
            x = leaf(det(shape, 3000 + k) * 2)
            t = leaf((det(shape, 3100 + k) + 2) / 4)
            w = leaf(det([C], 3200 + k) + 2.5) if weighted else None
            out = F.cross_entropy(x, t, weight=w, label_smoothing=smoothing, reduction=red)
            params(name, [len(shape), *shape, weighted, smoothing, RED[red]])
            put(name + "/out", out)
            ins, names = ([x, t, w], ["x", "t", "w"]) if weighted else ([x, t], ["x", "t"])
            grads(name, out, ins, names)
            k += 1

# ---------------------------------------------------------------------------- nll_loss
k = 0
for shape in ([8, 5], [5], [2, 4, 3, 5], [3, 6, 7]):
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = [] if len(shape) == 1 else [shape[0], *shape[2:]]
    for weighted, ignore in [(0, -100), (1, 1), (1, -100)]:
        for red in ("none", "mean", "sum"):
            name = f"nll/{k}"
            t = class_targets(tshape, C, 4000 + k, 4 if ignore >= 0 and tshape else 0, ignore)
            w = (det([C], 4100 + k) + 2.5) if weighted else None
            x = leaf(det(shape, 4200 + k))
            out = F.nll_loss(x, t, weight=w, ignore_index=ignore, reduction=red)
            params(name, [len(shape), *shape, weighted, ignore, RED[red]])
            put(name + "/t", t)
            if w is not None:
                put(name + "/w", w)
            put(name + "/out", out)
            grads(name, out, [x], ["x"])
            k += 1

# ---------------------------------------------------------------------------- regression losses
# params: kind (0 mse, 1 l1, 2 smooth_l1, 3 huber), arg (beta / delta), reduction, broadcast target
k = 0
for kind, arg in [(0, 0), (1, 0), (2, 1.0), (2, 0.5), (2, 0.0), (3, 1.0), (3, 0.3)]:
    for red in ("none", "mean", "sum"):
        for bcast in (0, 1):
            if bcast and red != "mean":
                continue
            name = f"reg/{k}"
            x = leaf(det([4, 7], 5000 + k))
            y = leaf(det([7] if bcast else [4, 7], 5100 + k))
            if kind == 0:
                out = F.mse_loss(x, y, reduction=red)
            elif kind == 1:
                out = F.l1_loss(x, y, reduction=red)
            elif kind == 2:
                out = F.smooth_l1_loss(x, y, reduction=red, beta=arg)
            else:
                out = F.huber_loss(x, y, reduction=red, delta=arg)
            params(name, [kind, arg, RED[red], bcast])
            put(name + "/out", out)
            grads(name, out, [x, y], ["x", "y"])
            k += 1

# ---------------------------------------------------------------------------- binary cross entropy
# params: weighted, reduction
k = 0
for weighted in (0, 1):
    for red in ("none", "mean", "sum"):
        name = f"bce/{k}"
        x = leaf((det([5, 7], 6000 + k) + 2) / 4 * 0.98 + 0.01)
        t = leaf((det([5, 7], 6100 + k) + 2) / 4)
        w = det([7], 6200 + k) + 2.5 if weighted else None
        out = F.binary_cross_entropy(x, t, weight=w, reduction=red)
        params(name, [weighted, RED[red]])
        put(name + "/out", out)
        grads(name, out, [x, t], ["x", "t"])
        k += 1
# probabilities at exactly 0 and 1: logs clamped at -100, gradients (x - t) / max(x (1 - x), 1e-12)
x = leaf(torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5, 1e-30]))
t = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.25, 1.0])
out = F.binary_cross_entropy(x, t, reduction="none")
put("bce_edge/x", x)
put("bce_edge/t", t)
put("bce_edge/out", out)
put("bce_edge/gx", torch.autograd.grad(out.sum(), x)[0])

# params: weighted, pos_weighted, reduction
k = 0
for weighted, pos in [(0, 0), (1, 0), (0, 1), (1, 1)]:
    for red in ("none", "mean", "sum"):
        name = f"bcel/{k}"
        z = leaf(det([5, 7], 7000 + k) * 5)
        t = leaf((det([5, 7], 7100 + k) + 2) / 4)
        w = det([5, 1], 7200 + k) + 2.5 if weighted else None
        pw = det([7], 7300 + k) + 2.5 if pos else None
        out = F.binary_cross_entropy_with_logits(z, t, weight=w, pos_weight=pw, reduction=red)
        params(name, [weighted, pos, RED[red]])
        put(name + "/out", out)
        grads(name, out, [z, t], ["z", "t"])
        k += 1
# large logits: no overflow
z = leaf(torch.tensor([-200.0, -30.0, 0.0, 30.0, 200.0]))
t = torch.tensor([1.0, 0.0, 0.5, 1.0, 0.0])
out = F.binary_cross_entropy_with_logits(z, t, reduction="none")
put("bcel_edge/z", z)
put("bcel_edge/t", t)
put("bcel_edge/out", out)
put("bcel_edge/gz", torch.autograd.grad(out.sum(), z)[0])

# ---------------------------------------------------------------------------- kl_div
# params: log_target, reduction; targets stored (zeros included: their target gradient is NaN)
k = 0
for log_target in (0, 1):
    for red in ("none", "mean", "sum", "batchmean"):
        name = f"kl/{k}"
        x = leaf(F.log_softmax(det([4, 6], 8000 + k), 1))
        if log_target:
            t = F.log_softmax(det([4, 6], 8100 + k), 1)
        else:
            t = (det([4, 6], 8100 + k) + 2) / 4
            t.reshape(-1)[::5] = 0
        t = leaf(t)
        out = F.kl_div(x, t, reduction=red, log_target=bool(log_target))
        params(name, [log_target, RED[red]])
        put(name + "/t", t)
        put(name + "/out", out)
        grads(name, out, [x, t], ["x", "t"])
        k += 1

ref.save()

# ============================================================================== functional_conv_ref.bin
ref = Writer("functional_conv_ref.bin")
put, params, grads = ref.put, ref.params, ref.grads

# conv3d: N (0: unbatched), C, D, H, W, O, groups, kd, kh, kw, stride(3), padding(3), dilation(3), bias
conv3d_cases = [
    (2, 3, 5, 6, 7, 4, 1, 3, 3, 3, (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
    (1, 4, 6, 5, 5, 6, 2, 2, 3, 1, (2, 1, 2), (1, 1, 0), (1, 1, 1), 0),
    (2, 2, 7, 5, 6, 3, 1, 3, 2, 2, (1, 2, 1), (2, 0, 1), (2, 1, 2), 1),
    (0, 3, 4, 4, 4, 2, 1, 2, 2, 2, (1, 1, 1), (1, 1, 1), (1, 1, 1), 1),
    (1, 6, 3, 4, 5, 6, 3, 1, 1, 1, (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
]
for k, (N, C, D, H, W, O, G, kd, kh, kw, s, p, d, bias) in enumerate(conv3d_cases):
    name = f"conv3d/{k}"
    xs = [C, D, H, W] if N == 0 else [N, C, D, H, W]
    x = leaf(det(xs, 10 * k))
    w = leaf(det([O, C // G, kd, kh, kw], 10 * k + 1))
    b = leaf(det([O], 10 * k + 2)) if bias else None
    out = F.conv3d(x, w, b, s, p, d, G)
    params(name, [N, C, D, H, W, O, G, kd, kh, kw, *s, *p, *d, bias])
    put(name + "/out", out)
    grads(name, out, [x, w, b] if bias else [x, w], ["x", "w", "b"] if bias else ["x", "w"])

# conv_transpose1d: N (0: unbatched), Cin, L, Cout, groups, k, stride, padding, output_padding, dilation, bias
convt_cases = [(2, 4, 6, 3, 1, 3, 1, 0, 0, 1, 1), (1, 4, 5, 6, 2, 3, 2, 1, 1, 1, 0), (2, 3, 7, 2, 1, 2, 3, 1, 2, 2, 1),
               (0, 2, 5, 3, 1, 4, 2, 2, 0, 1, 1)]
for k, (N, Ci, L, Co, G, ks, s, p, op, d, bias) in enumerate(convt_cases):
    name = f"convt1d/{k}"
    xs = [Ci, L] if N == 0 else [N, Ci, L]
    x = leaf(det(xs, 20 * k))
    w = leaf(det([Ci, Co // G, ks], 20 * k + 1))
    b = leaf(det([Co], 20 * k + 2)) if bias else None
    out = F.conv_transpose1d(x, w, b, s, p, op, G, d)
    params(name, [N, Ci, L, Co, G, ks, s, p, op, d, bias])
    put(name + "/out", out)
    grads(name, out, [x, w, b] if bias else [x, w], ["x", "w", "b"] if bias else ["x", "w"])

# max_pool1d: N (0: unbatched), C, L, k, stride (0: default), padding, dilation, ceil
maxp_cases = [(2, 3, 10, 3, 0, 0, 1, 0), (2, 3, 11, 3, 2, 1, 1, 1), (1, 2, 12, 2, 1, 1, 2, 0), (0, 3, 9, 4, 3, 2, 1, 1),
              (2, 2, 8, 1, 1, 0, 1, 0)]
for k, (N, C, L, ks, s, p, d, ceil) in enumerate(maxp_cases):
    name = f"maxpool1d/{k}"
    x = leaf(det([C, L] if N == 0 else [N, C, L], 30 * k))
    out, idx = F.max_pool1d(x, ks, s if s else None, p, d, bool(ceil), return_indices=True)
    params(name, [N, C, L, ks, s, p, d, ceil])
    put(name + "/out", out)
    put(name + "/idx", idx)
    grads(name, out, [x], ["x"])

# avg_pool1d: N (0: unbatched), C, L, k, stride (0: default), padding, ceil, count_include_pad
avgp_cases = [(2, 3, 10, 3, 0, 0, 0, 1), (2, 3, 11, 3, 2, 1, 1, 1), (1, 2, 12, 4, 3, 2, 1, 0), (0, 3, 9, 2, 1, 1, 0, 0)]
for k, (N, C, L, ks, s, p, ceil, cip) in enumerate(avgp_cases):
    name = f"avgpool1d/{k}"
    x = leaf(det([C, L] if N == 0 else [N, C, L], 40 * k))
    out = F.avg_pool1d(x, ks, s if s else None, p, bool(ceil), bool(cip))
    params(name, [N, C, L, ks, s, p, ceil, cip])
    put(name + "/out", out)
    grads(name, out, [x], ["x"])

# adaptive pools: N (0: unbatched), C, L, output size
adap_cases = [(2, 3, 10, 1), (2, 3, 10, 3), (1, 2, 10, 7), (0, 3, 5, 8), (2, 2, 9, 9)]
for k, (N, C, L, osz) in enumerate(adap_cases):
    name = f"adaptive1d/{k}"
    x = leaf(det([C, L] if N == 0 else [N, C, L], 50 * k))
    out = F.adaptive_avg_pool1d(x, osz)
    params(name, [N, C, L, osz])
    put(name + "/avg", out)
    grads(name + "/avg", out, [x], ["x"])
    out, idx = F.adaptive_max_pool1d(x, osz, return_indices=True)
    put(name + "/max", out)
    put(name + "/idx", idx)
    grads(name + "/max", out, [x], ["x"])

# bilinear: leading dims, in1, in2, out, bias
bil_cases = [([5], 3, 4, 6, 1), ([2, 3], 4, 2, 5, 0), ([], 3, 5, 2, 1), ([4], 1, 1, 1, 1)]
for k, (lead, i1, i2, o, bias) in enumerate(bil_cases):
    name = f"bilinear/{k}"
    x1 = leaf(det([*lead, i1], 60 * k))
    x2 = leaf(det([*lead, i2], 60 * k + 1))
    w = leaf(det([o, i1, i2], 60 * k + 2))
    b = leaf(det([o], 60 * k + 3)) if bias else None
    out = F.bilinear(x1, x2, w, b)
    params(name, [len(lead), *lead, i1, i2, o, bias])
    put(name + "/out", out)
    ins, names = [x1, x2, w], ["x1", "x2", "w"]
    if bias:
        ins, names = ins + [b], names + ["b"]
    grads(name, out, ins, names)

ref.save()
