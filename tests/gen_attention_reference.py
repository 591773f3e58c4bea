#!/usr/bin/python3
"""Writes tests/data/attention_ref.bin and tests/data/attention_print.txt, the PyTorch references of
tests/attention.cpp (scaled dot-product attention, MultiheadAttention, the transformer layers).
Run with Debian's PyTorch: /usr/bin/python3 tests/gen_attention_reference.py

For each module case: the state dict filled with det() values ("<case>/sd/<key>"), the output(s) for
det() inputs, and the gradients of sum(out * det(999)) (+ sum(weights * det(998))) with respect to
every input ("/g<input>") and every parameter ("/g/<name>"). PyTorch 1.13 has no
F.scaled_dot_product_attention, so its cases use the definition it documents:
softmax(q k^T * scale + mask) v."""
import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

ref = Writer("attention_ref.bin")
prints = []


def inp(shape, seed):
    return det(shape, seed).float().requires_grad_(True)


def fill(m, seed):
    with torch.no_grad():
        for i, (k, v) in enumerate(m.state_dict().items()):
            v.copy_(det(v.shape, seed + i, torch.float64).float() * 0.5)
            if k.endswith("norm1.weight") or k.endswith("norm2.weight") or k.endswith("norm3.weight") or k.endswith("norm.weight"):
                v.add_(1.0)


def put_grads(name, m, loss, inputs):
    names = [n for n, _ in m.named_parameters()] if m is not None else []
    ins = [t for _, t in inputs] + (list(m.parameters()) if m is not None else [])
    gs = torch.autograd.grad(loss, ins)
    for (n, _), g in zip(inputs, gs):
        ref.put(f"{name}/g{n}", g)
    for n, g in zip(names, gs[len(inputs):]):
        ref.put(f"{name}/g/{n}", g)


# ---------------------------------------------------------------------------- scaled dot-product attention
def sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1 / math.sqrt(q.size(-1)))
    if is_causal:
        L, S = q.size(-2), k.size(-2)
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).tril().logical_not(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


def keep_mask(shape, seed):
    """A bool mask (true = attend) with every row keeping its first key."""
    m = det(shape, seed) > -0.5
    m[..., 0] = True
    return m


def sdpa_case(name, qs, ks, vs, mask=None, is_causal=False, scale=None):
    q, k, v = inp(qs, 1), inp(ks, 2), inp(vs, 3)
    out = sdpa(q, k, v, mask, is_causal, scale)
    ref.put(f"{name}/out", out)
    put_grads(name, None, (out * det(out.shape, 999).float()).sum(), [("q", q), ("k", k), ("v", v)])


sdpa_case("sdpa", (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6))
sdpa_case("sdpa_float_mask", (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), mask=det((4, 5), 7).float())
sdpa_case("sdpa_bool_mask", (2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), mask=keep_mask((2, 1, 4, 5), 8))
ref.put("sdpa_bool_mask/mask", keep_mask((2, 1, 4, 5), 8))
sdpa_case("sdpa_causal_scale", (3, 6, 4), (3, 6, 4), (3, 6, 5), is_causal=True, scale=0.3)
sdpa_case("sdpa_causal_rect", (2, 4, 8), (2, 6, 8), (2, 6, 3), is_causal=True)
sdpa_case("sdpa_broadcast", (2, 3, 4, 8), (1, 3, 5, 8), (3, 5, 6))


# ---------------------------------------------------------------------------- MultiheadAttention
def mha_case(name, m, qs, ks=None, vs=None, self_attn=False, kpm=None, attn_mask=None, average=True):
    fill(m, 300)
    for k, v in m.state_dict().items():
        ref.put(f"{name}/sd/{k}", v)
    q = inp(qs, 1)
    if self_attn:
        k = v = q
        inputs = [("q", q)]
    else:
        k, v = inp(ks, 2), inp(vs, 3)
        inputs = [("q", q), ("k", k), ("v", v)]
    out, w = m(q, k, v, key_padding_mask=kpm, need_weights=True, attn_mask=attn_mask, average_attn_weights=average)
    ref.put(f"{name}/out", out)
    ref.put(f"{name}/weights", w)
    loss = (out * det(out.shape, 999).float()).sum() + (w * det(w.shape, 998).float()).sum()
    put_grads(name, m, loss, inputs)


def pad_mask(shape, seed):
    """A bool key padding mask (true = padding) that leaves each row's first key."""
    m = det(shape, seed) > 0.8
    m[..., 0] = False
    return m


torch.manual_seed(0)
mha_case("mha_self", nn.MultiheadAttention(8, 2), (5, 3, 8), self_attn=True)
kpm_b = pad_mask((3, 6), 11)
ref.put("mha_cross/kpm", kpm_b)
mha_case("mha_cross", nn.MultiheadAttention(8, 4, kdim=6, vdim=5, batch_first=True), (3, 4, 8), (3, 6, 6), (3, 6, 5), kpm=kpm_b,
         attn_mask=det((4, 6), 12).float(), average=False)
am3 = pad_mask((3 * 2, 4, 7), 13)
kpm3 = pad_mask((3, 7), 14)
ref.put("mha_bias_kv/attn_mask", am3)
ref.put("mha_bias_kv/kpm", kpm3)
mha_case("mha_bias_kv", nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True), (4, 3, 8), (7, 3, 8), (7, 3, 8), kpm=kpm3,
         attn_mask=am3)
