"""Shared by the tests/gen_*_reference.py scripts: det() inputs and the DLREF1 binary writer that
tests/refbin.hpp reads. Run the generators with Debian's PyTorch: /usr/bin/python3."""
import os
import struct

import torch


def det(shape, seed, dtype=torch.float64):
    """Values in [-2, 2): ((i + 1) * 2654435761 + seed * 97531) mod 2^32, scaled (exact in doubles)."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.int64)
    v = ((i + 1) * 2654435761 + seed * 97531) % (1 << 32)
    return (v.double() / 2.0**32 * 4 - 2).reshape(shape).to(dtype)


class Writer:
    """Collects named tensors; save() writes tests/data/<file>."""

    def __init__(self, file):
        self.file = file
        self.records = []

    def put(self, name, t):
        t = torch.as_tensor(t)
        if t.dtype in (torch.int64, torch.int32, torch.bool, torch.uint8):
            kind, data = 1, t.to(torch.int64).contiguous().numpy().tobytes()
        else:
            kind, data = 0, t.detach().to(torch.float64).contiguous().numpy().tobytes()
        self.records.append((name, kind, list(t.shape), data))

    def params(self, name, values):
        self.put(name + "/params", torch.tensor([float(v) for v in values], dtype=torch.float64))

    def grads(self, name, out, inputs, names):
        """Gradients of (out * det(out.shape, 999)).sum() with respect to inputs, as <name>/g<n>."""
        loss = (out * det(out.shape, 999, out.dtype)).sum()
        gs = torch.autograd.grad(loss, list(inputs), allow_unused=True)
        for g, n in zip(gs, names):
            self.put(f"{name}/g{n}", g if g is not None else torch.zeros(0))

    def save(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", self.file)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"DLREF1\n")
            for name, kind, shape, data in self.records:
                nb = name.encode()
                f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<BI", kind, len(shape)))
                f.write(struct.pack(f"<{len(shape)}q", *shape))
                f.write(data)
        print(f"wrote {len(self.records)} records, {os.path.getsize(path)} bytes to {path}")
