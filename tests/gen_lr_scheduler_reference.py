#!/opt/torch2/bin/python
"""Writes tests/data/lr_scheduler_ref.bin: PyTorch's learning-rate schedules for tests/lr_scheduler.cpp.

Run with the PyTorch 2.x install (the schedulers' 2.x definitions; Debian's 1.13 differs):
    /opt/torch2/bin/python tests/gen_lr_scheduler_reference.py
Every case drives an SGD optimizer with two parameter groups (lr 0.1 and 0.05, momentum 0.9) and
stores "<case>/lr" [steps + 1, 2]: get_last_lr() after construction and after each step; the
cyclic schedulers also store the groups' momentum ("<case>/momentum"), ReduceLROnPlateau its metric
sequence ("<case>/metric"), CosineAnnealingWarmRestarts with explicit epochs the epochs given
("<case>/epochs", -1 for a plain step()). The C++ test builds the same schedulers by case name.
"""
import math
import warnings

import torch
from torch.optim import SGD, Adam
from torch.optim import lr_scheduler as S

from refbin import Writer, det

warnings.filterwarnings("ignore")
ref = Writer("lr_scheduler_ref.bin")
STEPS = 100


def make_opt(lrs=(0.1, 0.05), initial_lrs=None):
    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    opt = SGD(groups, lr=lrs[0], momentum=0.9)
    if initial_lrs is not None:
        for g, lr0 in zip(opt.param_groups, initial_lrs):
            g["initial_lr"] = lr0
    return opt


def momenta(opt):
    """SGD's momentum, or Adam's beta1 (what CyclicLR and OneCycleLR cycle)."""
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def record(name, opt, sched, step, steps=STEPS, momentum=False, hook=None):
    """Runs step(i) for i in 0..steps-1 after construction; hook(i) before each step may change the groups."""
    lrs = [list(sched.get_last_lr())]
    moms = [momenta(opt)]
    for i in range(steps):
        if hook is not None:
            hook(i)
        step(i)
        lrs.append(list(sched.get_last_lr()))
        moms.append(momenta(opt))
    ref.put(name + "/lr", torch.tensor(lrs, dtype=torch.float64))
    if momentum:
        ref.put(name + "/momentum", torch.tensor(moms, dtype=torch.float64))


def plain(name, make, steps=STEPS, momentum=False, initial_lrs=None, lrs=(0.1, 0.05)):
    opt = make_opt(lrs, initial_lrs)
    sched = make(opt)
    record(name, opt, sched, lambda i: sched.step(), steps, momentum)


# ------------------------------------------------------------------------------ one scheduler
plain("step", lambda o: S.StepLR(o, step_size=7, gamma=0.5))
plain("step_default_gamma", lambda o: S.StepLR(o, step_size=30))
plain("multistep", lambda o: S.MultiStepLR(o, milestones=[60, 10, 25, 25], gamma=0.3))
plain("exponential", lambda o: S.ExponentialLR(o, gamma=0.97))
plain("cosine", lambda o: S.CosineAnnealingLR(o, T_max=30, eta_min=0.001))
plain("cosine_short", lambda o: S.CosineAnnealingLR(o, T_max=7))
plain("warm_restarts", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2, eta_min=1e-3))
plain("warm_restarts_mult1", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7))
plain("lambda", lambda o: S.LambdaLR(o, lr_lambda=[lambda e: 0.95**e, lambda e: 1.0 / (1 + e)]))
plain("lambda_one", lambda o: S.LambdaLR(o, lr_lambda=lambda e: 0.5 if e % 10 < 5 else 1.0))
plain("multiplicative", lambda o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.97 if e % 3 else 1.02))
plain("multiplicative_groups", lambda o: S.MultiplicativeLR(o, lr_lambda=[lambda e: 0.9, lambda e: 1.0 + 0.01 * e]))
plain("linear", lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=40))
plain("linear_default", lambda o: S.LinearLR(o))
plain("constant", lambda o: S.ConstantLR(o, factor=0.5, total_iters=20))
plain("constant_default", lambda o: S.ConstantLR(o))
plain("polynomial", lambda o: S.PolynomialLR(o, total_iters=60, power=2.0))
plain("polynomial_default", lambda o: S.PolynomialLR(o))

