// dl/nn/module.hpp — dl::nn::Module, the base of every layer and network. A module is a plain
// struct that declares its parameters and submodules once, with DL_MODULE (and its buffers with
// DL_BUFFERS); every generic algorithm — parameters, named_parameters, buffers, children, modules,
// apply, train/eval, zero_grad, to, state_dict, load_state_dict, hooks, printing — is written once
// over that declaration.
//
//   struct Net : dl::nn::Module {
//     dl::nn::Linear<784, 128> fc1;
//     dl::nn::Linear<> fc2{128, 10};
//     DL_MODULE(Net, fc1, fc2)                 // names and order of the members
//     dl::Tensor<float> forward(const dl::Tensor<float>& x) { return fc2(dl::relu(fc1(x))); }
//   };
//   Net net;  dl::Tensor<float> y = net(x);    // calling a module runs its hooks and forward
//
// Copying a module copies its tensor handles: the copy shares parameters (as copying a dl::Tensor
// shares storage) but has its own hooks and training flag.
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../io/state_dict.hpp"
#include "../profiler_hook.hpp"

namespace dl::nn {

/// A size that is not known when the program is compiled (std::dynamic_extent's role):
/// `nn::Linear<>` is `nn::Linear<dynamic, dynamic>`.
inline constexpr int64_t dynamic = -1;

class Module;

// ------------------------------------------------------------------------------ declarations

namespace detail {

/// A typed tensor member (a Tensor<T> of any T, or a run-time registered AnyTensor) seen through
/// a run-time dtype: generic algorithms read it and replace it without knowing T.
class TensorSlot {
 public:
  template <scalar_type T>
  explicit TensorSlot(Tensor<T>& t) : ptr_(&t), get_(&get_typed<T>), set_(&set_typed<T>) {}
  explicit TensorSlot(AnyTensor& t) : ptr_(&t), get_(&get_any), set_(&set_any) {}
  AnyTensor get() const { return get_(ptr_); }
  /// Replaces the handle; the element type must stay the same.
  void set(const AnyTensor& t) const { set_(ptr_, t); }

 private:
  template <class T>
  static AnyTensor get_typed(void* p) { return AnyTensor(*static_cast<Tensor<T>*>(p)); }
  template <class T>
  static void set_typed(void* p, const AnyTensor& t) { *static_cast<Tensor<T>*>(p) = t.as<T>(); }
  static AnyTensor get_any(void* p) { return *static_cast<AnyTensor*>(p); }
  static void set_any(void* p, const AnyTensor& t) {
    auto& dst = *static_cast<AnyTensor*>(p);
    DL_CHECK(!dst.defined() || !t.defined() || dst.dtype() == t.dtype(), "cannot replace a ", dtype_name(dst.dtype()),
             " tensor by a ", dtype_name(t.dtype()), " tensor");
    dst = t;
  }
  void* ptr_;
  AnyTensor (*get_)(void*);
  void (*set_)(void*, const AnyTensor&);
};

/// What a module shows generic algorithms: its own parameters, buffers and children.
struct MemberVisitor {
  virtual ~MemberVisitor() = default;
  virtual void parameter(const std::string&, const TensorSlot&) {}
  virtual void buffer(const std::string&, const TensorSlot&) {}
  virtual void child(const std::string&, Module&) {}
};

/// "conv1, bn1 , fc" -> {"conv1", "bn1", "fc"} (the stringised member list of DL_MODULE).
std::vector<std::string> split_names(std::string_view list);

using dl::detail::py_float;
/// "True" / "False".
inline const char* py_bool(bool b) { return b ? "True" : "False"; }

}  // namespace detail

/// Forward pre-hook: sees (and may replace) the tensor arguments before forward runs.
using ForwardPreHook = std::function<void(Module& module, std::vector<AnyTensor>& inputs)>;
/// Forward hook: sees the tensor arguments and (may replace) the output after forward ran. The
/// output is undefined when forward returns something other than a tensor.
using ForwardHook = std::function<void(Module& module, const std::vector<AnyTensor>& inputs, AnyTensor& output)>;

/// Returned by register_forward_hook / register_forward_pre_hook; remove() unregisters the hook.
class HookHandle {
 public:
  HookHandle() = default;
  void remove();

