#!/usr/bin/python3
"""Writes tests/data/kernels_ref.bin: PyTorch reference values for tests/kernels.cpp.

Run with Debian's PyTorch (1.13, CPU):  /usr/bin/python3 tests/gen_kernels_reference.py
Inputs are not stored: both sides build them with det(shape, seed), an integer hash that gives the
same doubles in Python and C++. Each case stores its parameters ("<case>/params") so the C++ test
rebuilds the same call, and its outputs and input gradients (float64, int64 for indices).
Gradients are of loss = (out * det(out.shape, 999)).sum().
"""
import torch
import torch.nn.functional as F

from refbin import Writer, det

torch.set_default_dtype(torch.float64)
ref = Writer("kernels_ref.bin")
put, params, grads = ref.put, ref.params, ref.grads


def leaf(t):
    return t.detach().clone().requires_grad_(True) if t.is_contiguous() else t.detach().requires_grad_(True)


def matrix(r, c, layout, seed):
    """A (r x c) operand in one of the layouts the C++ test builds the same way."""
    if layout == 0:
        return det((r, c), seed)
    if layout == 1:  # transposed view
        return det((c, r), seed).t()
    if layout == 2:  # every other column of a wider matrix
        return det((r, 2 * c), seed)[:, ::2]
    if layout == 3:  # one row expanded (stride 0)
        return det((1, c), seed).expand(r, c)
    raise ValueError(layout)


def as_input(t):
    """A leaf that keeps t's strides (views of a leaf base)."""
    base = t.detach().clone().requires_grad_(True)
    return base


# ---------------------------------------------------------------------------------------- mm
mm_sizes = [(1, 1, 1), (3, 17, 129), (129, 3, 5), (5, 129, 3), (1, 40, 7), (7, 40, 1), (20, 33, 30),
            (0, 3, 4), (3, 0, 4), (3, 4, 0)]
mm_layouts = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 2), (3, 0)]
k = 0
for (M, K, N) in mm_sizes:
    for (la, lb) in mm_layouts:
        if M * N > 400 and (la, lb) not in ((0, 0), (1, 1), (2, 2)):  # keep the file small
            continue
        if (la == 3 and M == 0) or (la == 2 and K == 0):
            continue
        a = matrix(M, K, la, 2 * k).detach().requires_grad_(True)
        b = matrix(K, N, lb, 2 * k + 1).detach().requires_grad_(True)
        name = f"mm/{k}"
        params(name, [M, K, N, la, lb])
        out = torch.mm(a, b)
        put(name + "/out", out)
        if (la, lb) in ((0, 0), (1, 1)):  # gradients do not depend on the layout; two suffice
            grads(name, out, [a, b], ["a", "b"])
        k += 1

# ------------------------------------------------------------------------------------ addmm
addmm_cases = [(5, 7, 6, 0, 1.0, 1.0), (5, 7, 6, 1, 0.5, 2.0), (5, 7, 6, 2, -1.0, 0.5), (5, 7, 6, 3, 2.0, 1.0),
               (5, 7, 6, 4, 1.0, -1.5), (5, 7, 6, 5, 0.0, 1.0), (13, 40, 20, 0, 1.0, 1.0), (4, 0, 3, 2, 0.5, 1.0)]


def bias_for(kind, M, N, seed):
    if kind == 0:
        return det((N,), seed)
    if kind == 1:
        return det((M, 1), seed)
    if kind == 2:
        return det((M, N), seed)
    if kind == 3:
        return det((), seed)
    if kind == 4:
        return det((1, N), seed)
    if kind == 5:
        return torch.full((N,), float("nan"))
    raise ValueError(kind)


for k, (M, K, N, kind, beta, alpha) in enumerate(addmm_cases):
    name = f"addmm/{k}"
    params(name, [M, K, N, kind, beta, alpha])
    s = bias_for(kind, M, N, 3 * k).requires_grad_(True)
    a = det((M, K), 3 * k + 1).requires_grad_(True)
    b = det((K, N), 3 * k + 2).requires_grad_(True)
    out = torch.addmm(s, a, b, beta=beta, alpha=alpha)
    put(name + "/out", out)
    grads(name, out, [s, a, b], ["s", "a", "b"])

