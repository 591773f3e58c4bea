// dl/compiled.hpp — the instantiations libdl_kernels holds in compiled mode (DL_COMPILED_KERNELS,
// see dl/config.hpp): `extern template` in a user's translation unit, so it does not compile them,
// explicit instantiation definitions in the library's (DL_BUILDING_KERNELS). Included last by
// dl/dl.hpp; without DL_COMPILED_KERNELS it declares nothing.
//
// What is listed: the float instantiations that every training program reaches through nn, optim
// and data (optimizers, cross entropy, products) and whose bodies are out of line (an inline body
// would still be instantiated for inlining, saving nothing). A program that uses other types or
// ops compiles those itself, as in header-only mode.
#pragma once

#include "config.hpp"

#if defined(DL_COMPILED_KERNELS)

// One optimizer: the algorithm and its OptimizerBase (an instantiation of a derived class does
// not instantiate its base's members).
#define DL_INSTANTIATE_OPTIMIZER(Name, StateT, T)                                                          \
  DL_EXTERN_TEMPLATE(optim, class dl::optim::OptimizerBase<dl::optim::Name<T>, T, dl::optim::Name##Options, \
                                                           dl::optim::Name##GroupOptions, StateT<T>>)       \
  DL_EXTERN_TEMPLATE(optim, class dl::optim::Name<T>)

DL_INSTANTIATE_OPTIMIZER(SGD, dl::optim::SGDState, float)
DL_INSTANTIATE_OPTIMIZER(Adam, dl::optim::AdamState, float)
DL_INSTANTIATE_OPTIMIZER(AdamW, dl::optim::AdamState, float)
DL_INSTANTIATE_OPTIMIZER(RMSprop, dl::optim::RMSpropState, float)
DL_INSTANTIATE_OPTIMIZER(Adagrad, dl::optim::AdagradState, float)

#undef DL_INSTANTIATE_OPTIMIZER
#endif