 private:
  friend class Module;
  struct Registry;
  HookHandle(std::weak_ptr<Registry> r, int64_t id) : registry_(std::move(r)), id_(id) {}
  std::weak_ptr<Registry> registry_;
  int64_t id_ = -1;
};

/// What load_state_dict found (PyTorch's IncompatibleKeys).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

/// The base of every layer and network; see the header comment.
class Module {
 public:
  Module() = default;
  Module(const Module& other);
  Module& operator=(const Module& other);
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;
  virtual ~Module() = default;

  // ------------------------------------------------------------------------ structure
  /// The class name printed for this module ("Linear", "Net"); DL_MODULE sets it.
  DL_API virtual std::string type_name() const;
  /// The extra information printed inside the parentheses (PyTorch's extra_repr).
  virtual std::string extra_repr() const { return {}; }

  /// Parameters of this module (and of its submodules when recurse), each once, as Tensor<T>;
  /// throws naming the parameter when one has another element type.
  template <scalar_type T = float>
  std::vector<Tensor<T>> parameters(bool recurse = true);
  template <scalar_type T = float>
  std::vector<std::pair<std::string, Tensor<T>>> named_parameters(bool recurse = true);
  /// Buffers (running statistics, counters...), of any element type.
  std::vector<AnyTensor> buffers(bool recurse = true);
  std::vector<std::pair<std::string, AnyTensor>> named_buffers(bool recurse = true);
  /// Direct submodules.
  std::vector<Module*> children();
  std::vector<std::pair<std::string, Module*>> named_children();
  /// This module and every submodule, depth first (each once); names joined with ".".
  std::vector<Module*> modules();
  std::vector<std::pair<std::string, Module*>> named_modules(const std::string& prefix = "");

  /// Calls fn on every submodule (children first, then each's own children... then this), as PyTorch.
  Module& apply(const std::function<void(Module&)>& fn);
  /// `m.as<nn::Linear>()`: a pointer to m as a Linear of any size (static or run-time), else null.
  template <template <int64_t...> class Layer>
  Layer<>* as() { return dynamic_cast<Layer<>*>(this); }
  /// `m.as<Net>()`: a pointer to m as that class, else null.
  template <class M>
  M* as() { return dynamic_cast<M*>(this); }

  // ------------------------------------------------------------------------ modes and state
  /// Training mode on (or off) for this module and every submodule.
  Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  /// Sets every parameter's gradient to none (set_to_none, PyTorch 2's default) or to zeros.
  void zero_grad(bool set_to_none = true);
  /// requires_grad_ on every parameter (freezing a network: requires_grad_(false)).
  Module& requires_grad_(bool requires_grad = true);
  /// Moves every parameter and buffer to `device` (parameters stay leaves that require grad).
  Module& to(Device device);

  /// Parameters and buffers by name ("conv1.weight", "bn1.running_mean", ...), detached, in
  /// PyTorch's order: a module's parameters, then its buffers, then its children's.
  StateDict state_dict();
  /// Copies the tensors of sd into this module's parameters and buffers (shapes must match).
  /// strict: keys missing from sd, or in sd and not in the module, are an error listing them all.
  LoadResult load_state_dict(const StateDict& sd, bool strict = true);

  // ------------------------------------------------------------------------ hooks
  HookHandle register_forward_pre_hook(ForwardPreHook hook);
  HookHandle register_forward_hook(ForwardHook hook);
  bool has_forward_hooks() const;

  // ------------------------------------------------------------------------ run-time registration
  // For modules whose structure is decided at run time. The tensors and modules are owned by this
  // module (handles and shared pointers) and appear after the DL_MODULE members.
  template <scalar_type T>
  Tensor<T> register_parameter(const std::string& name, Tensor<T> t, bool requires_grad = true);
  template <scalar_type T>
  Tensor<T> register_buffer(const std::string& name, Tensor<T> t);
  /// Adds a submodule (moved in) and returns a reference to it.
  template <class M>
    requires std::derived_from<std::remove_cvref_t<M>, Module>
  std::remove_cvref_t<M>& register_module(const std::string& name, M&& module);
  Module& register_module(const std::string& name, std::shared_ptr<Module> module);

  // ------------------------------------------------------------------------ for implementers
  /// Visits this module's own members: DL_MODULE's, DL_BUFFERS', then the run-time registered.
  void visit_members(detail::MemberVisitor& v);
  /// Generated by DL_MODULE.
  virtual void visit_declared_(detail::MemberVisitor&) {}
  /// Generated by DL_BUFFERS.
  virtual void visit_declared_buffers_(detail::MemberVisitor&) {}

