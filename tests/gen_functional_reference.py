#!/usr/bin/python3
"""Writes tests/data/functional_ref.bin: PyTorch reference values for tests/functional.cpp
(activations, normalisation, embedding, padding, normalize).

Run with Debian's PyTorch (1.13, CPU):  /usr/bin/python3 tests/gen_functional_reference.py
Inputs are rounded to float32 (inp() below; the C++ side builds the same values in float and
converts them), so float and double runs read identical inputs and the float64 references serve
both. Gradients are of loss = (out * det(out.shape, 999)).sum().
"""
import math

import torch
import torch.nn.functional as F

from refbin import Writer, det

torch.set_default_dtype(torch.float64)
ref = Writer("functional_ref.bin")
put, params, grads = ref.put, ref.params, ref.grads


def inp(shape, seed, scale=1.0, offset=0.0):
    """det(shape, seed) in float32, times scale plus offset in float32, as float64."""
    t = det(shape, seed, torch.float32) * scale + offset
    return t.double()


def leaf(t):
    return t.detach().clone().requires_grad_(True)


# ------------------------------------------------------------------------------ activations
# Kinks of every activation, large magnitudes and the softplus threshold switches, then det values.
special = [-100.0, -30.0, -20.0, -10.0, -6.0, -3.0, -2.5, -2.0, -1.0, -0.5, -1e-3, 0.0, 1e-3, 0.1, 0.5, 1.0, 2.5, 3.0,
           5.0, 6.0, 10.0, 20.0, 20.5, 30.0, 100.0]
x_act = torch.cat([torch.tensor(special), inp((40,), 7, 4.0)])
put("act/x", x_act)

activations = [
    ("relu", F.relu),
    ("relu6", F.relu6),
    ("leaky_relu", lambda x: F.leaky_relu(x)),
    ("leaky_relu_0.2", lambda x: F.leaky_relu(x, 0.2)),
    ("elu", lambda x: F.elu(x)),
    ("elu_0.5", lambda x: F.elu(x, 0.5)),
    ("selu", F.selu),
    ("celu", lambda x: F.celu(x)),
    ("celu_2", lambda x: F.celu(x, 2.0)),
    ("gelu", lambda x: F.gelu(x)),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
    ("silu", F.silu),
    ("mish", F.mish),
    ("sigmoid", torch.sigmoid),
    ("tanh", torch.tanh),
    ("softplus", lambda x: F.softplus(x)),
    ("softplus_2_10", lambda x: F.softplus(x, 2.0, 10.0)),
    ("softplus_0.5_5", lambda x: F.softplus(x, 0.5, 5.0)),
    ("hardtanh", lambda x: F.hardtanh(x)),
    ("hardtanh_-2_0.5", lambda x: F.hardtanh(x, -2.0, 0.5)),
    ("hardsigmoid", F.hardsigmoid),
    ("hardswish", F.hardswish),
    ("logsigmoid", F.logsigmoid),
    ("softsign", F.softsign),
    ("tanhshrink", F.tanhshrink),
    ("threshold_0.5_-2", lambda x: F.threshold(x, 0.5, -2.0)),
    ("threshold_0_0", lambda x: F.threshold(x, 0.0, 0.0)),
]
for name, fn in activations:
    x = leaf(x_act)
    out = fn(x)
    put(f"act/{name}/out", out)
    grads(f"act/{name}", out, [x], ["x"])

# prelu: weight [1] or [C], inputs of rank 1 to 4
prelu_cases = [((7,), 1), ((4, 3), 3), ((2, 3, 5), 3), ((2, 3, 4, 5), 1), ((2, 4, 3, 3), 4)]
for k, (shape, nw) in enumerate(prelu_cases):
    name = f"prelu/{k}"
    params(name, [len(shape)] + list(shape) + [0] * (4 - len(shape)) + [nw])
    x = leaf(inp(shape, 20 + k, 2.0))
    w = leaf(inp((nw,), 40 + k, 0.25))
    out = F.prelu(x, w)
    put(name + "/out", out)
    grads(name, out, [x, w], ["x", "w"])

# the fused chain of the test: gelu(leaky_relu(a * b))
a = leaf(inp((6, 5), 1, 2.0))
b = leaf(inp((6, 5), 2, 2.0))
out = F.gelu(F.leaky_relu(a * b))
put("fused/out", out)
grads("fused", out, [a, b], ["a", "b"])

