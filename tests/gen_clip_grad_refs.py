#!/usr/bin/python3
"""References for tests/nn.cpp's clip_grad_norm_ / clip_grad_value_ case (PyTorch, Debian's python3-torch):
prints the total norm and the clipped gradients for each (norm_type, max_norm) the test uses."""
import torch

G_A = [[1.5, -2.0, 0.25], [3.0, -0.5, 1.0]]
G_B = [0.1, -4.0]
a = torch.zeros(2, 3, requires_grad=True)
b = torch.zeros(2, requires_grad=True)
c = torch.zeros(1, requires_grad=True)  # no gradient: skipped
for norm_type, max_norm in [(2.0, 1.0), (1.0, 2.0), (float("inf"), 1.5), (3.0, 0.5), (2.0, 100.0)]:
    a.grad, b.grad, c.grad = torch.tensor(G_A), torch.tensor(G_B), None
    total = torch.nn.utils.clip_grad_norm_([a, b, c], max_norm, norm_type)
    print(norm_type, max_norm, total.item(), a.grad.flatten().tolist(), b.grad.tolist())
a.grad, b.grad = torch.tensor(G_A), torch.tensor(G_B)
torch.nn.utils.clip_grad_value_([a, b], 1.2)
print("value 1.2", a.grad.flatten().tolist(), b.grad.tolist())
