#!/usr/bin/python3
"""Writes tests/data/interpolate_ref.bin: PyTorch's F.interpolate for tests/functional_conv.cpp, every
mode (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area) with sizes and scale
factors, align_corners and recompute_scale_factor, growing and shrinking.

Run with Debian's PyTorch (1.13, CPU):  /usr/bin/python3 tests/gen_interpolate_reference.py
Inputs are det(shape, 70 * k) on both sides. Each case stores its parameters ("interp/<k>/params":
mode, align_corners (-1 unset), recompute_scale_factor (-1 unset), 1 for a size or 0 for a scale
factor, the input's rank, its shape, the number of size or scale values and the values), its
output computed in float64 and in float32 (PyTorch's float kernels compute indices and weights in
float, as dl's), and the gradient of loss = (out * det(out.shape, 999)).sum() in float64.
"""
import torch
import torch.nn.functional as F

from refbin import Writer, det

MODES = ["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"]

# (mode, input shape, size or None, scale_factor or None, align_corners, recompute_scale_factor)
cases = [
    ("nearest", [2, 3, 5], None, [2.0], None, None),             # out == 2 * in: i >> 1
    ("nearest", [1, 2, 5, 7], [8, 3], None, None, None),         # growing one dim, shrinking the other
    ("nearest", [1, 2, 4, 5, 3], None, [1.5, 0.5, 2.0], None, None),
    ("nearest", [2, 1, 6, 9], None, [0.7], None, True),          # recomputed: in / out
    ("nearest-exact", [1, 2, 5, 7], [8, 3], None, None, None),
    ("nearest-exact", [2, 2, 7], None, [1.7], None, None),
    ("linear", [2, 3, 5], None, [2.5], None, None),
    ("linear", [1, 2, 6], [7], None, True, None),
    ("linear", [1, 2, 9], [4], None, False, None),
    ("bilinear", [2, 2, 4, 5], None, [2.0, 1.5], None, None),
    ("bilinear", [1, 3, 4, 3], [7, 5], None, True, None),
    ("bilinear", [1, 2, 8, 7], None, [0.6], False, True),
    ("bilinear", [1, 1, 6, 5], [3, 2], None, None, None),
    ("bilinear", [1, 2, 3, 4], [1, 6], None, True, None),        # one output row with align_corners
    ("bicubic", [1, 2, 4, 5], [9, 6], None, False, None),
    ("bicubic", [2, 1, 3, 4], None, [2.0], True, None),
    ("bicubic", [1, 2, 9, 8], None, [0.7], None, None),
    ("trilinear", [1, 2, 3, 4, 2], None, [2.0], None, None),
    ("trilinear", [1, 1, 2, 3, 4], [3, 5, 4], None, True, None),
    ("area", [1, 2, 7, 9], [3, 5], None, None, None),
    ("area", [2, 3, 8], None, [0.5], None, None),                # area with a scale factor: recomputed
    ("area", [1, 2, 5, 4, 6], [2, 3, 2], None, None, None),
    ("area", [1, 1, 4, 3], [6, 5], None, None, None),            # growing
]

ref = Writer("interpolate_ref.bin")
for k, (mode, shape, size, scale, align, recompute) in enumerate(cases):
    name = f"interp/{k}"
    vals = size if size is not None else scale
    ref.params(name, [MODES.index(mode), -1 if align is None else int(align), -1 if recompute is None else int(recompute),
                      1 if size is not None else 0, len(shape), *shape, len(vals), *vals])
    x = det(shape, 70 * k).requires_grad_(True)
    one = lambda v: v[0] if v is not None and len(v) == 1 else v  # noqa: E731 (one number: every dim)
    kw = dict(size=one(size), scale_factor=one(scale), mode=mode, align_corners=align, recompute_scale_factor=recompute)
    out = F.interpolate(x, **kw)
    ref.put(name + "/out", out)
    ref.put(name + "/out32", F.interpolate(det(shape, 70 * k).float(), **kw))
    ref.grads(name, out, [x], ["x"])
ref.save()
