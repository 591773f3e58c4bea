#!/opt/torch2/bin/python
"""Writes tests/data/optim_ref.bin: optimizer trajectories from PyTorch 2 for tests/optim.cpp.

Run with a PyTorch 2.x (pip, in a venv outside the repository):  /opt/torch2/bin/python tests/gen_optim_reference.py
(Debian's PyTorch 1.13 lacks options the tests cover: decoupled_weight_decay, maximize for every algorithm, and
1.13's NAdam differs.)

Each case runs 20 steps on two parameters p0 [3, 4] and p1 [5] (det() values) whose gradients are set, not
computed: g_i = 0.3 p_i^2 - c_i p_i + 0.5 d_i(t), with c_i and d_i(t) det() tensors, so the gradient depends on
the trajectory and the C++ side reproduces it exactly. p1 has no gradient at step 5 (it must be skipped).
Records: "<case>/<dtype>/<t>/p<i>" after every step, "<case>/<dtype>/<t>/s<i>/<state>" at steps 1, 10 and 20.
LBFGS cases minimise a smooth function with a closure instead (see lbfgs_loss).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

ref = Writer("optim_ref.bin")
STEPS = 20
SHAPES = [(3, 4), (5,)]


def grad_of(p, i, t):
    c = det(p.shape, 50 + i, p.dtype)
    d = det(p.shape, 100 + 7 * t + i, p.dtype)
    return p * p * 0.3 - p * c + d * 0.5


def run(name, make, groups=False, lr_change=False):
    for dtype in (torch.float32, torch.float64):
        dn = "f32" if dtype == torch.float32 else "f64"
        ps = [det(s, i + 1, dtype).requires_grad_(True) for i, s in enumerate(SHAPES)]
        opt = make([{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}] if groups else ps)
        for t in range(1, STEPS + 1):
            with torch.no_grad():
                for i, p in enumerate(ps):
                    p.grad = None if (i == 1 and t == 5) else grad_of(p.detach(), i, t)
            if lr_change and t == 10:
                opt.param_groups[0]["lr"] *= 0.1
            opt.step()
            for i, p in enumerate(ps):
                ref.put(f"{name}/{dn}/{t}/p{i}", p)
                if t in (1, 10, STEPS):
                    for k, v in opt.state[p].items():
                        ref.put(f"{name}/{dn}/{t}/s{i}/{k}", torch.as_tensor(v).to(torch.float64))


O = torch.optim
cases = {
    "sgd": lambda ps: O.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: O.SGD(ps, lr=0.1, momentum=0.9),
    "sgd_dampening_wd": lambda ps: O.SGD(ps, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd_nesterov": lambda ps: O.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.02),
    "sgd_maximize": lambda ps: O.SGD(ps, lr=0.01, momentum=0.5, maximize=True),
    "adam": lambda ps: O.Adam(ps, lr=0.01),
    "adam_amsgrad": lambda ps: O.Adam(ps, lr=0.02, betas=(0.8, 0.99), amsgrad=True),
    "adam_wd_maximize": lambda ps: O.Adam(ps, lr=0.01, weight_decay=0.1, maximize=True, eps=1e-6),
    "adam_decoupled": lambda ps: O.Adam(ps, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    "adamw": lambda ps: O.AdamW(ps, lr=0.01),
    "adamw_amsgrad": lambda ps: O.AdamW(ps, lr=0.01, weight_decay=0.05, amsgrad=True, maximize=True),
    "adamax": lambda ps: O.Adamax(ps),
    "adamax_wd_maximize": lambda ps: O.Adamax(ps, lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, maximize=True),
    "nadam": lambda ps: O.NAdam(ps),
    "nadam_wd": lambda ps: O.NAdam(ps, lr=0.01, weight_decay=0.1, momentum_decay=0.01),
    "nadam_decoupled_maximize": lambda ps: O.NAdam(ps, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
    "radam": lambda ps: O.RAdam(ps, lr=0.01),
    "radam_wd": lambda ps: O.RAdam(ps, lr=0.01, weight_decay=0.1, betas=(0.9, 0.9)),
    "radam_decoupled_maximize": lambda ps: O.RAdam(ps, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
    "adagrad": lambda ps: O.Adagrad(ps, lr=0.1),
    "adagrad_options": lambda ps: O.Adagrad(ps, lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5, weight_decay=0.05,
                                            eps=1e-8, maximize=True),
    "adadelta": lambda ps: O.Adadelta(ps),
    "adadelta_options": lambda ps: O.Adadelta(ps, lr=0.5, rho=0.5, eps=1e-4, weight_decay=0.1, maximize=True),
    "rmsprop": lambda ps: O.RMSprop(ps, lr=0.01),
    "rmsprop_momentum": lambda ps: O.RMSprop(ps, lr=0.01, momentum=0.9, weight_decay=0.05),
    "rmsprop_centered": lambda ps: O.RMSprop(ps, lr=0.01, centered=True, alpha=0.9),
    "rmsprop_centered_momentum_maximize": lambda ps: O.RMSprop(ps, lr=0.01, centered=True, momentum=0.5, maximize=True),
    "rprop": lambda ps: O.Rprop(ps, lr=0.01),
    "rprop_options": lambda ps: O.Rprop(ps, lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True),
    "asgd": lambda ps: O.ASGD(ps, lr=0.05),
    "asgd_options": lambda ps: O.ASGD(ps, lr=0.05, lambd=0.1, alpha=0.5, t0=5, weight_decay=0.1, maximize=True),
}
for name, make in cases.items():
    run(name, make)
run("sgd_groups", lambda gs: O.SGD(gs, lr=0.1, momentum=0.9), groups=True, lr_change=True)
run("adam_groups", lambda gs: O.Adam(gs, lr=0.01), groups=True, lr_change=True)


# ------------------------------------------------------------------------------ LBFGS
def lbfgs_loss(ps):
    """A smooth, non-quadratic function of both parameters (Rosenbrock-like terms)."""
    a, b = ps[0].reshape(-1), ps[1]
    x, y = a[:-1], a[1:]
    return ((1 - x) ** 2).sum() + 2.0 * ((y - x * x) ** 2).sum() + ((b - 0.5) ** 4).sum() + (b * b).sum() * 0.1


lbfgs_cases = {
    "lbfgs": dict(lr=1, max_iter=5),
    "lbfgs_wolfe": dict(lr=1, max_iter=10, line_search_fn="strong_wolfe"),
    "lbfgs_history": dict(lr=0.5, max_iter=4, history_size=3, tolerance_grad=1e-9, tolerance_change=1e-12),
}
for name, kw in lbfgs_cases.items():
    for dtype in (torch.float32, torch.float64):
        dn = "f32" if dtype == torch.float32 else "f64"
        ps = [(det(s, i + 1, dtype) * 0.5).requires_grad_(True) for i, s in enumerate(SHAPES)]
        opt = O.LBFGS(ps, **kw)
        for t in range(1, 6):
            def closure():
                opt.zero_grad()
                loss = lbfgs_loss(ps)
                loss.backward()
                return loss
            loss = opt.step(closure)
            ref.put(f"{name}/{dn}/{t}/loss", torch.as_tensor(loss).detach().double())
            for i, p in enumerate(ps):
                ref.put(f"{name}/{dn}/{t}/p{i}", p)
            ref.put(f"{name}/{dn}/{t}/n_iter", torch.tensor(float(opt.state[ps[0]]["n_iter"])))
            ref.put(f"{name}/{dn}/{t}/func_evals", torch.tensor(float(opt.state[ps[0]]["func_evals"])))

ref.save()