  /// Runs the forward hooks around fwd() (used by DL_MODULE's call operator).
  template <class Self, class... Args>
  auto call_with_hooks_(Self& self, Args&&... args);

 private:
  bool training_ = true;
  std::shared_ptr<HookHandle::Registry> hooks_;
  std::vector<std::pair<std::string, AnyTensor>> parameters_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;

  void check_new_name(const std::string& name, const char* what);
  template <class F>
  void walk(const std::string& prefix, bool recurse, F&& f);
};

/// PyTorch's printout: `Net(\n  (fc1): Linear(in_features=784, out_features=128, bias=True)\n)`.
std::ostream& operator<<(std::ostream& os, Module& m);
std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace dl::nn

/// Declares a module's parameters (dl::Tensor members) and submodules (module members,
/// std::optional or std::shared_ptr of modules), in order, with their names; also sets the printed
/// class name and gives the module its call operator (which runs hooks, then forward).
///   DL_MODULE(Net, conv1, bn1, fc1)
#define DL_MODULE(Type, ...)                                                                        \
 public:                                                                                            \
  std::string type_name() const override { return #Type; }                                          \
  void visit_declared_(::dl::nn::detail::MemberVisitor& dl_visitor_) override {                     \
    __VA_OPT__(static const std::vector<std::string> dl_names_ = ::dl::nn::detail::split_names(#__VA_ARGS__); \
               ::dl::nn::detail::visit_declared(dl_visitor_, dl_names_, __VA_ARGS__);)               \
    (void)dl_visitor_;                                                                              \
  }                                                                                                 \
  template <class... DlArgs>                                                                        \
  auto operator()(DlArgs&&... dl_args)                                                              \
      -> decltype(::dl::nn::detail::call_module(*this, std::forward<DlArgs>(dl_args)...)) {         \
    return ::dl::nn::detail::call_module(*this, std::forward<DlArgs>(dl_args)...);                  \
  }

/// Declares a module's buffers (dl::Tensor members that are state, not parameters: running
/// statistics, counters). They are saved in state_dict and moved by to(), but not trained.
///   DL_BUFFERS(running_mean, running_var, num_batches_tracked)
#define DL_BUFFERS(...)                                                                             \
 public:                                                                                            \
  void visit_declared_buffers_(::dl::nn::detail::MemberVisitor& dl_visitor_) override {             \
    static const std::vector<std::string> dl_names_ = ::dl::nn::detail::split_names(#__VA_ARGS__);  \
    ::dl::nn::detail::visit_buffers(dl_visitor_, dl_names_, __VA_ARGS__);                           \
  }

namespace dl::nn {

// ------------------------------------------------------------------------------ implementation

namespace detail {

DL_API std::vector<std::string> split_names(std::string_view list);
#if DL_HEADER_ONLY
DL_API std::vector<std::string> split_names(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view n = list.substr(start, end - start);
    while (!n.empty() && std::isspace(static_cast<unsigned char>(n.front()))) n.remove_prefix(1);
    while (!n.empty() && std::isspace(static_cast<unsigned char>(n.back()))) n.remove_suffix(1);
    if (!n.empty()) out.emplace_back(n);
    start = end + 1;
  }
  return out;
}
#endif  // DL_HEADER_ONLY

template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;
template <class T>
inline constexpr bool is_shared_ptr_v = false;
template <class T>
inline constexpr bool is_shared_ptr_v<std::shared_ptr<T>> = true;
template <class M>
inline constexpr bool dependent_false_v = false;

template <class M>
void visit_one(MemberVisitor& v, const std::string& name, M& m) {
  if constexpr (expr::is_tensor_v<M>) {
    if (m.defined()) v.parameter(name, TensorSlot(m));
  } else if constexpr (std::is_base_of_v<Module, M>) {
    v.child(name, m);
  } else if constexpr (is_optional_v<M> || is_shared_ptr_v<M>) {
    if (m) visit_one(v, name, *m);
  } else if constexpr (requires { m.ptr(); m.get(); }) {  // AnyModule
    if (m.ptr()) v.child(name, m.get());
  } else {
    static_assert(dependent_false_v<M>,
                  "DL_MODULE lists a member that is neither a dl::Tensor (a parameter) nor a module (or a std::optional, "
                  "std::shared_ptr or AnyModule holding one); list buffers with DL_BUFFERS");
  }
}

template <class... Ms>
void visit_declared(MemberVisitor& v, const std::vector<std::string>& names, Ms&... ms) {
  size_t i = 0;
  (visit_one(v, names[i++], ms), ...);
}

template <class... Ts>
void visit_buffers(MemberVisitor& v, const std::vector<std::string>& names, Ts&... ts) {
  static_assert((expr::is_tensor_v<Ts> && ...), "DL_BUFFERS lists dl::Tensor members only");
  size_t i = 0;
  auto one = [&](auto& t) {
    if (t.defined()) v.buffer(names[i], TensorSlot(t));
    ++i;
  };
  (one(ts), ...);
}

/// A visitor made of three callables.
template <class P, class B, class C>
struct FnVisitor final : MemberVisitor {
  P p;
  B b;
  C c;
  FnVisitor(P p_, B b_, C c_) : p(std::move(p_)), b(std::move(b_)), c(std::move(c_)) {}
  void parameter(const std::string& n, const TensorSlot& s) override { p(n, s); }
  void buffer(const std::string& n, const TensorSlot& s) override { b(n, s); }
  void child(const std::string& n, Module& m) override { c(n, m); }
};
inline constexpr auto ignore = [](const auto&, auto&) {};

/// The type a module call returns: a lazy expression is materialised (modules hand out tensors).
template <class R>
using module_result_t = std::conditional_t<expr::is_apply_v<std::remove_cvref_t<R>>,
                                           expr::tensor_t<std::remove_cvref_t<R>>, std::remove_cvref_t<R>>;

/// DL_MODULE's call operator: forward, with the hooks when there are any. Not callable (a clean
/// "no match" error at the call site) when forward does not take these arguments.
template <class M, class... Args>
auto call_module(M& self, Args&&... args) -> module_result_t<decltype(self.forward(std::forward<Args>(args)...))> {
  using R = module_result_t<decltype(self.forward(std::forward<Args>(args)...))>;
  const profiler::detail::RecordScope scope(profiler::detail::EventKind::module, [&] { return "nn.Module: " + self.type_name(); });
  if (!self.has_forward_hooks()) [[likely]]
    return R(self.forward(std::forward<Args>(args)...));
  return R(self.call_with_hooks_(self, std::forward<Args>(args)...));
}

/// How many of the first i arguments are tensors (the position of argument i among the hooks' inputs).
template <class... Args>
constexpr size_t tensor_index(size_t i) {
  constexpr bool is_tensor[] = {expr::is_tensor_v<std::remove_cvref_t<Args>>..., false};
  size_t n = 0;
  for (size_t j = 0; j < i; ++j) n += is_tensor[j];
  return n;
}

/// Hooks see tensor arguments as AnyTensor; a pre-hook may replace them.
template <size_t K, class A>
decltype(auto) hook_arg(A&& a, const std::vector<AnyTensor>& in) {
  using D = std::remove_cvref_t<A>;
  if constexpr (expr::is_tensor_v<D>) return in[K].template as<typename D::value_type>();
  else return std::forward<A>(a);
}

}  // namespace detail

struct HookHandle::Registry {
  int64_t next_id = 0;
  std::vector<std::pair<int64_t, ForwardPreHook>> pre;
  std::vector<std::pair<int64_t, ForwardHook>> post;
};

#if DL_HEADER_ONLY
DL_API void HookHandle::remove() {
  if (auto r = registry_.lock()) {
    std::erase_if(r->pre, [&](const auto& h) { return h.first == id_; });
    std::erase_if(r->post, [&](const auto& h) { return h.first == id_; });
  }
  registry_.reset();
}

DL_API Module::Module(const Module& other)
    : training_(other.training_),
      hooks_(other.hooks_ ? std::make_shared<HookHandle::Registry>(*other.hooks_) : nullptr),
      parameters_(other.parameters_),
      buffers_(other.buffers_),
      children_(other.children_) {}

DL_API Module& Module::operator=(const Module& other) {
  if (this != &other) {
    Module tmp(other);
    *this = std::move(tmp);
  }
  return *this;
}

DL_API std::string Module::type_name() const {
  int status = 0;
  std::string name = typeid(*this).name();
  if (char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status)) {
    name = d;
    std::free(d);
  }
  if (const size_t t = name.find('<'); t != std::string::npos) name.resize(t);
  if (const size_t p = name.rfind("::"); p != std::string::npos) name = name.substr(p + 2);
  return name;
}

DL_API void Module::visit_members(detail::MemberVisitor& v) {
  visit_declared_(v);
  visit_declared_buffers_(v);
  for (auto& [n, t] : parameters_)
    if (t.defined()) v.parameter(n, detail::TensorSlot(t));
  for (auto& [n, t] : buffers_)
    if (t.defined()) v.buffer(n, detail::TensorSlot(t));
  for (auto& [n, m] : children_)
    if (m) v.child(n, *m);
}
#endif  // DL_HEADER_ONLY

/// Calls f(prefix, module) for this module and (when recurse) every submodule, depth first;
/// a module reached twice (shared) is visited once.
template <class F>
void Module::walk(const std::string& prefix, bool recurse, F&& f) {
  std::unordered_set<const Module*> seen;
  std::function<void(const std::string&, Module&)> go = [&](const std::string& p, Module& m) {
    if (!seen.insert(&m).second) return;
    f(p, m);
    if (!recurse) return;
    detail::FnVisitor v(detail::ignore, detail::ignore,
                        [&](const std::string& n, Module& c) { go(p.empty() ? n : p + "." + n, c); });
    m.visit_members(v);
  };
  go(prefix, *this);
}

template <scalar_type T>
std::vector<std::pair<std::string, Tensor<T>>> Module::named_parameters(bool recurse) {
  std::vector<std::pair<std::string, Tensor<T>>> out;
  std::unordered_set<const TensorImpl*> seen;
  walk("", recurse, [&](const std::string& prefix, Module& m) {
    detail::FnVisitor v(
        [&](const std::string& n, const detail::TensorSlot& s) {
          const AnyTensor t = s.get();
          if (!seen.insert(t.impl().get()).second) return;
          const std::string name = prefix.empty() ? n : prefix + "." + n;
          DL_CHECK(t.is<T>(), "parameters(): parameter ", name, " is ", dtype_name(t.dtype()), ", not ", dtype_name(dtype_of<T>),
                   "; ask for parameters<T>() with its element type");
          out.emplace_back(name, t.as<T>());
        },
        detail::ignore, detail::ignore);
    m.visit_members(v);
  });
  return out;
}

template <scalar_type T>
std::vector<Tensor<T>> Module::parameters(bool recurse) {
  std::vector<Tensor<T>> out;
  for (auto& [n, p] : named_parameters<T>(recurse)) out.push_back(std::move(p));
  return out;
}

#if DL_HEADER_ONLY
DL_API std::vector<std::pair<std::string, AnyTensor>> Module::named_buffers(bool recurse) {
  std::vector<std::pair<std::string, AnyTensor>> out;
  std::unordered_set<const TensorImpl*> seen;
  walk("", recurse, [&](const std::string& prefix, Module& m) {
    detail::FnVisitor v(detail::ignore,
                        [&](const std::string& n, const detail::TensorSlot& s) {
                          AnyTensor t = s.get();
                          if (seen.insert(t.impl().get()).second) out.emplace_back(prefix.empty() ? n : prefix + "." + n, t);
                        },
                        detail::ignore);
    m.visit_members(v);
  });
  return out;
}

DL_API std::vector<AnyTensor> Module::buffers(bool recurse) {
  std::vector<AnyTensor> out;
  for (auto& [n, b] : named_buffers(recurse)) out.push_back(std::move(b));
  return out;
}

DL_API std::vector<std::pair<std::string, Module*>> Module::named_children() {
  std::vector<std::pair<std::string, Module*>> out;
  std::unordered_set<const Module*> seen;
  detail::FnVisitor v(detail::ignore, detail::ignore, [&](const std::string& n, Module& c) {
    if (seen.insert(&c).second) out.emplace_back(n, &c);
  });
  visit_members(v);
  return out;
}

DL_API std::vector<Module*> Module::children() {
  std::vector<Module*> out;
  for (auto& [n, c] : named_children()) out.push_back(c);
  return out;
}

DL_API std::vector<std::pair<std::string, Module*>> Module::named_modules(const std::string& prefix) {
  std::vector<std::pair<std::string, Module*>> out;
  walk(prefix, true, [&](const std::string& p, Module& m) { out.emplace_back(p, &m); });
  return out;
}

DL_API std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [n, m] : named_modules()) out.push_back(m);
  return out;
}

DL_API Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (Module* c : children()) c->apply(fn);
  fn(*this);
  return *this;
}

