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

namespace detail {
template <class M>
inline constexpr bool dependent_false_v = false;
}  // namespace detail

/// What register_module returns: a shared pointer to the module this module now owns. It does not
/// convert to a module reference, so `member = register_module("m", ...)` (which would copy the
/// module and leave the member out of eval(), to() and hooks) does not compile.
template <class M>
class Registered : public std::shared_ptr<M> {
 public:
  using std::shared_ptr<M>::shared_ptr;
  explicit Registered(std::shared_ptr<M> p) : std::shared_ptr<M>(std::move(p)) {}
  template <class U>
  operator U&() const {
    static_assert(detail::dependent_false_v<U>,
                  "register_module returns a shared pointer to the module it now owns; assigning it to a module member "
                  "would copy it (eval() would not reach the member): list the member in DL_MODULE, or hold it as "
                  "std::shared_ptr<M> / use `*register_module(...)`");
    return *this->get();
  }
};

/// One (name, tensor) of named_parameters / named_buffers, or (name, module) of named_children /
/// named_modules: a std::pair (.first, .second, structured bindings) that also has libtorch's
/// OrderedDict item accessors key() and value().
template <class V>
struct Named : std::pair<std::string, V> {
  using std::pair<std::string, V>::pair;
  const std::string& key() const noexcept { return this->first; }
  V& value() noexcept { return this->second; }
  const V& value() const noexcept { return this->second; }
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
  std::vector<Named<Tensor<T>>> named_parameters(bool recurse = true);
  /// Buffers (running statistics, counters...), of any element type.
  std::vector<AnyTensor> buffers(bool recurse = true);
  std::vector<Named<AnyTensor>> named_buffers(bool recurse = true);
  /// Direct submodules.
  std::vector<Module*> children();
  std::vector<Named<Module*>> named_children();
  /// This module and every submodule, depth first (each once); names joined with ".".
  std::vector<Module*> modules();
  std::vector<Named<Module*>> named_modules(const std::string& prefix = "");

  /// Calls fn on every submodule (children first, then each's own children... then this), as PyTorch.
  Module& apply(const std::function<void(Module&)>& fn);
  /// `m.as<nn::Linear>()`: a pointer to m as a Linear of any size (static or run-time), else null.
  template <template <int64_t...> class Layer>
  Layer<>* as() { return dynamic_cast<Layer<>*>(this); }
  /// `m.as<Net>()`: a pointer to m as that class, else null. A libtorch holder names its module class:
  /// `m.as<torch::nn::Linear>()` is a `torch::nn::LinearImpl*`, as in libtorch.
  template <class M>
  auto* as() {
    if constexpr (requires { typename M::ContainedType; }) return dynamic_cast<typename M::ContainedType*>(this);
    else return dynamic_cast<M*>(this);
  }

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
  /// Adds a submodule, moved in and owned by this module, and returns a shared pointer to it
  /// (libtorch returns its holder): `auto proj = register_module("proj", nn::Linear(2, 3));`.
  /// An lvalue (a member) is refused at compile time: registering would copy it, and eval() or
  /// to() would then reach the copy, not the member. List members in DL_MODULE instead.
  template <class M>
    requires std::derived_from<std::remove_cvref_t<M>, Module>
  Registered<std::remove_cvref_t<M>> register_module(const std::string& name, M&& module);
  /// Adds a submodule shared with the caller (the caller's pointer reaches the same module).
  template <class M>
    requires std::derived_from<M, Module>
  Registered<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module_(name, module);
    return Registered<M>(std::move(module));
  }
  /// Adds the submodule a libtorch module holder shares (`torch::nn::Linear` from dl/torch.hpp)
  /// and returns the holder, as libtorch: `fc = register_module("fc", torch::nn::Linear(2, 3));`.
  template <class H>
    requires requires(const H& h) {
      typename H::ContainedType;
      { h.ptr() } -> std::convertible_to<std::shared_ptr<Module>>;
    }
  H register_module(const std::string& name, H holder) {
    register_module_(name, holder.ptr());
    return holder;
  }

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
  DL_API void register_module_(const std::string& name, std::shared_ptr<Module> module);
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
  /* A class inside a function cannot hold DL_MODULE's member templates: the compiler's first     */ \
  /* error then names this member, which says what to do.                                         */ \
  static constexpr bool DL_MODULE_needs_the_class_at_namespace_scope_move_it_out_of_the_function = true; \
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
  }                                                                                                 \
  template <class... DlArgs>                                                                        \
  auto operator()(DlArgs&&...) -> ::dl::nn::detail::no_forward_for<decltype(*this), DlArgs...> = delete;

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

