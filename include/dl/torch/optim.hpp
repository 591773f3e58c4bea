// dl/torch/optim.hpp — libtorch's optimizer spellings (namespace torch::optim; see dl/torch.hpp):
//
//   torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
//   torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
//   torch::optim::SGD plain(net->parameters(), /*lr=*/0.1);
//
// Each `XOptions` is dl's options struct (dl::optim::XOptions, so it passes wherever dl's does) with
// libtorch's chainable setter and getter per field, generated from the field list dl's optimizer
// header declares (DL_X_FIELDS); its constructor takes the learning rate. Each optimizer is dl's
// float optimizer, also built from a learning rate alone.
#pragma once

#include <tuple>
#include <utility>
#include <vector>

#include "core.hpp"

#define DL_TORCH_OPTIM_SETTER_(type, name, value)                 \
  auto name(const ::torch::optim::detail::arg_t<type>& v)->decltype(*this) { \
    Base::name = v;                                               \
    return *this;                                                 \
  }                                                               \
  const type& name() const noexcept { return Base::name; }

#define DL_TORCH_OPTIMIZER_(Name, FIELDS)                                                               \
  struct Name##Options : dl::optim::Name##Options {                                                     \
    using Base = dl::optim::Name##Options;                                                              \
    Name##Options(double lr = Base{}.lr) { Base::lr = lr; } /* NOLINT: implicit, as libtorch's */      \
    FIELDS(DL_TORCH_OPTIM_SETTER_)                                                                      \
  };                                                                                                    \
  class Name : public dl::optim::Name<float> {                                                          \
   public:                                                                                              \
    Name(std::vector<Tensor> params, const Name##Options& options = {})                                 \
        : dl::optim::Name<float>(std::move(params), options) {}                                         \
    Name(std::vector<typename dl::optim::Name<float>::GroupSpec> groups, const Name##Options& options = {}) \
        : dl::optim::Name<float>(std::move(groups), options) {}                                         \
  };

namespace torch::optim {

using dl::optim::Optimizer;
using Pair = dl::optim::Pair;

namespace detail {
/// A pair argument as libtorch's setters take it: betas({0.9, 0.999}) or betas(std::make_tuple(0.9, 0.999)).
struct PairArg {
  Pair value;
  PairArg(double first, double second) : value(first, second) {}
  PairArg(const Pair& p) : value(p) {}                                                    // NOLINT
  PairArg(const std::tuple<double, double>& t) : value(std::get<0>(t), std::get<1>(t)) {}  // NOLINT
  operator const Pair&() const { return value; }                                          // NOLINT
};
template <class T>
struct Arg {
  using type = T;
};
template <>
struct Arg<Pair> {
  using type = PairArg;
};
template <class T>
using arg_t = typename Arg<T>::type;
}  // namespace detail

DL_TORCH_OPTIMIZER_(SGD, DL_SGD_FIELDS)
DL_TORCH_OPTIMIZER_(Adam, DL_ADAM_FIELDS)
DL_TORCH_OPTIMIZER_(AdamW, DL_ADAMW_FIELDS)
DL_TORCH_OPTIMIZER_(Adagrad, DL_ADAGRAD_FIELDS)
DL_TORCH_OPTIMIZER_(RMSprop, DL_RMSPROP_FIELDS)
DL_TORCH_OPTIMIZER_(Adamax, DL_ADAMAX_FIELDS)
DL_TORCH_OPTIMIZER_(Adadelta, DL_ADADELTA_FIELDS)
DL_TORCH_OPTIMIZER_(NAdam, DL_NADAM_FIELDS)
DL_TORCH_OPTIMIZER_(RAdam, DL_RADAM_FIELDS)
DL_TORCH_OPTIMIZER_(ASGD, DL_ASGD_FIELDS)
DL_TORCH_OPTIMIZER_(Rprop, DL_RPROP_FIELDS)


/// libtorch's StepLR(optimizer, step_size, gamma): the learning rate times gamma every step_size epochs.
class StepLR : public dl::optim::StepLR {
 public:
  StepLR(Optimizer& optimizer, unsigned step_size, double gamma = 0.1)
      : dl::optim::StepLR(optimizer, {.step_size = int64_t(step_size), .gamma = gamma}) {}
};

}  // namespace torch::optim

#undef DL_TORCH_OPTIMIZER_
#undef DL_TORCH_OPTIM_SETTER_