DL_API Module& Module::train(bool on) {
  for (Module* m : modules()) m->training_ = on;
  return *this;
}
#endif  // DL_HEADER_ONLY

// zero_grad, requires_grad_ and to work on the tensors' autograd slots directly, not through
// Tensor<T>: typed calls would compile float64 (and other) kernels into every program that
// includes this header.
#if DL_HEADER_ONLY
DL_API void Module::zero_grad(bool set_to_none) {
  walk("", true, [&](const std::string&, Module& m) {
    detail::FnVisitor v(
        [&](const std::string&, const detail::TensorSlot& s) {
          const TensorImplPtr& p = s.get().impl();
          if (!p->autograd || !p->autograd->grad) return;
          if (set_to_none) p->autograd->grad = nullptr;
          else dl::detail::zero_bytes(*p->autograd->grad);
        },
        detail::ignore, detail::ignore);
    m.visit_members(v);
  });
}

DL_API Module& Module::requires_grad_(bool requires_grad) {
  walk("", true, [&](const std::string&, Module& m) {
    detail::FnVisitor v(
        [&](const std::string& n, const detail::TensorSlot& s) {
          const AnyTensor t = s.get();
          DL_CHECK(!requires_grad || t.is<float>() || t.is<double>(), "requires_grad_: parameter ", n, " is ", dtype_name(t.dtype()),
                   "; only floating point tensors can require gradients");
          DL_CHECK(requires_grad || !t.impl()->autograd || !t.impl()->autograd->grad_fn, "requires_grad_: parameter ", n,
                   " is not a leaf");
          autograd::detail::meta(t.impl()).requires_grad = requires_grad;
        },
        detail::ignore, detail::ignore);
    m.visit_members(v);
  });
  return *this;
}