template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;
template <class T>
inline constexpr bool is_shared_ptr_v = false;
template <class T>
inline constexpr bool is_shared_ptr_v<std::shared_ptr<T>> = true;
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
/// (Chosen lazily: tensor_t of a non-expression, a module returning a tuple, must not be formed.)
template <class R, bool = expr::is_apply_v<R>>
struct module_result {
  using type = R;
};
template <class R>
struct module_result<R, true> {
  using type = expr::tensor_t<R>;
};
template <class R>
using module_result_t = typename module_result<std::remove_cvref_t<R>>::type;

/// What calling a module returns when it has no forward, or none that takes these arguments:
/// DL_MODULE's second call operator is deleted and returns this type, so the compiler's first
/// error names the mistake and the argument types: "use of deleted function
/// 'dl::nn::detail::module_has_no_forward_taking_these_arguments Net::operator()(DlArgs&& ...)
/// [with DlArgs = {dl::Tensor<float>&}]'" (declare `forward` with those parameters, or convert the
/// argument: an Embedding's forward takes Tensor<int64_t>). A deleted overload rather than a
/// static_assert: `std::is_invocable_v<Net, X>` stays false, which AnyModule's check relies on.
struct module_has_no_forward_taking_these_arguments {};
template <class M, class... Args>
inline constexpr bool has_forward = requires(M& m, Args&&... a) { m.forward(std::forward<Args>(a)...); };
template <class Self, class... Args>
using no_forward_for =
    std::enable_if_t<!has_forward<std::remove_reference_t<Self>, Args...>, module_has_no_forward_taking_these_arguments>;

/// DL_MODULE's call operator: forward, with the hooks when there are any. Not callable when
/// forward does not take these arguments (the deleted overload above is chosen instead).
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
std::vector<Named<Tensor<T>>> Module::named_parameters(bool recurse) {
  std::vector<Named<Tensor<T>>> out;
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

// zero_grad, requires_grad_ and to work on the tensors' autograd slots directly, not through
// Tensor<T>: typed calls would compile float64 (and other) kernels into every program that
// includes this header.

namespace detail {
/// dst <- src (same shape), converting between float and double; other dtype pairs must match.
/// Plain loops rather than typed tensor kernels: this is compiled into every program with modules.
DL_API void copy_into(const AnyTensor& dst, const AnyTensor& src, const std::string& key);
}  // namespace detail

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
Registered<std::remove_cvref_t<M>> Module::register_module(const std::string& name, M&& module) {
  static_assert(!std::is_lvalue_reference_v<M>,
                "register_module(name, member) would register a copy of the member (eval(), train() and to() would not "
                "reach it): list the member in DL_MODULE(Net, ..., member), or move a module in: "
                "register_module(name, std::move(m)), or share one: register_module(name, std::make_shared<M>(...))");
  using D = std::remove_cvref_t<M>;
  auto p = std::make_shared<D>(std::move(module));
  register_module_(name, p);
  return Registered<D>(std::move(p));
}

namespace detail {
/// Indents every line but the first by n spaces (PyTorch's _addindent).
DL_API std::string add_indent(const std::string& s, int n);

DL_API std::string repr(Module& m);
}  // namespace detail

DL_API std::ostream& operator<<(std::ostream& os, Module& m);
DL_API std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace dl::nn

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, std::vector<dl::Tensor<float>> dl::nn::Module::parameters<float>(bool))
DL_EXTERN_TEMPLATE(nn, std::vector<dl::nn::Named<dl::Tensor<float>>> dl::nn::Module::named_parameters<float>(bool))

#if DL_HEADER_ONLY
#include "module-inl.hpp"
#endif