# ----------------------------------------------------------------------------------- matmul
# shapes of a and b (up to 4 dims each), and whether a is a transposed (non-foldable) view
matmul_cases = [((3,), (3,), 0), ((2, 3), (3,), 0), ((3,), (3, 4), 0), ((2, 3, 4), (4,), 0), ((4,), (2, 4, 5), 0),
                ((2, 3, 4), (4, 5), 0), ((2, 1, 3, 4), (3, 4, 5), 0), ((3, 4), (2, 4, 5), 0), ((2, 3, 4), (4, 5), 1),
                ((2, 3, 4), (2, 4, 5), 1), ((5, 1, 2, 4), (3, 4, 2), 0), ((2, 0, 4), (4, 3), 0)]


def padded(shape):
    return [len(shape)] + list(shape) + [0] * (4 - len(shape))


for k, (sa, sb, trans) in enumerate(matmul_cases):
    name = f"matmul/{k}"
    params(name, padded(sa) + padded(sb) + [trans])
    if trans:  # a stored with its last two dims swapped, then transposed back: not foldable
        swapped = list(sa[:-2]) + [sa[-1], sa[-2]]
        a = det(swapped, 2 * k).transpose(-1, -2)
    else:
        a = det(sa, 2 * k)
    a = a.detach().requires_grad_(True)
    b = det(sb, 2 * k + 1).requires_grad_(True)
    out = torch.matmul(a, b)
    put(name + "/out", out)
    grads(name, out, [a, b], ["a", "b"])

# ---------------------------------------------------------------------- bmm, baddbmm, addbmm
bmm_cases = [(3, 4, 5, 6, 0), (3, 4, 5, 6, 1), (3, 4, 5, 6, 2), (1, 1, 1, 1, 0), (2, 17, 3, 33, 1), (0, 2, 3, 4, 0)]


def batch_a(B, M, K, layout, seed):
    if layout == 2:
        return det((M, B, K), seed).permute(1, 0, 2)
    return det((B, M, K), seed)


def batch_b(B, K, N, layout, seed):
    if layout == 1:
        return det((B, N, K), seed).transpose(1, 2)
    return det((B, K, N), seed)


for k, (B, M, K, N, layout) in enumerate(bmm_cases):
    name = f"bmm/{k}"
    params(name, [B, M, K, N, layout])
    a = batch_a(B, M, K, layout, 2 * k).detach().requires_grad_(True)
    b = batch_b(B, K, N, layout, 2 * k + 1).detach().requires_grad_(True)
    out = torch.bmm(a, b)
    put(name + "/out", out)
    grads(name, out, [a, b], ["a", "b"])

baddbmm_cases = [(3, 4, 5, 6, 0, 1.0, 1.0), (3, 4, 5, 6, 1, 0.5, -2.0), (2, 3, 4, 5, 2, 0.0, 1.0)]
for k, (B, M, K, N, kind, beta, alpha) in enumerate(baddbmm_cases):
    name = f"baddbmm/{k}"
    params(name, [B, M, K, N, kind, beta, alpha])
    shape = [(B, M, N), (M, N), (1, 1, N)][kind]
    s = det(shape, 3 * k).requires_grad_(True)
    a = det((B, M, K), 3 * k + 1).requires_grad_(True)
    b = det((B, K, N), 3 * k + 2).requires_grad_(True)
    out = torch.baddbmm(s, a, b, beta=beta, alpha=alpha)
    put(name + "/out", out)
    grads(name, out, [s, a, b], ["s", "a", "b"])