# ------------------------------------------------------------------------------ batch_norm
# shape, has weight, has bias, training, momentum, eps, has running stats, input scale, offset
bn_cases = [
    ((8, 4), 1, 1, 1, 0.1, 1e-5, 1, 2.0, 0.0),
    ((5, 3, 7), 1, 1, 1, 0.1, 1e-5, 1, 2.0, 0.5),
    ((4, 3, 10, 10), 1, 1, 1, 0.3, 1e-3, 1, 2.0, -1.0),
    ((2, 3, 9, 8), 0, 0, 1, 0.1, 1e-5, 1, 1.0, 0.0),
    ((2, 3, 3, 4, 5), 1, 0, 1, 0.1, 1e-5, 0, 1.0, 0.0),
    ((3, 2, 8, 8), 0, 1, 1, 1.0, 1e-5, 1, 1.0, 1000.0),
    ((16, 5), 1, 1, 1, 0.5, 1e-5, 1, 0.5, 100.0),
    ((6, 4), 1, 1, 0, 0.1, 1e-5, 1, 2.0, 0.0),
    ((3, 4, 6, 5), 1, 1, 0, 0.1, 1e-5, 1, 2.0, 0.0),
    ((3, 4, 6), 0, 0, 0, 0.1, 1e-2, 1, 2.0, 0.0),
    ((2, 2, 1), 1, 1, 1, 0.1, 1e-5, 1, 1.0, 0.0),
]
for k, (shape, hw, hb, training, momentum, eps, hr, scale, offset) in enumerate(bn_cases):
    name = f"bn/{k}"
    C = shape[1]
    params(name, [len(shape)] + list(shape) + [0] * (5 - len(shape)) + [hw, hb, training, momentum, eps, hr, scale, offset])
    x = leaf(inp(shape, 100 + k, scale, offset))
    w = leaf(inp((C,), 200 + k)) if hw else None
    b = leaf(inp((C,), 300 + k)) if hb else None
    rm = inp((C,), 400 + k, 0.25) if hr else None
    rv = inp((C,), 500 + k, 0.25, 1.0) if hr else None
    out = F.batch_norm(x, rm, rv, w, b, bool(training), momentum, eps)
    put(name + "/out", out)
    if hr:
        put(name + "/rm", rm)
        put(name + "/rv", rv)
    ins = [x] + ([w] if hw else []) + ([b] if hb else [])
    grads(name, out, ins, ["x"] + (["w"] if hw else []) + (["b"] if hb else []))

# ------------------------------------------------------------------------------ layer_norm
# input shape, number of normalised dims, has weight, has bias, eps
ln_cases = [((4, 6), 1, 1, 1, 1e-5), ((2, 3, 8), 2, 1, 1, 1e-5), ((3, 100), 1, 0, 1, 1e-3), ((2, 2, 3, 4), 3, 1, 0, 1e-5),
            ((5, 7), 1, 0, 0, 1e-5), ((2, 3, 70), 1, 1, 1, 1e-5)]
for k, (shape, nd, hw, hb, eps) in enumerate(ln_cases):
    name = f"ln/{k}"
    ns = shape[len(shape) - nd:]
    params(name, [len(shape)] + list(shape) + [0] * (4 - len(shape)) + [nd, hw, hb, eps])
    x = leaf(inp(shape, 600 + k, 2.0, 0.5))
    w = leaf(inp(ns, 700 + k)) if hw else None
    b = leaf(inp(ns, 800 + k)) if hb else None
    out = F.layer_norm(x, ns, w, b, eps)
    put(name + "/out", out)
    ins = [x] + ([w] if hw else []) + ([b] if hb else [])
    grads(name, out, ins, ["x"] + (["w"] if hw else []) + (["b"] if hb else []))

# ------------------------------------------------------------------------------ group_norm
# (PyTorch 1.13 fails in group_norm backward with a weight and no bias: "tensor does not have a device")
gn_cases = [((2, 6, 5), 3, 1, 1, 1e-5), ((3, 4, 4, 4), 2, 1, 1, 1e-5), ((2, 4), 4, 0, 0, 1e-3), ((1, 6, 3, 2), 1, 1, 1, 1e-5),
            ((2, 8, 10, 10), 4, 1, 1, 1e-5)]
for k, (shape, G, hw, hb, eps) in enumerate(gn_cases):
    name = f"gn/{k}"
    C = shape[1]
    params(name, [len(shape)] + list(shape) + [0] * (4 - len(shape)) + [G, hw, hb, eps])
    x = leaf(inp(shape, 900 + k, 2.0, -0.5))
    w = leaf(inp((C,), 1000 + k)) if hw else None
    b = leaf(inp((C,), 1100 + k)) if hb else None
    out = F.group_norm(x, G, w, b, eps)
    put(name + "/out", out)
    ins = [x] + ([w] if hw else []) + ([b] if hb else [])
    grads(name, out, ins, ["x"] + (["w"] if hw else []) + (["b"] if hb else []))