DL_API Module& Module::to(Device device) {
  auto move = [&](const detail::TensorSlot& s, bool parameter) {
    const AnyTensor t = s.get();
    if (t.device() == device) return;
    AnyTensor moved = t.detach().to(device);
    if (parameter && t.impl()->autograd) {
      auto& m = autograd::detail::meta(moved.impl());
      m.requires_grad = t.impl()->autograd->requires_grad;
      if (t.impl()->autograd->grad) m.grad = AnyTensor(t.impl()->autograd->grad).to(device).impl();
    }
    s.set(moved);
  };
  walk("", true, [&](const std::string&, Module& m) {
    detail::FnVisitor v([&](const std::string&, const detail::TensorSlot& s) { move(s, true); },
                        [&](const std::string&, const detail::TensorSlot& s) { move(s, false); }, detail::ignore);
    m.visit_members(v);
  });
  return *this;
}

DL_API StateDict Module::state_dict() {
  StateDict sd;
  // Not walk(): a module reached twice under two names is saved under both, as PyTorch does.
  std::function<void(const std::string&, Module&)> go = [&](const std::string& prefix, Module& m) {
    std::vector<std::pair<std::string, Module*>> kids;
    auto add = [&](const std::string& n, const detail::TensorSlot& s) { sd.insert(prefix + n, s.get().detach()); };
    detail::FnVisitor v(add, add, [&](const std::string& n, Module& c) { kids.emplace_back(n, &c); });
    m.visit_members(v);
    for (auto& [n, c] : kids) go(prefix + n + ".", *c);
  };
  go("", *this);
  return sd;
}
#endif  // DL_HEADER_ONLY