addbmm_cases = [(3, 4, 5, 6, 0, 1.0, 1.0), (3, 4, 5, 6, 1, 0.5, -2.0), (2, 3, 4, 5, 0, 0.0, 1.5)]
for k, (B, M, K, N, kind, beta, alpha) in enumerate(addbmm_cases):
    name = f"addbmm/{k}"
    params(name, [B, M, K, N, kind, beta, alpha])
    shape = [(M, N), (N,)][kind]
    s = det(shape, 3 * k).requires_grad_(True)
    a = det((B, M, K), 3 * k + 1).requires_grad_(True)
    b = det((B, K, N), 3 * k + 2).requires_grad_(True)
    out = torch.addbmm(s, a, b, beta=beta, alpha=alpha)
    put(name + "/out", out)
    grads(name, out, [s, a, b], ["s", "a", "b"])

# ------------------------------------------------------------------ dot, mv, addmv, addr
for k, n in enumerate([1, 3, 17, 129, 0]):
    name = f"dot/{k}"
    params(name, [n])
    a = det((n,), 2 * k).requires_grad_(True)
    b = det((2 * n,), 2 * k + 1)[::2].detach().requires_grad_(True)
    out = torch.dot(a, b)
    put(name + "/out", out)
    grads(name, out, [a, b], ["a", "b"])

mv_cases = [(3, 17, 0), (129, 3, 1), (1, 1, 0), (17, 40, 1), (0, 3, 0)]
for k, (M, K, trans) in enumerate(mv_cases):
    name = f"mv/{k}"
    params(name, [M, K, trans])
    a = matrix(M, K, trans, 2 * k).detach().requires_grad_(True)
    x = det((K,), 2 * k + 1).requires_grad_(True)
    out = torch.mv(a, x)
    put(name + "/out", out)
    grads(name, out, [a, x], ["a", "x"])

for k, (M, K, beta, alpha) in enumerate([(5, 7, 1.0, 1.0), (5, 7, 0.5, -2.0), (4, 3, 0.0, 1.0)]):
    name = f"addmv/{k}"
    params(name, [M, K, beta, alpha])
    s = det((M,), 3 * k).requires_grad_(True)
    a = det((M, K), 3 * k + 1).requires_grad_(True)
    x = det((K,), 3 * k + 2).requires_grad_(True)
    out = torch.addmv(s, a, x, beta=beta, alpha=alpha)
    put(name + "/out", out)
    grads(name, out, [s, a, x], ["s", "a", "x"])

for k, (M, N, beta, alpha) in enumerate([(5, 7, 1.0, 1.0), (5, 7, 0.5, -2.0), (4, 3, 0.0, 1.0)]):
    name = f"addr/{k}"
    params(name, [M, N, beta, alpha])
    s = det((M, N), 3 * k).requires_grad_(True)
    u = det((M,), 3 * k + 1).requires_grad_(True)
    v = det((N,), 3 * k + 2).requires_grad_(True)
    out = torch.addr(s, u, v, beta=beta, alpha=alpha)
    put(name + "/out", out)
    grads(name, out, [s, u, v], ["s", "u", "v"])

# ---------------------------------------------------------------------------- linear
for k, (rows, fin, fout, has_bias, act) in enumerate([(5, 7, 6, 1, 0), (5, 7, 6, 1, 1), (16, 50, 40, 0, 1),
                                                       (3, 17, 65, 1, 1), (2, 9, 3, 1, 2)]):
    name = f"linear/{k}"
    params(name, [rows, fin, fout, has_bias, act])
    x = det((rows, fin), 3 * k).requires_grad_(True)
    w = det((fout, fin), 3 * k + 1).requires_grad_(True)
    b = det((fout,), 3 * k + 2).requires_grad_(True) if has_bias else None
    out = F.linear(x, w, b)
    out = [out, torch.relu(out), torch.sigmoid(out)][act]
    put(name + "/out", out)
    grads(name, out, [x, w] + ([b] if has_bias else []), ["x", "w", "b"][: 2 + has_bias])

# ------------------------------------------------------- second derivatives (create_graph)
a = det((4, 5), 1).requires_grad_(True)
b = det((5, 3), 2).requires_grad_(True)
y = a @ b
(ga,) = torch.autograd.grad((y * y).sum(), a, create_graph=True)
(ga * det((4, 5), 3)).sum().backward()
put("mm2/ga", ga)
put("mm2/a_grad", a.grad)
put("mm2/b_grad", b.grad)