# CosineAnnealingWarmRestarts.step(epoch) with fractional and backward jumps, mixed with step().
for name, T_0, T_mult in (("warm_restarts_epochs", 5, 3), ("warm_restarts_epochs_mult1", 6, 1)):
    epochs = [0.0, 0.5, 1.7, 4.99, 5, 5.5, 12, 20, 19.25, 3, 64.5, 100, 2.5, -1, -1, 17, -1, 33.3, -1, -1, 150, 7.75, -1]
    opt = make_opt()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=T_0, T_mult=T_mult, eta_min=0.01)
    record(name, opt, sched, lambda i: sched.step() if epochs[i] == -1 else sched.step(epochs[i]), len(epochs))
    ref.put(name + "/epochs", torch.tensor(epochs, dtype=torch.float64))

# ------------------------------------------------------------------------------ cyclic
plain("cyclic", lambda o: S.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.2], step_size_up=8, step_size_down=12),
      momentum=True)
plain("cyclic_tri2", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="triangular2",
                                          base_momentum=[0.7, 0.75], max_momentum=0.95), momentum=True)
plain("cyclic_exp", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=6, step_size_down=4, mode="exp_range",
                                         gamma=0.97), momentum=True)
plain("cyclic_fn_cycle", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                              scale_fn=lambda x: 0.5 * (1 + math.sin(x * math.pi / 2)), scale_mode="cycle",
                                              cycle_momentum=False), momentum=True)
plain("cyclic_fn_iter", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                             scale_fn=lambda x: 0.5 * (1 + math.sin(x * math.pi / 2)),
                                             scale_mode="iterations", cycle_momentum=False), momentum=True)
# An initial_lr left by an earlier scheduler is what CyclicLR's initial step starts from.
plain("cyclic_preset", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3), momentum=True,
      initial_lrs=(0.07, 0.03))

plain("onecycle", lambda o: S.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=100), momentum=True)
plain("onecycle_linear3", lambda o: S.OneCycleLR(o, max_lr=0.5, epochs=10, steps_per_epoch=10, pct_start=0.25,
                                                 anneal_strategy="linear", three_phase=True, div_factor=10.0,
                                                 final_div_factor=100.0, base_momentum=[0.8, 0.85], max_momentum=0.9),
      momentum=True)
plain("onecycle_nomom", lambda o: S.OneCycleLR(o, max_lr=0.3, total_steps=100, pct_start=0.4, cycle_momentum=False),
      momentum=True)

# On Adam the cycled momentum is beta1.
for name, make in (("onecycle_adam", lambda o: S.OneCycleLR(o, max_lr=[0.01, 0.02], total_steps=100)),
                   ("cyclic_adam", lambda o: S.CyclicLR(o, base_lr=1e-3, max_lr=1e-2, step_size_up=7, base_momentum=0.85,
                                                        max_momentum=0.95))):
    opt = Adam([{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in (0.1, 0.05)], betas=(0.9, 0.99))
    sched = make(opt)
    record(name, opt, sched, lambda i: sched.step(), momentum=True)

# ------------------------------------------------------------------------------ ReduceLROnPlateau
noise = det((STEPS,), 11)
falling = torch.tensor([max(0.5, 1.0 - 0.01 * i) for i in range(STEPS)], dtype=torch.float64) + 0.02 * noise
plateaus = {
    "plateau_min_rel": (falling, dict(mode="min", factor=0.5, patience=3)),
    "plateau_min_abs": (falling, dict(mode="min", factor=0.5, patience=2, threshold=0.05, threshold_mode="abs", cooldown=3)),
    "plateau_max_rel": (1.0 - falling, dict(mode="max", factor=0.3, patience=4, threshold=0.01, min_lr=[0.01, 0.004])),
    "plateau_max_abs": (1.0 - falling, dict(mode="max", factor=0.5, patience=1, threshold=0.02, threshold_mode="abs",
                                            cooldown=2, min_lr=0.02, eps=0.004)),
    "plateau_default": (falling, dict()),
}
for name, (metric, kw) in plateaus.items():
    opt = make_opt()
    sched = S.ReduceLROnPlateau(opt, **kw)
    record(name, opt, sched, lambda i: sched.step(float(metric[i])))
    ref.put(name + "/metric", metric)

# ------------------------------------------------------------------------------ combinations
opt = make_opt()
sched = S.ChainedScheduler([S.ExponentialLR(opt, gamma=0.97), S.StepLR(opt, step_size=10, gamma=0.5)])
record("chained", opt, sched, lambda i: sched.step())

opt = make_opt()
sched = S.ChainedScheduler([S.ConstantLR(opt, factor=0.1, total_iters=5), S.CosineAnnealingLR(opt, T_max=40, eta_min=0.002)])
record("chained_constant_cosine", opt, sched, lambda i: sched.step())

opt = make_opt()
sched = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=10), S.CosineAnnealingLR(opt, T_max=90)],
                       milestones=[10])