namespace detail {
/// dst <- src (same shape), converting between float and double; other dtype pairs must match.
/// Plain loops rather than typed tensor kernels: this is compiled into every program with modules.
DL_API void copy_into(const AnyTensor& dst, const AnyTensor& src, const std::string& key);
#if DL_HEADER_ONLY
DL_API void copy_into(const AnyTensor& dst, const AnyTensor& src, const std::string& key) {
  DL_CHECK(dst.device().is_cpu() && src.device().is_cpu(), "load_state_dict: ", key, " is on ", src.device(),
           "; load into a module on the CPU, then move it with to(device)");
  if (dst.dtype() == src.dtype()) {
    dl::detail::copy_bytes(*dst.impl(), *src.impl());
  } else if ((dst.is<float>() || dst.is<double>()) && (src.is<float>() || src.is<double>())) {
    const AnyTensor s = src.contiguous();
    AnyTensor converted(dl::detail::make_impl(dst.dtype(), dst.shape()));
    const int64_t n = s.numel();
    if (dst.is<float>()) {
      const double* from = static_cast<const double*>(s.impl()->data());
      float* to = static_cast<float*>(converted.impl()->data());
      for (int64_t i = 0; i < n; ++i) to[i] = float(from[i]);
    } else {
      const float* from = static_cast<const float*>(s.impl()->data());
      double* to = static_cast<double*>(converted.impl()->data());
      for (int64_t i = 0; i < n; ++i) to[i] = double(from[i]);
    }
    dl::detail::copy_bytes(*dst.impl(), *converted.impl());
  } else {
    throw Error(dl::detail::cat("While copying the parameter named \"", key, "\", expected a tensor of dtype ",
                                dtype_name(dst.dtype()), " but the state dict holds ", dtype_name(src.dtype())));
  }
  dst.impl()->storage->bump_version();
}
#endif  // DL_HEADER_ONLY
}  // namespace detail