x = det((1, 2, 5, 5), 4).requires_grad_(True)
w = det((3, 2, 3, 3), 5).requires_grad_(True)
y = F.conv2d(x, w, stride=2, padding=1)
(gx,) = torch.autograd.grad((y * y).sum(), x, create_graph=True)
(gx * det((1, 2, 5, 5), 6)).sum().backward()
put("conv2nd/gx", gx)
put("conv2nd/x_grad", x.grad)
put("conv2nd/w_grad", w.grad)

# ---------------------------------------------------------------------------- conv2d
# N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw, groups, bias
conv_cases = [(2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
              (1, 4, 9, 8, 6, 3, 2, 2, 1, 1, 0, 1, 2, 2, 1),
              (1, 1, 28, 28, 6, 5, 5, 1, 1, 2, 2, 1, 1, 1, 1),      # LeNet conv1
              (1, 6, 14, 14, 16, 5, 5, 1, 1, 0, 0, 1, 1, 1, 1),     # LeNet conv2
              (2, 5, 4, 4, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0),        # pointwise
              (1, 4, 6, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4, 1),        # depthwise, stride 2
              (1, 3, 17, 5, 2, 3, 1, 3, 1, 1, 0, 2, 1, 1, 0),       # odd sizes, stride 3, dilation 2
              (1, 2, 3, 3, 129, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1),      # one output pixel, many channels
              (1, 30, 7, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),      # deeper K (two K blocks)
              (0, 3, 5, 5, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1),        # empty batch
              # Small images with >= 32 channels: the weight gradient's channels-last product
              (1, 32, 5, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
              (1, 33, 7, 5, 5, 3, 2, 2, 1, 1, 0, 1, 2, 1, 0),       # stride, dilation, uneven padding
              (2, 32, 4, 4, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0),       # ResNet's 4x4 stage
              # >= 64 channels: the forward pass's channels-last product (and a stride-1 input
              # gradient's, which is a forward pass over 64 output channels)
              (1, 64, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
              (1, 4, 5, 5, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0),
              (1, 64, 5, 4, 2, 3, 2, 2, 1, 1, 0, 1, 2, 1, 1),       # stride, dilation, uneven padding
              (2, 3, 7, 6, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1),       # a strided input gradient over 64 channels
              (2, 5, 7, 6, 4, 1, 1, 2, 3, 0, 0, 1, 1, 1, 1),        # 1x1, stride (2, 3): a pointwise product of every other pixel
              (1, 4, 5, 5, 4, 1, 1, 2, 2, 0, 0, 1, 1, 2, 0)]        # the same with groups
for k, c in enumerate(conv_cases):
    N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw, groups, has_bias = c
    name = f"conv2d/{k}"
    params(name, c)
    x = det((N, C, H, W), 3 * k).requires_grad_(True)
    w = det((O, C // groups, kh, kw), 3 * k + 1).requires_grad_(True)
    b = det((O,), 3 * k + 2).requires_grad_(True) if has_bias else None
    out = F.conv2d(x, w, b, (sh, sw), (ph, pw), (dh, dw), groups)
    put(name + "/out", out)
    grads(name, out, [x, w] + ([b] if has_bias else []), ["x", "w", "b"][: 2 + has_bias])

# N, C, L, O, k, stride, padding, dilation, groups, bias
conv1d_cases = [(2, 3, 10, 4, 3, 2, 1, 2, 1, 1), (1, 4, 17, 6, 1, 1, 0, 1, 2, 0)]
for k, c in enumerate(conv1d_cases):
    N, C, L, O, kk, s, p, d, groups, has_bias = c
    name = f"conv1d/{k}"
    params(name, c)
    x = det((N, C, L), 3 * k).requires_grad_(True)
    w = det((O, C // groups, kk), 3 * k + 1).requires_grad_(True)
    b = det((O,), 3 * k + 2).requires_grad_(True) if has_bias else None
    out = F.conv1d(x, w, b, s, p, d, groups)
    put(name + "/out", out)
    grads(name, out, [x, w] + ([b] if has_bias else []), ["x", "w", "b"][: 2 + has_bias])

# N, Cin, H, W, Cout/groups, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, groups, bias
convt_cases = [(2, 4, 5, 5, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1),
               (1, 4, 3, 4, 2, 3, 2, 1, 2, 0, 1, 0, 1, 2, 1, 2, 0),
               (1, 2, 6, 6, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)]
for k, c in enumerate(convt_cases):
    N, C, H, W, Og, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, groups, has_bias = c
    name = f"convt/{k}"
    params(name, c)
    x = det((N, C, H, W), 3 * k).requires_grad_(True)
    w = det((C, Og, kh, kw), 3 * k + 1).requires_grad_(True)
    b = det((Og * groups,), 3 * k + 2).requires_grad_(True) if has_bias else None
    out = F.conv_transpose2d(x, w, b, (sh, sw), (ph, pw), (oph, opw), groups, (dh, dw))
    put(name + "/out", out)
    grads(name, out, [x, w] + ([b] if has_bias else []), ["x", "w", "b"][: 2 + has_bias])

# ---------------------------------------------------------------------------- pooling
# N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, ceil
maxpool_cases = [(2, 3, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 0),
                 (2, 2, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1, 0),      # LeNet
                 (1, 2, 9, 10, 3, 2, 2, 1, 1, 0, 2, 1, 1),     # dilation, ceil_mode
                 (1, 1, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1, 1),      # ceil_mode drops the last window
                 (1, 2, 7, 7, 2, 2, 2, 2, 0, 0, 1, 1, 1)]      # 2x2 with ceil_mode (odd size)
for k, c in enumerate(maxpool_cases):
    N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, ceil = c
    name = f"maxpool/{k}"
    params(name, c)
    x = det((N, C, H, W), k).requires_grad_(True)
    out, idx = F.max_pool2d(x, (kh, kw), (sh, sw), (ph, pw), (dh, dw), bool(ceil), return_indices=True)
    put(name + "/out", out)
    put(name + "/idx", idx)
    grads(name, out, [x], ["x"])

# N, C, H, W, kh, kw, sh, sw, ph, pw, ceil, count_include_pad, divisor_override
avgpool_cases = [(2, 3, 7, 7, 3, 3, 2, 2, 1, 1, 0, 1, 0),
                 (2, 3, 7, 7, 3, 3, 2, 2, 1, 1, 0, 0, 0),
                 (1, 2, 8, 9, 3, 2, 2, 3, 1, 1, 1, 1, 0),
                 (1, 2, 8, 9, 3, 2, 2, 3, 1, 1, 1, 0, 0),
                 (1, 1, 6, 6, 2, 2, 2, 2, 0, 0, 0, 1, 3)]
for k, c in enumerate(avgpool_cases):
    N, C, H, W, kh, kw, sh, sw, ph, pw, ceil, cip, div = c
    name = f"avgpool/{k}"
    params(name, c)
    x = det((N, C, H, W), k).requires_grad_(True)
    out = F.avg_pool2d(x, (kh, kw), (sh, sw), (ph, pw), bool(ceil), bool(cip), div if div else None)
    put(name + "/out", out)
    grads(name, out, [x], ["x"])

adaptive_cases = [(2, 3, 7, 9, 3, 4), (1, 2, 5, 5, 1, 1), (1, 1, 4, 6, 4, 6), (1, 2, 3, 3, 5, 7), (1, 2, 6, 6, 0, 2)]
for k, c in enumerate(adaptive_cases):
    N, C, H, W, oh, ow = c
    x = det((N, C, H, W), k).requires_grad_(True)
    name = f"adaptiveavg/{k}"
    params(name, c)
    out = F.adaptive_avg_pool2d(x, (oh, ow))
    put(name + "/out", out)
    if oh > 0:
        grads(name, out, [x], ["x"])
    name = f"adaptivemax/{k}"
    params(name, c)
    if oh > 0:
        out, idx = F.adaptive_max_pool2d(x, (oh, ow), return_indices=True)
        put(name + "/out", out)
        put(name + "/idx", idx)
        grads(name, out, [x], ["x"])

ref.save()