record("sequential", opt, sched, lambda i: sched.step())

opt = make_opt()
sched = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=3), S.ExponentialLR(opt, gamma=0.9),
                             S.StepLR(opt, step_size=4, gamma=0.5)], milestones=[5, 30])
record("sequential3", opt, sched, lambda i: sched.step())

opt = make_opt()
sched = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.2, total_iters=8), S.CosineAnnealingWarmRestarts(opt, T_0=15)],
                       milestones=[8])
record("sequential_restarts", opt, sched, lambda i: sched.step())

opt = make_opt()
chain = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=4), S.ExponentialLR(opt, gamma=0.98)])
sched = S.SequentialLR(opt, [chain, S.CosineAnnealingLR(opt, T_max=50)], milestones=[20])
record("sequential_nested", opt, sched, lambda i: sched.step())


# ------------------------------------------------------------------------------ a group lr changed by hand
def changed(name, make, changes):
    opt = make_opt()
    sched = make(opt)

    def hook(i):
        for step, group, lr in changes:
            if i == step:
                opt.param_groups[group]["lr"] = lr

    record(name, opt, sched, lambda i: sched.step(), hook=hook)


changed("changed_exponential", lambda o: S.ExponentialLR(o, gamma=0.95), [(40, 0, 0.3), (60, 1, 0.01)])
changed("changed_cosine", lambda o: S.CosineAnnealingLR(o, T_max=50, eta_min=0.001), [(20, 0, 0.2)])
changed("changed_step", lambda o: S.StepLR(o, step_size=10, gamma=0.5), [(15, 1, 0.5)])
changed("changed_lambda", lambda o: S.LambdaLR(o, lr_lambda=lambda e: 0.99**e), [(30, 0, 1.0)])

# ------------------------------------------------------------------------------ last_epoch >= 0 (resuming)
# The groups already have initial_lr (0.2, 0.08), as after loading an optimizer's state dict.
resume_lr0 = (0.2, 0.08)
plain("resume_step", lambda o: S.StepLR(o, step_size=5, gamma=0.5, last_epoch=12), initial_lrs=resume_lr0)
plain("resume_multistep", lambda o: S.MultiStepLR(o, milestones=[15, 20], last_epoch=12), initial_lrs=resume_lr0)
plain("resume_exponential", lambda o: S.ExponentialLR(o, gamma=0.9, last_epoch=12), initial_lrs=resume_lr0)
plain("resume_cosine", lambda o: S.CosineAnnealingLR(o, T_max=20, last_epoch=12), initial_lrs=resume_lr0)
plain("resume_warm_restarts", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2, last_epoch=12),
      initial_lrs=resume_lr0)
plain("resume_linear", lambda o: S.LinearLR(o, last_epoch=3), initial_lrs=resume_lr0)
plain("resume_polynomial", lambda o: S.PolynomialLR(o, total_iters=30, last_epoch=5), initial_lrs=resume_lr0)
plain("resume_lambda", lambda o: S.LambdaLR(o, lr_lambda=lambda e: 0.9**e, last_epoch=12), initial_lrs=resume_lr0)
plain("resume_cyclic", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, last_epoch=12),
      initial_lrs=resume_lr0, momentum=True)


def onecycle_resumed(o):
    # PyTorch reads max_lr, min_lr and the momentum bounds back from the groups, where the first
    # run's OneCycleLR(max_lr=[5, 2]) left them (initial_lr = max_lr / 25).
    for g, m in zip(o.param_groups, (5.0, 2.0)):
        g["max_lr"], g["min_lr"] = m, g["initial_lr"] / 1e4
        g["max_momentum"], g["base_momentum"] = 0.95, 0.85
    return S.OneCycleLR(o, max_lr=[5.0, 2.0], total_steps=100, last_epoch=12)


plain("resume_onecycle", onecycle_resumed, steps=100 - 13, initial_lrs=resume_lr0, momentum=True)

ref.save()
print("torch", torch.__version__)
