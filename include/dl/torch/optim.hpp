// dl/torch/optim.hpp — libtorch's optimizer spellings (namespace torch::optim; see dl/torch.hpp):
//
//   torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
//   torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
//   torch::optim::SGD plain(net->parameters(), /*lr=*/0.1);
//   for (auto& group : adam.param_groups())               // libtorch's groups: views of the optimizer's
//     static_cast<torch::optim::AdamOptions&>(group.options()).lr(1e-4);
//
// Each `XOptions` is dl's options struct (dl::optim::XOptions, so it passes wherever dl's does) with
// libtorch's chainable setter and getter per field, generated from the field list dl's optimizer
// header declares (DL_X_FIELDS); its constructor takes the learning rate. Each optimizer is dl's
// float optimizer, also built from a learning rate alone.
#pragma once

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core.hpp"

#define DL_TORCH_OPTIM_SETTER_(type, name, value)                                  \
  auto name(const ::torch::optim::detail::arg_t<type>& v)->decltype(*this) {    \
    target().name = v;                                                          \
    return *this;                                                               \
  }                                                                             \
  const type& name() const noexcept { return target().name; }
#define DL_TORCH_OPTIM_TO_GROUP_(type, name, value) g.name = o.name();

// XOptions: dl's options (a base, so it passes wherever dl's does) and libtorch's OptimizerOptions.
// An XOptions the optimizer hands out through param_groups() is a view: its setters and getters
// reach the group's own options (`static_cast<SGDOptions&>(group.options()).lr(0.01)`); a copy of a
// view is a plain value again.
#define DL_TORCH_OPTIMIZER_(Name, FIELDS)                                                                   \
  struct Name##Options : dl::optim::Name##Options, OptimizerOptions {                                       \
    using Base = dl::optim::Name##Options;                                                                  \
    Name##Options(double lr = Base{}.lr) { Base::lr = lr; } /* NOLINT: implicit, as libtorch's */          \
    Name##Options(const Name##Options& o) : Base(o.target()), OptimizerOptions() {}                        \
    Name##Options& operator=(const Name##Options& o) {                                                      \
      target() = o.target();                                                                                \
      return *this;                                                                                         \
    }                                                                                                       \
    /* A view of an optimizer's group options. */                                                          \
    static std::unique_ptr<Name##Options> view_of(Base& group_options) {                                    \
      auto v = std::make_unique<Name##Options>();                                                           \
      v->target_ = &group_options;                                                                          \
      return v;                                                                                             \
    }                                                                                                       \
    FIELDS(DL_TORCH_OPTIM_SETTER_)                                                                          \
    /* dl's options of the same values (those of the group, for a view). */                                \
    const Base& dl() const { return target(); }                                                             \
    double get_lr() const override { return target().lr; }                                                  \
    void set_lr(double lr) override { target().lr = lr; }                                                   \
    std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<Name##Options>(*this); } \
    /* Every field, as a group's overrides of dl's defaults. */                                            \
    dl::optim::Name##GroupOptions group_options() const {                                                   \
      dl::optim::Name##GroupOptions g;                                                                      \
      const Name##Options& o = *this;                                                                       \
      FIELDS(DL_TORCH_OPTIM_TO_GROUP_)                                                                      \
      return g;                                                                                             \
    }                                                                                                       \
                                                                                                            \
   private:                                                                                                 \
    Base& target() { return target_ ? *target_ : static_cast<Base&>(*this); }                               \
    const Base& target() const { return target_ ? *target_ : static_cast<const Base&>(*this); }             \
    Base* target_ = nullptr;                                                                                \
  };                                                                                                        \
  class Name : public dl::optim::Name<float> {                                                              \
    using DlBase = dl::optim::Name<float>;                                                                  \
                                                                                                            \
   public:                                                                                                  \
    Name(std::vector<Tensor> params, const Name##Options& options = {}) : DlBase(std::move(params), options.dl()) {} \
    Name(std::vector<typename DlBase::GroupSpec> groups, const Name##Options& options = {})                 \
        : DlBase(std::move(groups), options.dl()) {}                                                             \
    /* libtorch's groups: each with its own Name##Options, or none for the defaults. */                    \
    Name(const std::vector<OptimizerParamGroup>& groups, const Name##Options& options = {})                 \
        : DlBase(detail::group_specs<DlBase, Name##Options>(groups, #Name), options.dl()) {}                     \
    /* libtorch's view of the groups: params() and options() reach the optimizer's own. */                 \
    std::vector<OptimizerParamGroup>& param_groups() {                                                      \
      return detail::sync_views<Name##Options>(views_, DlBase::param_groups());                             \
    }                                                                                                       \
    void add_param_group(const OptimizerParamGroup& group) {                                                \
      DlBase::add_param_group(detail::group_specs<DlBase, Name##Options>({group}, #Name).front());          \
    }                                                                                                       \
    using DlBase::add_param_group;                                                                          \
                                                                                                            \
   private:                                                                                                 \
    std::vector<OptimizerParamGroup> views_;                                                                \
  };

namespace torch::optim {

using dl::optim::Optimizer;
using Pair = dl::optim::Pair;

/// libtorch's base of the options classes: the learning rate of any algorithm's options.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;

 protected:
  OptimizerOptions() = default;
  OptimizerOptions(const OptimizerOptions&) = default;
  OptimizerOptions& operator=(const OptimizerOptions&) = default;
};

/// libtorch's parameter group: parameters and, optionally, the options that replace the optimizer's
/// defaults for them. Those param_groups() returns refer to the optimizer's own groups.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : own_params_(std::move(params)) {}  // NOLINT: implicit, as libtorch's
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : own_params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& g)
      : own_params_(g.params()), options_(g.has_options() ? g.options().clone() : nullptr) {}
  OptimizerParamGroup& operator=(const OptimizerParamGroup& g) {
    if (this != &g) {
      params() = g.params();
      options_ = g.has_options() ? g.options().clone() : nullptr;
    }
    return *this;
  }
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options() {
    if (!options_) throw dl::Error("OptimizerParamGroup::options(): the group has no options");
    return *options_;
  }
  const OptimizerOptions& options() const { return const_cast<OptimizerParamGroup&>(*this).options(); }
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return view_params_ ? *view_params_ : own_params_; }
  const std::vector<Tensor>& params() const { return view_params_ ? *view_params_ : own_params_; }

  /// A view of an optimizer's group (its parameter list and its options).
  static OptimizerParamGroup view(std::vector<Tensor>& params, std::unique_ptr<OptimizerOptions> options) {
    OptimizerParamGroup g(std::vector<Tensor>{}, std::move(options));
    g.view_params_ = &params;
    return g;
  }
  const std::vector<Tensor>* viewed_params() const { return view_params_; }

 private:
  std::vector<Tensor> own_params_;
  std::vector<Tensor>* view_params_ = nullptr;
  std::unique_ptr<OptimizerOptions> options_;
};

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

/// libtorch's groups as dl's: each group's options (when it has them) as overrides of the defaults.
template <class DlOptimizer, class TorchOptions>
std::vector<typename DlOptimizer::GroupSpec> group_specs(const std::vector<OptimizerParamGroup>& groups, const char* name) {
  std::vector<typename DlOptimizer::GroupSpec> specs;
  for (const auto& g : groups) {
    typename DlOptimizer::GroupSpec spec{g.params(), {}};
    if (g.has_options()) {
      const auto* o = dynamic_cast<const TorchOptions*>(&g.options());
      if (!o) throw dl::Error(std::string("torch::optim::") + name + ": a parameter group's options must be torch::optim::" + name + "Options");
      spec.options = o->group_options();
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

/// The optimizer's groups as libtorch's OptimizerParamGroup views, rebuilt when the groups moved.
template <class TorchOptions, class DlGroups>
std::vector<OptimizerParamGroup>& sync_views(std::vector<OptimizerParamGroup>& views, DlGroups& groups) {
  bool fresh = views.size() == groups.size();
  for (size_t i = 0; fresh && i < groups.size(); ++i) fresh = views[i].viewed_params() == &groups[i].params;
  if (!fresh) {
    views.clear();
    for (auto& g : groups) views.push_back(OptimizerParamGroup::view(g.params, TorchOptions::view_of(g.options)));
  }
  return views;
}
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


/// libtorch's base of learning-rate schedulers: a subclass computes each group's rate in get_lrs();
/// step() counts the step and sets them.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : step_count_(0), optimizer_(optimizer) {}
  virtual ~LRScheduler() = default;
  void step() {
    const std::vector<double> lrs = get_lrs();
    if (lrs.size() != optimizer_.num_param_groups())
      throw dl::Error(str("LRScheduler: get_lrs() returned ", lrs.size(), " learning rates for ", optimizer_.num_param_groups(),
                          " parameter groups"));
    for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
    ++step_count_;
  }

 protected:
  virtual std::vector<double> get_lrs() = 0;
  /// Each group's learning rate now.
  std::vector<double> get_current_lrs() const {
    std::vector<double> lrs(optimizer_.num_param_groups());
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = optimizer_.get_lr(g);
    return lrs;
  }
  unsigned step_count_;  // NOLINT: libtorch's protected member

 private:
  Optimizer& optimizer_;
};

/// libtorch's StepLR(optimizer, step_size, gamma): the learning rate times gamma every step_size epochs.
class StepLR : public dl::optim::StepLR {
 public:
  StepLR(Optimizer& optimizer, unsigned step_size, double gamma = 0.1)
      : dl::optim::StepLR(optimizer, {.step_size = int64_t(step_size), .gamma = gamma}) {}
};

}  // namespace torch::optim

#undef DL_TORCH_OPTIMIZER_
#undef DL_TORCH_OPTIM_SETTER_
#undef DL_TORCH_OPTIM_TO_GROUP_