#if DL_HEADER_ONLY
DL_API LoadResult Module::load_state_dict(const StateDict& sd, bool strict) {
  LoadResult result;
  std::vector<std::string> errors;
  std::unordered_set<std::string> used;
  for (const auto& [key, t] : state_dict()) {  // the module's own keys, in order
    if (!sd.contains(key)) {
      result.missing_keys.push_back(key);
      continue;
    }
    used.insert(key);
    const AnyTensor& src = sd.at(key);
    if (src.shape() != t.shape()) {
      errors.push_back(dl::detail::cat("size mismatch for ", key, ": copying a param with shape ", src.shape(),
                                       " from checkpoint, the shape in current model is ", t.shape(), "."));
      continue;
    }
    detail::copy_into(t, src, key);
  }
  for (const auto& [key, t] : sd)
    if (!used.count(key)) result.unexpected_keys.push_back(key);
  auto quoted = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "\"" : ", \"") + k + "\"";
    return s;
  };
  if (strict) {
    if (!result.unexpected_keys.empty())
      errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " + quoted(result.unexpected_keys) + ". ");
    if (!result.missing_keys.empty())
      errors.insert(errors.begin(), "Missing key(s) in state_dict: " + quoted(result.missing_keys) + ". ");
  }
  if (!errors.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + type_name() + ":";
    for (const auto& e : errors) msg += "\n\t" + e;
    throw Error(msg);
  }
  return result;
}

DL_API HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  if (!hooks_) hooks_ = std::make_shared<HookHandle::Registry>();
  const int64_t id = hooks_->next_id++;
  hooks_->pre.emplace_back(id, std::move(hook));
  return HookHandle(hooks_, id);
}

DL_API HookHandle Module::register_forward_hook(ForwardHook hook) {
  if (!hooks_) hooks_ = std::make_shared<HookHandle::Registry>();
  const int64_t id = hooks_->next_id++;
  hooks_->post.emplace_back(id, std::move(hook));
  return HookHandle(hooks_, id);
}

DL_API bool Module::has_forward_hooks() const { return hooks_ && (!hooks_->pre.empty() || !hooks_->post.empty()); }
#endif  // DL_HEADER_ONLY

template <class Self, class... Args>
auto Module::call_with_hooks_(Self& self, Args&&... args) {
  std::vector<AnyTensor> in;
  auto collect = [&](const auto& a) {
    if constexpr (expr::is_tensor_v<std::remove_cvref_t<decltype(a)>>) in.emplace_back(a);
  };
  (collect(args), ...);
  const size_t n_in = in.size();
  // Copies: a hook may remove itself (or add hooks) while running.
  const auto pre = hooks_->pre;
  for (const auto& [id, h] : pre) {
    h(*this, in);
    DL_CHECK(in.size() == n_in, type_name(), ": a forward pre-hook changed the number of inputs from ", n_in, " to ", in.size());
  }
  using R = detail::module_result_t<decltype(self.forward(std::forward<Args>(args)...))>;
  R out = [&]<size_t... I>(std::index_sequence<I...>) {
    return R(self.forward(detail::hook_arg<detail::tensor_index<Args...>(I)>(std::forward<Args>(args), in)...));
  }(std::index_sequence_for<Args...>{});
  const auto post = hooks_->post;
  if constexpr (expr::is_tensor_v<R>) {
    AnyTensor o(out);
    for (const auto& [id, h] : post) h(*this, in, o);
    return o.template as<typename R::value_type>();
  } else {
    AnyTensor none;
    for (const auto& [id, h] : post) h(*this, in, none);
    return out;
  }
}

