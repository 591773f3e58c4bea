// dl/optim/optimizer.hpp — the optimizer base: dl::optim::Optimizer (the run-time interface
// schedulers and training loops use) and OptimizerBase (parameter groups with typed options,
// per-parameter state, zero_grad, state_dict / load_state_dict), which every algorithm derives from.
//
//   optim::SGD opt(net.parameters(), {.lr = 0.01, .momentum = 0.9});
//   optim::SGD opt2({{features.parameters()}, {classifier.parameters(), {.lr = 1e-2}}}, {.lr = 1e-5, .momentum = 0.9});
//   opt2.param_groups()[1].options.lr = 1e-3;   // in place; state (momentum buffers) is kept
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../io/state_dict.hpp"
#include "../profiler_hook.hpp"
#include "../tensor.hpp"

namespace dl::optim {

/// (beta1, beta2) of the Adam family; also (eta_minus, eta_plus) and (min, max) step sizes of Rprop.
using Pair = std::pair<double, double>;

}  // namespace dl::optim

/// Declares an algorithm's options from one field list FIELDS(X), X(type, name, default):
/// `Name##Options` (designated-initialisable, in PyTorch's argument order) and
/// `Name##GroupOptions` (the same fields as std::optional: the options a parameter group overrides).
/// Each algorithm's field list (DL_SGD_FIELDS, ...) stays defined after its header: dl/torch/optim.hpp
/// generates libtorch's chainable setters (SGDOptions(0.1).momentum(0.9)) from it.
#define DL_OPTIM_FIELD_(type, name, value) type name = value;
#define DL_OPTIM_OPTIONAL_(type, name, value) std::optional<type> name = std::nullopt;
#define DL_OPTIM_VISIT_(type, name, value) f(#name, name);
#define DL_OPTIM_MERGE_(type, name, value) \
  if (o.name) name = *o.name;
#define DL_OPTIM_OPTIONS(Name, FIELDS)                      \
  struct Name##GroupOptions {                                      \
    FIELDS(DL_OPTIM_OPTIONAL_)                              \
  };                                                        \
  struct Name##Options {                                    \
    FIELDS(DL_OPTIM_FIELD_)                                 \
    template <class F>                                      \
    void for_each(F&& f) {                                  \
      FIELDS(DL_OPTIM_VISIT_)                               \
    }                                                       \
    template <class F>                                      \
    void for_each(F&& f) const {                            \
      FIELDS(DL_OPTIM_VISIT_)                               \
    }                                                       \
    void merge(const Name##GroupOptions& o) { FIELDS(DL_OPTIM_MERGE_) } \
  };

