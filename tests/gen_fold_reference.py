#!/usr/bin/python3
"""Writes tests/data/fold_ref.bin: PyTorch's F.unfold and F.fold for tests/functional_conv.cpp, with
kernel sizes, dilations, paddings and strides (square and rectangular, overlapping and gapped blocks),
batched and unbatched inputs.

Run with Debian's PyTorch (1.13, CPU):  /usr/bin/python3 tests/gen_fold_reference.py
Inputs are det(shape, 80 * k) on both sides. Each case stores its parameters ("unfold/<k>/params" or
"fold/<k>/params": the input's rank and shape, then kernel (h, w), dilation, padding, stride and, for
fold, output_size), its output in float64 and the gradient of loss = (out * det(out.shape, 999)).sum().
"""
import torch
import torch.nn.functional as F

from refbin import Writer, det

# (input shape, kernel, dilation, padding, stride)
unfold_cases = [
    ([2, 3, 5, 6], (2, 2), (1, 1), (0, 0), (1, 1)),
    ([1, 2, 7, 5], (3, 2), (1, 1), (1, 0), (2, 1)),     # rectangular kernel, padding on one dim
    ([2, 1, 9, 8], (2, 3), (2, 1), (1, 2), (1, 3)),     # dilation, gaps between blocks
    ([3, 4, 4], (2, 2), (1, 1), (1, 1), (2, 2)),        # unbatched
    ([1, 2, 6, 6], (6, 6), (1, 1), (0, 0), (1, 1)),     # one block
    ([2, 2, 5, 4], (1, 1), (1, 1), (0, 0), (2, 1)),     # 1x1 kernel, strided
]
# (input shape, output_size, kernel, dilation, padding, stride)
fold_cases = [
    ([2, 12, 20], (5, 6), (2, 2), (1, 1), (0, 0), (1, 1)),   # overlapping blocks add up
    ([1, 12, 16], (7, 5), (3, 2), (1, 1), (1, 0), (2, 1)),
    ([2, 6, 36], (9, 8), (2, 3), (2, 1), (1, 2), (1, 3)),
    ([8, 9], (4, 4), (2, 2), (1, 1), (1, 1), (2, 2)),        # unbatched
    ([1, 8, 4], (4, 4), (2, 2), (1, 1), (0, 0), (2, 2)),     # blocks that tile the image
]

ref = Writer("fold_ref.bin")
for k, (shape, kernel, dil, pad, stride) in enumerate(unfold_cases):
    name = f"unfold/{k}"
    ref.params(name, [len(shape), *shape, *kernel, *dil, *pad, *stride])
    x = det(shape, 80 * k).requires_grad_(True)
    out = F.unfold(x, kernel, dilation=dil, padding=pad, stride=stride)
    ref.put(name + "/out", out)
    ref.grads(name, out, [x], ["x"])
for k, (shape, size, kernel, dil, pad, stride) in enumerate(fold_cases):
    name = f"fold/{k}"
    ref.params(name, [len(shape), *shape, *kernel, *dil, *pad, *stride, *size])
    x = det(shape, 80 * k + 7).requires_grad_(True)
    out = F.fold(x, size, kernel, dilation=dil, padding=pad, stride=stride)
    ref.put(name + "/out", out)
    ref.grads(name, out, [x], ["x"])
ref.save()