kpm_u = pad_mask((6,), 15)
ref.put("mha_unbatched/kpm", kpm_u)
mha_case("mha_unbatched", nn.MultiheadAttention(8, 2, bias=False), (4, 8), (6, 8), (6, 8), kpm=kpm_u)


# ---------------------------------------------------------------------------- transformer layers
def causal(n):
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


def layer_case(name, m, src_shape, mem_shape=None, **masks):
    m.train()  # dropout=0 in every case: training mode takes PyTorch's reference (non-fused) path
    fill(m, 500)
    for k, v in m.state_dict().items():
        ref.put(f"{name}/sd/{k}", v)
    src = inp(src_shape, 1)
    inputs = [("src", src)]
    for k, v in masks.items():
        if v is not None:
            ref.put(f"{name}/{k}", v)
    if mem_shape is None:
        out = m(src, **masks)
    else:
        mem = inp(mem_shape, 2)
        inputs.append(("mem", mem))
        out = m(src, mem, **masks)
    ref.put(f"{name}/out", out)
    put_grads(name, m, (out * det(out.shape, 999).float()).sum(), inputs)
    prints.append((name, str(m)))


layer_case("enc_layer", nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0), (5, 3, 8), src_mask=causal(5),
           src_key_padding_mask=pad_mask((3, 5), 21))
layer_case("enc_layer_prenorm_gelu", nn.TransformerEncoderLayer(8, 4, dim_feedforward=12, dropout=0.0, activation="gelu", batch_first=True,
                                                                norm_first=True), (2, 6, 8))
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0), 2, norm=nn.LayerNorm(8))
layer_case("encoder", enc, (5, 2, 8), mask=causal(5))
# The same encoder's state dict as torch.save writes it: dl::load reads it into a fresh encoder.
torch.save(enc.state_dict(), os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "transformer_encoder.pth"))
layer_case("dec_layer", nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0), (4, 3, 8), (6, 3, 8), tgt_mask=causal(4),
           memory_key_padding_mask=pad_mask((3, 6), 22))
dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=True, batch_first=True), 2,
                            norm=nn.LayerNorm(8))
layer_case("decoder", dec, (2, 4, 8), (2, 5, 8), tgt_mask=causal(4))
tf = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0, batch_first=True)
layer_case("transformer", tf, (2, 5, 8), (2, 4, 8), tgt_mask=causal(4), src_key_padding_mask=pad_mask((2, 5), 23))
prints.append(("mha_kdim", str(nn.MultiheadAttention(8, 2, kdim=4, vdim=6))))
ref.put("square_subsequent_mask", nn.Transformer.generate_square_subsequent_mask(4))



# ---------------------------------------------------------------------------- EmbeddingBag
def bag_case(name, m, inp_list, offsets=None, psw=None):
    fill(m, 700)
    ref.put(f"{name}/sd/weight", m.weight)
    x = torch.tensor(inp_list, dtype=torch.long)
    ref.put(f"{name}/input", x)
    off = torch.tensor(offsets, dtype=torch.long) if offsets is not None else None
    if off is not None:
        ref.put(f"{name}/offsets", off)
    w = None
    if psw:
        w = det(x.shape, 5).float().requires_grad_(True)
    out = m(x, off, per_sample_weights=w)
    ref.put(f"{name}/out", out)
    ref.put(f"{name}/weight_after", m.weight)  # max_norm renormalises rows in place
    if m.scale_grad_by_freq:
        # PyTorch's CPU embedding_bag divides by the wrong count when indices repeat a different
        # number of times (pytorch/pytorch#190063, fixed in 2026 by #190264; 1.13 has the bug), so
        # the reference is the documented rule: the gradient without the flag over each index's count.
        g, = torch.autograd.grad((nn.functional.embedding_bag(x, m.weight, off, mode=m.mode) * det(out.shape, 999).float()).sum(),
                                 [m.weight])
        counts = torch.bincount(x.reshape(-1), minlength=m.weight.shape[0]).clamp(min=1).float()
        ref.put(f"{name}/g/weight", g / counts.unsqueeze(1))
        prints.append((name, str(m)))
        return
    put_grads(name, m, (out * det(out.shape, 999).float()).sum(), [("psw", w)] if w is not None else [])
    prints.append((name, str(m)))


bag_case("bag_sum_psw", nn.EmbeddingBag(10, 3, mode="sum"), [0, 2, 4, 5, 4, 3, 2, 9], [0, 4], psw=True)
bag_case("bag_mean_2d_pad", nn.EmbeddingBag(10, 4, mode="mean", padding_idx=2), [[1, 2, 4], [2, 2, 2], [5, 6, 2]])
bag_case("bag_max_last", nn.EmbeddingBag(10, 3, mode="max", include_last_offset=True), [1, 3, 5, 7, 9, 2], [0, 2, 2, 6])
bag_case("bag_mean_freq_norm", nn.EmbeddingBag(10, 3, mode="mean", scale_grad_by_freq=True, max_norm=1.0), [1, 1, 3, 4, 1], [0, 3])

ref.save()
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "attention_print.txt"), "w") as f:
    for name, text in prints:
        f.write(f"{name}\n{text}\n%%\n")