/// Declares an algorithm's class from its options (`Name##Options`, `Name##GroupOptions`) and state
/// (StateT<T>): constructors over a parameter list or groups, validate, name and step.
#define DL_OPTIMIZER_CLASS(Name, StateT)                                                                           \
  template <scalar_type T = float>                                                                                 \
  class Name : public OptimizerBase<Name<T>, T, Name##Options, Name##GroupOptions, StateT<T>> {                    \
    using Base = OptimizerBase<Name<T>, T, Name##Options, Name##GroupOptions, StateT<T>>;                          \
                                                                                                                   \
   public:                                                                                                         \
    using typename Base::GroupSpec;                                                                                \
    using Base::step;                                                                                              \
    explicit Name(std::vector<Tensor<T>> params, const Name##Options& o = {}) : Base(std::move(params), o) {}      \
    explicit Name(std::vector<GroupSpec> groups, const Name##Options& o = {}) : Base(std::move(groups), o) {}      \
    static void validate(const Name##Options& o);                                                                  \
    std::string name() const override { return #Name; }                                                            \
    DL_API void step() override;                                                                                   \
  };

/// Compiled mode: an algorithm's float instantiations, which libdl_kernels holds (DL_EXTERN_TEMPLATE,
/// dl/config.hpp): the algorithm and its OptimizerBase (an instantiation of a derived class does not
/// instantiate its base's members). Invoked at the end of each algorithm's header, outside any namespace.
#define DL_OPTIMIZER_INSTANCES(Name, StateT)                                                                         \
  DL_EXTERN_TEMPLATE(optim, class dl::optim::OptimizerBase<dl::optim::Name<float>, float, dl::optim::Name##Options,   \
                                                           dl::optim::Name##GroupOptions, dl::optim::StateT<float>>)  \
  DL_EXTERN_TEMPLATE(optim, class dl::optim::Name<float>)

namespace dl::optim {

// ------------------------------------------------------------------------------ declarations

/// What every optimizer offers at run time, whatever its algorithm and element type.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  /// One update of every parameter that has a gradient.
  virtual void step() = 0;
  /// Sets every parameter's gradient to none (set_to_none, PyTorch 2's default) or to zeros.
  virtual void zero_grad(bool set_to_none = true) = 0;
  virtual size_t num_param_groups() const = 0;
  virtual double get_lr(size_t group) const = 0;
  virtual void set_lr(size_t group, double lr) = 0;
  /// The group's momentum (SGD, RMSprop) or beta1 (Adam family), for schedulers that cycle it;
  /// none for algorithms without one.
  virtual std::optional<double> get_momentum(size_t) const { return std::nullopt; }
  DL_API virtual void set_momentum(size_t group, double momentum);
  /// The learning rate a scheduler started from (PyTorch keeps it as the group's "initial_lr").
  std::optional<double> initial_lr(size_t group) const;
  void set_initial_lr(size_t group, double lr);
  /// The algorithm's name ("SGD", "Adam", ...).
  virtual std::string name() const = 0;
  virtual StateDict state_dict() const = 0;
  virtual void load_state_dict(const StateDict& sd) = 0;
  /// The groups with their typed options are the algorithm's (each algorithm's class has
  /// param_groups()); through this base a call names what to use instead.
  template <class Because = void>
  auto param_groups() const {
    static_assert(sizeof(Because) == 0,
                  "param_groups() is a member of the algorithm's class (dl::optim::Adam<float>&, torch::optim::Adam&), "
                  "not of the base Optimizer&: through the base use num_param_groups(), get_lr(g) and set_lr(g, lr)");
    return std::vector<int>{};
  }

 protected:
  std::vector<std::optional<double>> initial_lr_;
};

namespace detail {

/// Options as tensors in a state dict: numbers and bools as 0-d float64, pairs as [2] float64,
/// strings in the metadata.
DL_API void put_option(StateDict& sd, const std::string& key, double v);
DL_API void put_option(StateDict& sd, const std::string& key, bool v);
DL_API void put_option(StateDict& sd, const std::string& key, int64_t v);
DL_API void put_option(StateDict& sd, const std::string& key, const Pair& v);
DL_API void put_option(StateDict& sd, const std::string& key, const std::string& v);
DL_API void put_option(StateDict& sd, const std::string& key, const std::optional<int64_t>& v);
DL_API void get_option(const StateDict& sd, const std::string& key, double& v);
DL_API void get_option(const StateDict& sd, const std::string& key, bool& v);
DL_API void get_option(const StateDict& sd, const std::string& key, int64_t& v);
DL_API void get_option(const StateDict& sd, const std::string& key, Pair& v);
DL_API void get_option(const StateDict& sd, const std::string& key, std::string& v);
DL_API void get_option(const StateDict& sd, const std::string& key, std::optional<int64_t>& v);

/// The checks the Adam family (Adam, AdamW, Adamax, NAdam, RAdam) shares, with PyTorch's messages.
inline void check_lr_eps_betas_wd(double lr, double eps, const Pair& betas, double wd);

}  // namespace detail

/// Parameter groups, options and state for an algorithm (CRTP: Derived is the algorithm). It needs:
///   OptionsT: the hyper-parameters, with `lr`, `template <class F> void for_each(F&&)` naming them
///     and `merge(const GroupOptionsT&)` (DL_OPTIM_OPTIONS declares all three),
///   GroupOptionsT: the same fields as std::optional, for per-group overrides,
///   StateT: per-parameter state, with for_each over its tensors and numbers,
///   Derived: `static void validate(const OptionsT&)`, and Optimizer's `step()` and `name()`.
template <class Derived, scalar_type T, class OptionsT, class GroupOptionsT, class StateT>
class OptimizerBase : public Optimizer {
 public:
  using value_type = T;
  using Options = OptionsT;
  using GroupOptions = GroupOptionsT;
  using State = StateT;
  struct ParamGroup {
    std::vector<Tensor<T>> params;
    Options options;
  };
  /// A group as given to the constructor: its parameters and the options that differ from the defaults.
  struct GroupSpec {
    std::vector<Tensor<T>> params;
    GroupOptions options = {};
  };

  OptimizerBase(std::vector<Tensor<T>> params, const Options& defaults);
  OptimizerBase(std::vector<GroupSpec> groups, const Options& defaults);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const Options& defaults() const { return defaults_; }
  /// Adds a group (its unset options from the defaults); a parameter may be in one group only.
  void add_param_group(GroupSpec group);
  /// The state of parameter p (created empty on first use).
  State& state(const Tensor<T>& p) { return state_[p.impl().get()]; }
  /// Whether p has state yet.
  bool has_state(const Tensor<T>& p) const { return state_.count(p.impl().get()) > 0; }

  void zero_grad(bool set_to_none = true) override;
  /// PyTorch's step(closure): evaluates closure (grad mode on; it typically zeroes the gradients,
  /// computes the loss and calls backward), then steps; returns the closure's loss.
  template <class F>
    requires std::is_invocable_v<F&>
  auto step(F&& closure);
  size_t num_param_groups() const override { return groups_.size(); }
  double get_lr(size_t g) const override { return group(g).options.lr; }
  void set_lr(size_t g, double lr) override { group(g).options.lr = lr; }
  /// The options' momentum (SGD, RMSprop) or betas.first (the Adam family), when they have one.
  DL_API std::optional<double> get_momentum(size_t g) const override;
  DL_API void set_momentum(size_t g, double m) override;
  DL_API StateDict state_dict() const override;
  DL_API void load_state_dict(const StateDict& sd) override;

 protected:
  /// PyTorch's error for an algorithm that takes dense gradients only, when a parameter's gradient
  /// is sparse (nn::Embedding with sparse = true); `hint` follows the message.
  void check_dense_grads_(const char* hint = "") const {
    for (const auto& g : groups_)
      for (const auto& p : g.params)
        DL_CHECK(!p.grad_is_sparse(), this->name(), " does not support sparse gradients", hint);
  }
  const ParamGroup& group(size_t g) const;
  ParamGroup& group(size_t g) { return const_cast<ParamGroup&>(std::as_const(*this).group(g)); }

 private:
  std::vector<ParamGroup> groups_;
  Options defaults_;
  std::unordered_map<const TensorImpl*, State> state_;
};

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// t as a contiguous Tensor<T>, converting between the floating types and from int64 (the types
/// state dicts hold) with plain loops: typed conversion kernels would compile into every program.
template <class T>
Tensor<T> as_floating(const AnyTensor& t, const std::string& key) {
  DL_CHECK(t.is<float>() || t.is<double>() || t.is<int64_t>(), "optimizer state dict: ", key, " is ", dtype_name(t.dtype()),
           ", expected a floating point tensor");
  const AnyTensor c = t.contiguous();
  if (c.is<T>()) return c.as<T>();
  Tensor<T> out = empty<T>(c.shape());
  const int64_t n = c.numel();
  const void* p = c.impl()->data();
  for (int64_t i = 0; i < n; ++i)
    out.data()[i] = c.is<float>()    ? T(static_cast<const float*>(p)[i])
                    : c.is<double>() ? T(static_cast<const double*>(p)[i])
                                     : T(static_cast<const int64_t*>(p)[i]);
  return out;
}

DL_API Tensor<double> option_tensor(const StateDict& sd, const std::string& key, int64_t numel);

inline void check_lr_eps_betas_wd(double lr, double eps, const Pair& betas, double wd) {
  DL_CHECK(lr >= 0, "Invalid learning rate: ", dl::detail::py_number(lr));
  DL_CHECK(eps >= 0, "Invalid epsilon value: ", dl::detail::py_number(eps));
  DL_CHECK(betas.first >= 0 && betas.first < 1, "Invalid beta parameter at index 0: ", dl::detail::py_number(betas.first));
  DL_CHECK(betas.second >= 0 && betas.second < 1, "Invalid beta parameter at index 1: ", dl::detail::py_number(betas.second));
  DL_CHECK(wd >= 0, "Invalid weight_decay value: ", dl::detail::py_number(wd));
}

}  // namespace detail

template <class Derived, scalar_type T, class O, class G, class S>
OptimizerBase<Derived, T, O, G, S>::OptimizerBase(std::vector<Tensor<T>> params, const O& defaults)
    : OptimizerBase(std::vector<GroupSpec>{GroupSpec{std::move(params), {}}}, defaults) {
  DL_CHECK(!groups_[0].params.empty(), "optimizer got an empty parameter list");
}

template <class Derived, scalar_type T, class O, class G, class S>
OptimizerBase<Derived, T, O, G, S>::OptimizerBase(std::vector<GroupSpec> groups, const O& defaults) : defaults_(defaults) {
  Derived::validate(defaults_);
  DL_CHECK(!groups.empty(), "optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g));
}

template <class Derived, scalar_type T, class O, class G, class S>
void OptimizerBase<Derived, T, O, G, S>::add_param_group(GroupSpec spec) {
  ParamGroup g{std::move(spec.params), defaults_};
  g.options.merge(spec.options);
  Derived::validate(g.options);
  for (size_t i = 0; i < g.params.size(); ++i) {
    const Tensor<T>& p = g.params[i];
    DL_CHECK(p.defined(), "optimizer: parameter ", i, " of group ", groups_.size(), " is undefined");
    DL_CHECK(p.is_leaf(), "can't optimize a non-leaf Tensor (parameter ", i, " of group ", groups_.size(), ", shape ", p.shape(), ")");
    for (size_t j = 0; j < i; ++j)
      DL_CHECK(!g.params[j].is_same(p), "optimizer: parameter ", i, " of group ", groups_.size(), " appears twice in the group");
    for (size_t k = 0; k < groups_.size(); ++k)
      for (const auto& q : groups_[k].params)
        DL_CHECK(!q.is_same(p), "some parameters appear in more than one parameter group (parameter ", i, " of group ", groups_.size(),
                 " is in group ", k, ")");
  }
  groups_.push_back(std::move(g));
}

template <class Derived, scalar_type T, class O, class G, class S>
const typename OptimizerBase<Derived, T, O, G, S>::ParamGroup& OptimizerBase<Derived, T, O, G, S>::group(size_t g) const {
  DL_CHECK(g < groups_.size(), name(), ": parameter group ", g, " does not exist (", groups_.size(), " groups)");
  return groups_[g];
}

template <class Derived, scalar_type T, class O, class G, class S>
template <class F>
  requires std::is_invocable_v<F&>
auto OptimizerBase<Derived, T, O, G, S>::step(F&& closure) {
  auto loss = [&] {
    autograd::EnableGradGuard grad_mode;
    return closure();
  }();
  static_cast<Derived*>(this)->step();
  return loss;
}

template <class Derived, scalar_type T, class O, class G, class S>
std::optional<double> OptimizerBase<Derived, T, O, G, S>::get_momentum(size_t g) const {
  const O& o = group(g).options;
  if constexpr (requires { o.momentum; }) return o.momentum;
  else if constexpr (requires { o.betas; }) return o.betas.first;
  else return std::nullopt;
}

template <class Derived, scalar_type T, class O, class G, class S>
void OptimizerBase<Derived, T, O, G, S>::set_momentum(size_t g, double m) {
  O& o = group(g).options;
  if constexpr (requires { o.momentum; }) o.momentum = m;
  else if constexpr (requires { o.betas; }) o.betas.first = m;
  else Optimizer::set_momentum(g, m);
}

template <class Derived, scalar_type T, class O, class G, class S>
void OptimizerBase<Derived, T, O, G, S>::zero_grad(bool set_to_none) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_(::dl::profiler::detail::EventKind::optimizer, [&] {
    return "Optimizer.zero_grad#" + this->name() + ".zero_grad";
  });
  for (auto& g : groups_)
    for (auto& p : g.params) {
      if (p.grad_is_sparse()) {  // none either way
        p.mutable_grad() = Tensor<T>();
        continue;
      }
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.mutable_grad() = Tensor<T>();
      } else {
        NoGradGuard no_grad;
        p.grad().zero_();
      }
    }
}

// The layout follows PyTorch's optimizer state dict ({"state": {i: {...}}, "param_groups": [...]}),
// flattened to named tensors: "state.<i>.<name>" and "param_groups.<g>.<option>", parameters
// numbered across groups in order; "param_groups.<g>.params" lists each group's numbers.
template <class Derived, scalar_type T, class O, class G, class S>
StateDict OptimizerBase<Derived, T, O, G, S>::state_dict() const {
  StateDict sd;
  sd.metadata["optimizer"] = name();
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    std::vector<int64_t> ids;
    for (const auto& p : groups_[g].params) {
      auto it = state_.find(p.impl().get());
      if (it != state_.end()) {
        const std::string sp = "state." + std::to_string(index) + ".";
        it->second.for_each([&](const char* n, const auto& v) {
          using V = std::remove_cvref_t<decltype(v)>;
          if constexpr (expr::is_tensor_v<V>) {
            if (v.defined()) sd.insert(sp + n, v.detach().clone());
          } else {
            detail::put_option(sd, sp + n, v);
          }
        });
      }
      ids.push_back(index++);
    }
    sd.insert(prefix + "params", tensor<int64_t>(ids));
    groups_[g].options.for_each([&](const char* n, const auto& v) { detail::put_option(sd, prefix + n, v); });
    if (auto lr0 = initial_lr(g)) detail::put_option(sd, prefix + "initial_lr", *lr0);
  }
  return sd;
}

template <class Derived, scalar_type T, class O, class G, class S>
void OptimizerBase<Derived, T, O, G, S>::load_state_dict(const StateDict& sd) {
  if (auto it = sd.metadata.find("optimizer"); it != sd.metadata.end())
    DL_CHECK(it->second == name(), "loaded state dict is for ", it->second, ", not ", name());
  size_t n_groups = 0;
  while (sd.contains("param_groups." + std::to_string(n_groups) + ".params")) ++n_groups;
  DL_CHECK(n_groups == groups_.size(), "loaded state dict has a different number of parameter groups (", n_groups, ") than the ",
           name(), " optimizer (", groups_.size(), ")");
  for (size_t g = 0; g < groups_.size(); ++g) {
    const AnyTensor ids = sd.at("param_groups." + std::to_string(g) + ".params");
    DL_CHECK(ids.numel() == int64_t(groups_[g].params.size()), "loaded state dict contains a parameter group that doesn't match the size of ",
             "optimizer's group (group ", g, ": ", ids.numel(), " parameters in the state dict, ", groups_[g].params.size(),
             " in the optimizer)");
  }
  // Everything is read before anything changes, so a bad state dict leaves the optimizer as it was.
  std::vector<ParamGroup> groups = groups_;
  std::unordered_map<const TensorImpl*, S> state;
  std::vector<std::optional<double>> lr0(groups.size());
  int64_t index = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    groups[g].options.for_each([&](const char* n, auto& v) { detail::get_option(sd, prefix + n, v); });
    Derived::validate(groups[g].options);
    if (sd.contains(prefix + "initial_lr")) {
      double v = 0;
      detail::get_option(sd, prefix + "initial_lr", v);
      lr0[g] = v;
    }
    for (const auto& p : groups[g].params) {
      const std::string sp = "state." + std::to_string(index++) + ".";
      bool any = false;
      for (const auto& [k, t] : sd) any = any || k.compare(0, sp.size(), sp) == 0;
      if (!any) continue;
      S s;
      s.for_each([&](const char* n, auto& v) {
        using V = std::remove_cvref_t<decltype(v)>;
        const std::string key = sp + n;
        if constexpr (expr::is_tensor_v<V>) {
          if (!sd.contains(key)) return;
          const AnyTensor& t = sd.at(key);
          DL_CHECK(t.shape() == p.shape(), "optimizer state dict: ", key, " has shape ", t.shape(), " but the parameter has shape ",
                   p.shape());
          v = detail::as_floating<T>(t, key).clone();
        } else {
          detail::get_option(sd, key, v);
        }
      });
      state.emplace(p.impl().get(), std::move(s));
    }
  }
  groups_ = std::move(groups);
  state_ = std::move(state);
  for (size_t g = 0; g < lr0.size(); ++g)
    if (lr0[g]) set_initial_lr(g, *lr0[g]);
}

}  // namespace dl::optim

#if DL_HEADER_ONLY
#include "optimizer-inl.hpp"
#endif
