#!/usr/bin/python3
"""Writes tests/data/optim_double_ref.bin: NAdam and ASGD trajectories of float64 parameters with
float64 as PyTorch's default dtype, for tests/optim.cpp.

Run with Debian's PyTorch 1.13:  /usr/bin/python3 tests/gen_optim_double_reference.py

NAdam keeps mu_product, and ASGD eta and mu, in 0-d tensors of the default dtype: a float64 user
(torch.set_default_dtype(torch.float64)) gets them in double, which is what dl::optim does for
Tensor<double> parameters (tests/gen_optim_reference.py records PyTorch 2 with the default float32,
which is what float parameters get). The cases, the parameters and the gradients are that script's.

PyTorch 1.13's NAdam multiplies mu_product_next by mu twice (`mu_product * mu * mu_next`); PyTorch 2
computes `mu_product * mu_next`. The NAdam cases here run 1.13's own step function with that one
expression as PyTorch 2 has it (the text of the function is patched at run time, nothing else
changes). 1.13 has no decoupled_weight_decay or maximize for NAdam, so the third NAdam case of the
float32 script has no float64 twin here.
"""
import inspect
import os
import sys
import textwrap

import torch
import torch.optim.nadam as nadam_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

src = textwrap.dedent(inspect.getsource(nadam_module._single_tensor_nadam))
assert "mu_product_next = mu_product * mu * mu_next" in src, "this PyTorch's NAdam is not 1.13's"
exec(compile(src.replace("mu_product * mu * mu_next", "mu_product * mu_next"), "nadam_pt2", "exec"), nadam_module.__dict__)

STEPS = 20
SHAPES = [(3, 4), (5,)]


def grad_of(p, i, t):
    """tests/gen_optim_reference.py's gradient (tests/optim.cpp's grad_of)."""
    return p * p * 0.3 - p * det(p.shape, 50 + i, p.dtype) + det(p.shape, 100 + 7 * t + i, p.dtype) * 0.5


torch.set_default_dtype(torch.float64)
ref = Writer("optim_double_ref.bin")
O = torch.optim
cases = {
    "nadam": lambda ps: O.NAdam(ps, foreach=False),
    "nadam_wd": lambda ps: O.NAdam(ps, lr=0.01, weight_decay=0.1, momentum_decay=0.01, foreach=False),
    "asgd": lambda ps: O.ASGD(ps, lr=0.05, foreach=False),
    "asgd_options": lambda ps: O.ASGD(ps, lr=0.05, lambd=0.1, alpha=0.5, t0=5, weight_decay=0.1, maximize=True, foreach=False),
}
for name, make in cases.items():
    ps = [det(s, i + 1, torch.float64).requires_grad_(True) for i, s in enumerate(SHAPES)]
    opt = make(ps)
    for t in range(1, STEPS + 1):
        with torch.no_grad():
            for i, p in enumerate(ps):
                p.grad = None if (i == 1 and t == 5) else grad_of(p.detach(), i, t)
        opt.step()
        for i, p in enumerate(ps):
            ref.put(f"{name}/f64/{t}/p{i}", p)
            if t in (1, 10, STEPS):
                for k, v in opt.state[p].items():
                    assert torch.as_tensor(v).dtype == torch.float64 or k == "step" or torch.as_tensor(v).numel() > 1
                    ref.put(f"{name}/f64/{t}/s{i}/{k}", torch.as_tensor(v).to(torch.float64))
ref.save()
