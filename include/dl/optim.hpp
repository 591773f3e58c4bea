// dl/optim.hpp — dl::optim: typed optimizers (SGD, Adam, AdamW, Adamax, NAdam, RAdam, Adagrad,
// Adadelta, RMSprop, Rprop, ASGD, LBFGS) with parameter groups and state dicts, each step one fused
// pass per parameter; and the learning-rate schedulers. One header per algorithm under optim/
// (optim/adam.hpp, ...), the schedulers under optim/schedulers/ (all of them: optim/lr_scheduler.hpp).
//
//   namespace optim = dl::optim;
//   optim::SGD opt(net.parameters(), {.lr = 0.01, .momentum = 0.9});
//   optim::StepLR sched(opt, {.step_size = 30, .gamma = 0.1});
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); }  sched.step();
#pragma once

#include "optim/adadelta.hpp"
#include "optim/adagrad.hpp"
#include "optim/adam.hpp"
#include "optim/adamax.hpp"
#include "optim/adamw.hpp"
#include "optim/asgd.hpp"
#include "optim/lbfgs.hpp"
#include "optim/lr_scheduler.hpp"
#include "optim/nadam.hpp"
#include "optim/optimizer.hpp"
#include "optim/radam.hpp"
#include "optim/rmsprop.hpp"
#include "optim/rprop.hpp"
#include "optim/sgd.hpp"
#include "optim/sparse_adam.hpp"
