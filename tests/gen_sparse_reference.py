#!/usr/bin/python3
"""Writes tests/data/sparse_ref.bin and tests/data/sparse_print.txt, the PyTorch references of
tests/sparse.cpp: sparse COO tensors (coalesce, to_dense, add, printing), the sparse gradient of
nn.Embedding(sparse=True), and the trajectories of SparseAdam, SGD and Adagrad stepping with it.
Run with Debian's PyTorch: /usr/bin/python3 tests/gen_sparse_reference.py"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

ref = Writer("sparse_ref.bin")
prints = []

# ---------------------------------------------------------------------------- COO tensors
a = torch.sparse_coo_tensor(torch.tensor([[0, 2, 0, 3, 2]]), det([5, 3], 1).float(), (5, 3))
ca = a.coalesce()
ref.put("coo1/indices", ca.indices())
ref.put("coo1/values", ca.values())
ref.put("coo1/dense", a.to_dense())
b = torch.sparse_coo_tensor(torch.tensor([[1, 0, 1, 1], [2, 1, 2, 0]]), det([4], 2).float(), (2, 3))
cb = b.coalesce()
ref.put("coo2/indices", cb.indices())
ref.put("coo2/values", cb.values())
ref.put("coo2/dense", b.to_dense())
c = torch.sparse_coo_tensor(torch.tensor([[4, 2]]), det([2, 3], 3).float(), (5, 3)).coalesce()
s = ca + c
ref.put("sum/indices", s.indices())
ref.put("sum/values", s.values())
ref.put("sum/coalesced", torch.tensor([int(s.is_coalesced())]))
s2 = a + c  # an uncoalesced operand: PyTorch's merge walk
ref.put("sum2/indices", s2._indices())
ref.put("sum2/values", s2._values())
prints.append(("coo1", str(a)))
prints.append(("coo1_coalesced", str(ca)))
prints.append(("coo2_double", str(torch.sparse_coo_tensor(b._indices(), b._values().double(), (2, 3)))))

# ---------------------------------------------------------------------------- Embedding(sparse=True)
emb = nn.Embedding(10, 4, padding_idx=1, sparse=True)
with torch.no_grad():
    emb.weight.copy_(det([10, 4], 4).float())
idx = torch.tensor([[1, 3, 3], [7, 1, 0]])
out = emb(idx)
(out * det(out.shape, 999).float()).sum().backward()
g = emb.weight.grad
ref.put("emb/indices", g._indices())
ref.put("emb/values", g._values())
idx2 = torch.tensor([3, 9])
out2 = emb(idx2)
(out2 * det(out2.shape, 998).float()).sum().backward()
g = emb.weight.grad
ref.put("emb/acc_indices", g._indices())
ref.put("emb/acc_values", g._values())
ref.put("emb/acc_coalesced", torch.tensor([int(g.is_coalesced())]))
prints.append(("emb_repr", repr(emb)))

# EmbeddingBag(sparse=True): one row per looked-up index (padding left out), the bag's gradient.
bag = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2, sparse=True)
with torch.no_grad():
    bag.weight.copy_(det([10, 3], 8).float())
o = bag(torch.tensor([4, 2, 4, 7, 1, 9]), torch.tensor([0, 2, 2, 5]), per_sample_weights=det([6], 9).float())
(o * det(o.shape, 994).float()).sum().backward()
ref.put("bag_sum/indices", bag.weight.grad._indices())
ref.put("bag_sum/values", bag.weight.grad._values())
bag = nn.EmbeddingBag(10, 3, mode="mean", sparse=True)
with torch.no_grad():
    bag.weight.copy_(det([10, 3], 8).float())
o = bag(torch.tensor([[4, 2, 4], [7, 1, 9]]))
(o * det(o.shape, 993).float()).sum().backward()
ref.put("bag_mean/indices", bag.weight.grad._indices())
ref.put("bag_mean/values", bag.weight.grad._values())

# A tied weight: the sparse gradient meets a dense one and the sum is dense.
tied = nn.Embedding(6, 3, sparse=True)
with torch.no_grad():
    tied.weight.copy_(det([6, 3], 6).float())
o = tied(torch.tensor([0, 4, 4]))
((o * det(o.shape, 996).float()).sum() + (tied.weight * det([6, 3], 995).float()).sum()).backward()
ref.put("tied/grad", tied.weight.grad)
ref.put("tied/is_sparse", torch.tensor([int(tied.weight.grad.is_sparse)]))

# ---------------------------------------------------------------------------- optimizers
STEPS = [torch.tensor([[0, 3, 3], [11, 5, 0]]), torch.tensor([[7, 7, 2]]), torch.tensor([[3, 11], [4, 4]]), torch.tensor([[1, 0, 1, 9]])]
CASES = [
    ("sparse_adam", lambda p: torch.optim.SparseAdam(p)),
    ("sparse_adam_opts", lambda p: torch.optim.SparseAdam(p, lr=0.05, betas=(0.8, 0.95), eps=1e-6, maximize=True)),
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.1)),
    ("sgd_maximize", lambda p: torch.optim.SGD(p, lr=0.05, maximize=True)),
    ("adagrad", lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
    ("adagrad_maximize", lambda p: torch.optim.Adagrad(p, lr=0.2, eps=1e-6, maximize=True)),
]
for name, make in CASES:
    m = nn.Embedding(12, 5, sparse=True)
    with torch.no_grad():
        m.weight.copy_(det([12, 5], 7).float())
    opt = make(m.parameters())
    for k, x in enumerate(STEPS):
        opt.zero_grad()
        y = m(x)
        (y * det(y.shape, 900 + k).float()).sum().backward()
        opt.step()
        ref.put(f"{name}/w{k}", m.weight.detach())

ref.save()
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sparse_print.txt")
with open(path, "w") as f:
    for name, text in prints:
        f.write(f"{name}\n{text}\n%%\n")
print(f"wrote {len(prints)} printouts to {path}")