# ------------------------------------------------------------------------------ instance_norm
in_cases = [((2, 3, 6), 1, 1, 1), ((2, 2, 4, 5), 0, 1, 0), ((3, 2, 5), 1, 0, 1)]
for k, (shape, hw, hr, use_input_stats) in enumerate(in_cases):
    name = f"in/{k}"
    C = shape[1]
    params(name, [len(shape)] + list(shape) + [0] * (4 - len(shape)) + [hw, hr, use_input_stats])
    x = leaf(inp(shape, 1200 + k, 2.0, 0.25))
    w = leaf(inp((C,), 1300 + k)) if hw else None
    b = leaf(inp((C,), 1400 + k)) if hw else None
    rm = inp((C,), 1500 + k, 0.25) if hr else None
    rv = inp((C,), 1600 + k, 0.25, 1.0) if hr else None
    out = F.instance_norm(x, rm, rv, w, b, bool(use_input_stats), 0.2, 1e-5)
    put(name + "/out", out)
    if hr:
        put(name + "/rm", rm)
        put(name + "/rv", rv)
    ins = [x] + ([w, b] if hw else [])
    grads(name, out, ins, ["x"] + (["w", "b"] if hw else []))

# ------------------------------------------------------------------------------ embedding
idx_a = torch.tensor([[1, 3, 3, 0], [9, 3, 1, 1], [2, 2, 2, 7]], dtype=torch.int64)
put("emb/idx", idx_a)
# padding_idx (or none), max_norm (or 0: none), norm_type, scale_grad_by_freq
emb_cases = [(None, 0, 2.0, 0), (3, 0, 2.0, 0), (-1, 0, 2.0, 1), (None, 1.5, 2.0, 0), (2, 2.0, 1.0, 1), (None, 0.5, 3.0, 0)]
for k, (pad, max_norm, norm_type, freq) in enumerate(emb_cases):
    name = f"emb/{k}"
    params(name, [-100 if pad is None else pad, max_norm, norm_type, freq])
    w = inp((10, 5), 1700 + k, 1.0)
    w.requires_grad_(True)
    out = F.embedding(idx_a, w, pad, max_norm if max_norm else None, norm_type, bool(freq))
    put(name + "/out", out)
    put(name + "/w_after", w.detach())  # max_norm renormalises rows in place
    grads(name, out, [w], ["w"])

# ------------------------------------------------------------------------------ pad
# shape, pads, mode, value
pad_cases = [
    ((2, 3), [1, 2], "constant", 0.0),
    ((2, 3, 4), [2, 1, 0, 3], "constant", 1.5),
    ((2, 3, 4), [-1, 2, 1, -2], "constant", 0.0),
    ((3, 4, 2), [1, 1, 1, 1, 2, 0], "constant", -1.0),
    ((2, 5), [2, 3], "reflect", 0.0),
    ((1, 2, 5), [4, 1], "reflect", 0.0),
    ((2, 3, 4), [1, 2, 2, 1], "reflect", 0.0),
    ((1, 2, 4, 5), [3, 0, 3, 1], "reflect", 0.0),
    ((1, 2, 3, 4, 5), [1, 1, 2, 0, 1, 2], "reflect", 0.0),
    ((2, 4), [-1, 2], "reflect", 0.0),
    ((2, 3, 4), [2, 3], "replicate", 0.0),
    ((2, 3, 4), [3, 1, 1, 4], "replicate", 0.0),
    ((1, 2, 3, 3, 2), [2, 1, 0, 2, 1, 1], "replicate", 0.0),
    ((2, 4), [-1, 2], "replicate", 0.0),
    ((1, 2, 5), [2, 3], "circular", 0.0),
    ((1, 2, 3, 4), [4, 1, 1, 3], "circular", 0.0),
    ((1, 2, 2, 3, 4), [1, 2, 0, 1, 2, 0], "circular", 0.0),
    ((1, 2, 5), [-1, 2], "circular", 0.0),
    ((1, 2, 5), [2, -2], "circular", 0.0),
]
for k, (shape, pads, mode, value) in enumerate(pad_cases):
    name = f"pad/{k}"
    modes = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}
    params(name, [len(shape)] + list(shape) + [0] * (5 - len(shape)) + [len(pads)] + pads + [0] * (6 - len(pads)) +
           [modes[mode], value])
    x = leaf(inp(shape, 1800 + k))
    out = F.pad(x, pads, mode=mode, value=value) if mode == "constant" else F.pad(x, pads, mode=mode)
    put(name + "/out", out)
    grads(name, out, [x], ["x"])

# ------------------------------------------------------------------------------ normalize
norm_cases = [((4, 5), 2.0, 1), ((3, 4, 2), 1.0, 1), ((3, 4, 2), 3.0, -1), ((5, 3), math.inf, 0), ((2, 3, 4), 2.0, 2)]
for k, (shape, p, dim) in enumerate(norm_cases):
    name = f"normalize/{k}"
    params(name, [len(shape)] + list(shape) + [0] * (3 - len(shape)) + [p, dim])
    x = leaf(inp(shape, 1900 + k))
    out = F.normalize(x, p, dim)
    put(name + "/out", out)
    grads(name, out, [x], ["x"])

ref.save()