#if DL_HEADER_ONLY
DL_API void Module::check_new_name(const std::string& name, const char* what) {
  DL_CHECK(!name.empty(), what, " name can't be empty string \"\"");
  DL_CHECK(name.find('.') == std::string::npos, what, " name can't contain \".\", got: ", name);
  bool taken = false;
  detail::FnVisitor v([&](const std::string& n, const auto&) { taken |= n == name; },
                      [&](const std::string& n, const auto&) { taken |= n == name; },
                      [&](const std::string& n, const auto&) { taken |= n == name; });
  visit_members(v);
  DL_CHECK(!taken, "attribute '", name, "' already exists in ", type_name());
}
#endif  // DL_HEADER_ONLY

template <scalar_type T>
Tensor<T> Module::register_parameter(const std::string& name, Tensor<T> t, bool requires_grad) {
  check_new_name(name, "parameter");
  DL_CHECK(!t.defined() || t.is_leaf(), "cannot register parameter '", name,
           "': it is not a leaf (it was computed from other tensors); use .detach() to make one");
  if (t.defined() && requires_grad) t.requires_grad_(true);
  parameters_.emplace_back(name, AnyTensor(t));
  return t;
}

template <scalar_type T>
Tensor<T> Module::register_buffer(const std::string& name, Tensor<T> t) {
  check_new_name(name, "buffer");
  buffers_.emplace_back(name, AnyTensor(t));
  return t;
}

template <class M>
  requires std::derived_from<std::remove_cvref_t<M>, Module>
std::remove_cvref_t<M>& Module::register_module(const std::string& name, M&& module) {
  using D = std::remove_cvref_t<M>;
  auto p = std::make_shared<D>(std::forward<M>(module));
  register_module(name, std::shared_ptr<Module>(p));
  return *p;
}

#if DL_HEADER_ONLY
DL_API Module& Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "module");
  DL_CHECK(module, "register_module: module '", name, "' is null");
  children_.emplace_back(name, std::move(module));
  return *children_.back().second;
}
#endif  // DL_HEADER_ONLY

namespace detail {
/// Indents every line but the first by n spaces (PyTorch's _addindent).
DL_API std::string add_indent(const std::string& s, int n);
#if DL_HEADER_ONLY
DL_API std::string add_indent(const std::string& s, int n) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(size_t(n), ' ');
  }
  return out;
}
#endif  // DL_HEADER_ONLY

DL_API std::string repr(Module& m);
#if DL_HEADER_ONLY
DL_API std::string repr(Module& m) {
  std::vector<std::string> extra_lines, child_lines;
  const std::string extra = m.extra_repr();
  if (!extra.empty()) {
    std::istringstream is(extra);
    for (std::string line; std::getline(is, line);) extra_lines.push_back(line);
  }
  FnVisitor v(ignore, ignore, [&](const std::string& name, Module& c) { child_lines.push_back("(" + name + "): " + add_indent(repr(c), 2)); });
  m.visit_members(v);
  std::string s = m.type_name() + "(";
  if (extra_lines.size() == 1 && child_lines.empty()) {
    s += extra_lines[0];
  } else if (!extra_lines.empty() || !child_lines.empty()) {
    s += "\n";
    for (const auto& l : extra_lines) s += "  " + l + "\n";
    for (const auto& l : child_lines) s += "  " + l + "\n";
  }
  return s + ")";
}
#endif  // DL_HEADER_ONLY
}  // namespace detail

DL_API std::ostream& operator<<(std::ostream& os, Module& m);
DL_API std::ostream& operator<<(std::ostream& os, const Module& m);
#if DL_HEADER_ONLY
DL_API std::ostream& operator<<(std::ostream& os, Module& m) { return os << detail::repr(m); }
DL_API std::ostream& operator<<(std::ostream& os, const Module& m) { return os << detail::repr(const_cast<Module&>(m)); }
#endif  // DL_HEADER_ONLY

}  // namespace dl::nn

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, std::vector<dl::Tensor<float>> dl::nn::Module::parameters<float>(bool))
DL_EXTERN_TEMPLATE(nn, std::vector<std::pair<std::string, dl::Tensor<float>>> dl::nn::Module::named_parameters<float>(bool))
