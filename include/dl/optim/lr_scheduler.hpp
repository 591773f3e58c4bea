// dl/optim/lr_scheduler.hpp — learning-rate schedulers with PyTorch's names, formulas and edge
// cases (torch.optim.lr_scheduler, PyTorch 2.x): LambdaLR, MultiplicativeLR, StepLR, MultiStepLR,
// ConstantLR, LinearLR, ExponentialLR, PolynomialLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
// CyclicLR, OneCycleLR, ReduceLROnPlateau, SequentialLR and ChainedScheduler. One header per family
// under optim/schedulers/ (scheduler.hpp: the base LRScheduler); this one includes them all.
//
//   optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
//   optim::LinearLR warmup(opt, {.start_factor = 0.1, .total_iters = 5});
//   optim::CosineAnnealingLR cosine(opt, {.T_max = 95});
//   optim::SequentialLR sched(opt, {&warmup, &cosine}, {5});
//   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); sched.step(); }
#pragma once

#include "schedulers/composite.hpp"
#include "schedulers/cosine.hpp"
#include "schedulers/cyclic.hpp"
#include "schedulers/lambda.hpp"
#include "schedulers/plateau.hpp"
#include "schedulers/scheduler.hpp"
#include "schedulers/step.hpp"
