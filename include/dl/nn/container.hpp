// dl/nn/container.hpp — composing modules: the static Sequential (a std::tuple of layers whose
// adjacent compile-time sizes are checked when compiled, with forward folded without virtual
// calls), the dynamic Sequential, ModuleList, ModuleDict, ParameterList, and AnyModule, the
// type-erased module they hold.
//
//   auto mlp = nn::Sequential(nn::Linear<784, 128>(), nn::ReLU(), nn::Linear<128, 10>());   // checked
//   auto dyn = nn::Sequential(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));        // run-time sizes
//   nn::Sequential net;  net.add_module("conv", nn::Conv2d(3, 3, 3));                       // dynamic
//   nn::Sequential named({{"conv1", nn::Conv2d(3, 3, 3)}, {"relu1", nn::ReLU()}});
#pragma once

#include <initializer_list>
#include <tuple>
#include <utility>

#include "../config.hpp"
#include "module.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

/// A module of any type behind a shared pointer, callable on a float tensor when the module is.
class AnyModule {
 public:
  AnyModule() = default;
  /// Takes ownership of a module (moved in).
  template <class M>
    requires(std::derived_from<std::remove_cvref_t<M>, Module> && !std::is_same_v<std::remove_cvref_t<M>, AnyModule>)
  AnyModule(M&& m) : AnyModule(std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(m))) {}
  /// Shares a module.
  template <class M>
    requires std::derived_from<M, Module>
  AnyModule(std::shared_ptr<M> m);

  explicit operator bool() const { return bool(module_); }
  Module& get() const;
  Module* ptr() const { return module_.get(); }
  const std::shared_ptr<Module>& shared() const { return module_; }
  /// The module's call (hooks, then forward) on one float tensor; throws when it takes other arguments.
  Tensor<float> forward(const Tensor<float>& x) const;
  Tensor<float> operator()(const Tensor<float>& x) const { return forward(x); }
  template <template <int64_t...> class Layer>
  Layer<>* as() const { return module_ ? module_->as<Layer>() : nullptr; }
  template <class M>
  auto* as() const { return module_ ? module_->as<M>() : nullptr; }

 private:
  std::shared_ptr<Module> module_;
  Tensor<float> (*forward_)(Module&, const Tensor<float>&) = nullptr;
};

/// Layers in sequence. With layer types (deduced from the arguments) it is a std::tuple whose
/// forward is folded at compile time; without (`nn::Sequential net;`) it is a dynamic list of
/// AnyModule. See the header comment.
template <class... Layers>
class Sequential;

template <class... Layers>
class Sequential : public Module {
  static_assert((std::derived_from<Layers, Module> && ...), "nn::Sequential holds modules: every argument must derive from dl::nn::Module");

 public:
  explicit Sequential(Layers... layers);
  static constexpr size_t size() { return sizeof...(Layers); }
  /// Layer I, typed.
  template <size_t I>
  auto& get() { return std::get<I>(layers_); }
  template <size_t I>
  const auto& get() const { return std::get<I>(layers_); }
  /// Layer I as a Module.
  Module& operator[](size_t i);

  /// Each layer's forward in turn. A Linear or Conv2d followed by a ReLU runs the ReLU in the
  /// product's epilogue; a run of elementwise layers (activations, dropout) is one fused pass.
  template <class X>
  auto forward(X&& x);

  std::string type_name() const override { return "Sequential"; }
  DL_API void visit_declared_(detail::MemberVisitor& v) override;
  template <class... A>
  auto operator()(A&&... a) -> decltype(detail::call_module(*this, std::forward<A>(a)...)) {
    return detail::call_module(*this, std::forward<A>(a)...);
  }

 private:
  std::tuple<Layers...> layers_;
  template <size_t I, class X>
  auto run(X&& x);
  template <size_t K, size_t J, class V>
  auto compose(V&& v);
  void check_runtime_sizes() const;
};

/// The dynamic Sequential: type-erased children in order, named "0", "1", ... or by the caller.
template <>
class Sequential<> : public Module {
 public:
  Sequential() = default;
  /// Named children: nn::Sequential net({{"conv1", nn::Conv2d(3, 3, 3)}, {"relu1", nn::ReLU()}}).
  Sequential(std::initializer_list<std::pair<std::string, AnyModule>> named);
  /// Children named "0", "1", ...: nn::Sequential<>(nn::Linear(2, 3), nn::ReLU()).
  template <class... Ms>
    requires(sizeof...(Ms) > 0 && (std::is_constructible_v<AnyModule, Ms> && ...))
  explicit Sequential(Ms&&... ms);

  /// Appends a child under `name`.
  Sequential& add_module(const std::string& name, AnyModule m);
  /// Appends a child named by its position.
  Sequential& push_back(AnyModule m) { return add_module(std::to_string(items_.size()), std::move(m)); }
  Sequential& append(AnyModule m) { return push_back(std::move(m)); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  AnyModule& operator[](size_t i);
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

  /// Each child's forward in turn (each must take and return one float tensor).
  Tensor<float> forward(const Tensor<float>& x);

  std::string type_name() const override { return "Sequential"; }
  DL_API void visit_declared_(detail::MemberVisitor& v) override;
  template <class... A>
  auto operator()(A&&... a) -> decltype(detail::call_module(*this, std::forward<A>(a)...)) {
    return detail::call_module(*this, std::forward<A>(a)...);
  }

 private:
  std::vector<std::pair<std::string, AnyModule>> items_;
};

Sequential() -> Sequential<>;
Sequential(std::initializer_list<std::pair<std::string, AnyModule>>) -> Sequential<>;

/// A list of modules, indexed and iterated like a vector (PyTorch's ModuleList); children "0", "1", ...
class ModuleList : public Module {
 public:
  ModuleList() = default;
  template <class... Ms>
    requires(sizeof...(Ms) > 0 && (std::is_constructible_v<AnyModule, Ms> && ...))
  explicit ModuleList(Ms&&... ms) { (push_back(AnyModule(std::forward<Ms>(ms))), ...); }
  ModuleList& push_back(AnyModule m);
  ModuleList& append(AnyModule m) { return push_back(std::move(m)); }
  ModuleList& extend(const ModuleList& other);
  ModuleList& insert(size_t index, AnyModule m);
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  AnyModule& operator[](size_t i);
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

  std::string type_name() const override { return "ModuleList"; }
  DL_API void visit_declared_(detail::MemberVisitor& v) override;

 private:
  std::vector<AnyModule> items_;
};

/// Modules by name, in insertion order (PyTorch's ModuleDict).
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  ModuleDict(std::initializer_list<std::pair<std::string, AnyModule>> items);
  /// Adds or replaces (in place) the module under key.
  ModuleDict& insert(const std::string& key, AnyModule m);
  AnyModule& operator[](const std::string& key);
  bool contains(const std::string& key) const;
  size_t size() const { return items_.size(); }
  std::vector<std::string> keys() const;
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

  std::string type_name() const override { return "ModuleDict"; }
  DL_API void visit_declared_(detail::MemberVisitor& v) override;

 private:
  std::vector<std::pair<std::string, AnyModule>> items_;
};

/// Parameters in a list (PyTorch's ParameterList); named "0", "1", ...
class ParameterList : public Module {
 public:
  ParameterList() = default;
  ParameterList(std::initializer_list<Tensor<float>> ps);
  /// Appends t as a parameter (it is made to require grad; it must be a leaf).
  ParameterList& append(Tensor<float> t);
  size_t size() const { return items_.size(); }
  Tensor<float>& operator[](size_t i);
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

  std::string type_name() const override { return "ParameterList"; }
  DL_API std::string extra_repr() const override;
  DL_API void visit_declared_(detail::MemberVisitor& v) override;

 private:
  std::vector<Tensor<float>> items_;
};

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Which dimension a layer's compile-time size counts: the last one (Linear) or dim 1 (convolution
/// channels).
enum class Axis { none, last, channel };

/// Layers describe their sizes with static members; a layer that does not is "unknown" (the flow
/// of sizes restarts after it).
template <class L>
constexpr int64_t static_in() {
  if constexpr (requires { L::static_in_features; }) return L::static_in_features;
  else return dynamic;
}
template <class L>
constexpr int64_t static_out() {
  if constexpr (requires { L::static_out_features; }) return L::static_out_features;
  else return dynamic;
}
template <class L>
constexpr Axis feature_axis() {
  if constexpr (requires { L::feature_axis; }) return L::feature_axis;
  else return Axis::none;
}
/// Layers that keep the size of an axis (activations and dropout keep both, pooling the channels).
template <class L>
constexpr bool keeps_axis(Axis a) {
  if constexpr (requires { L::keeps_axis(a); }) return L::keeps_axis(a);
  else return false;
}
template <class L>
inline constexpr bool is_elementwise_layer = requires { requires L::elementwise; };

/// One compile-time check of two adjacent sizes; its instantiation (in the error's context) names
/// the layer index and both sizes.
template <size_t Index, int64_t Produced, int64_t Expected>
struct sequential_sizes_agree {
  static_assert(Produced == Expected,
                "nn::Sequential: a layer takes a different number of features (or channels) than the layer before it "
                "produces; the comparison below shows (produced == expected)");
  static constexpr bool value = true;
};

/// The same check for nn::check_sizes.
template <size_t Index, int64_t Produced, int64_t Expected>
struct check_sizes_agree {
  static_assert(Produced == Expected,
                "nn::check_sizes: a layer takes a different number of features (or channels) than the layer before it "
                "produces; the comparison below shows (produced == expected)");
  static constexpr bool value = true;
};

/// Walks the layers with the current (size, axis) and instantiates a check where both are known.
template <template <size_t, int64_t, int64_t> class Check, size_t I, int64_t Size, Axis A, class... Ls>
struct SizeFlow {
  static constexpr bool value = true;
};
template <template <size_t, int64_t, int64_t> class Check, size_t I, int64_t Size, Axis A, class L, class... Ls>
struct SizeFlow<Check, I, Size, A, L, Ls...> {
  static constexpr int64_t in = static_in<L>();
  static constexpr Axis axis = feature_axis<L>();
  // conditional_t names the check without instantiating it unless both sizes are known.
  static constexpr bool checked = std::conditional_t<Size == dynamic || in == dynamic || axis != A, std::true_type,
                                                     Check<I, Size, in>>::value;
  static constexpr int64_t out = static_out<L>();
  static constexpr int64_t next_size = out != dynamic ? out : (A != Axis::none && keeps_axis<L>(A) ? Size : dynamic);
  static constexpr Axis next_axis = out != dynamic ? axis : (A != Axis::none && keeps_axis<L>(A) ? A : Axis::none);
  static constexpr bool value = checked && SizeFlow<Check, I + 1, next_size, next_axis, Ls...>::value;
};

/// The run-time half: adjacent layers on the same axis agree in their input_size() / output_size().
template <class... Layers>
void check_runtime_sizes(const char* who, const Layers&... layers) {
  int64_t size = dynamic;
  Axis axis = Axis::none;
  size_t index = 0;
  std::string prev_name;
  auto step = [&](const auto& l) {
    using L = std::remove_cvref_t<decltype(l)>;
    int64_t in = dynamic, out = dynamic;
    if constexpr (requires { l.input_size(); }) in = l.input_size();
    if constexpr (requires { l.output_size(); }) out = l.output_size();
    constexpr Axis a = feature_axis<L>();
    DL_CHECK(size == dynamic || in == dynamic || a != axis || size == in, who, ": layer ", index, " (", l.type_name(), ") takes ", in,
             a == Axis::channel ? " channels" : " features", " but layer ", index - 1, " (", prev_name, ") produces ", size);
    if (out != dynamic) {
      size = out;
      axis = a;
    } else if (!(axis != Axis::none && keeps_axis<L>(axis))) {
      size = dynamic;
      axis = Axis::none;
    }
    prev_name = l.type_name();
    ++index;
  };
  (step(layers), ...);
}

/// A Linear or Conv2d can take an activation into its epilogue; ReLU offers one.
template <class L, class Next>
inline constexpr bool epilogue_fusable = requires(L& l, Next& n, const Tensor<float>& x) { l.forward_with_activation(x, n.epilogue()); };

template <class... Ls>
constexpr size_t elementwise_run_end(size_t i) {
  constexpr bool ew[] = {is_elementwise_layer<Ls>..., false};
  while (i < sizeof...(Ls) && ew[i]) ++i;
  return i;
}

}  // namespace detail

template <class M>
  requires std::derived_from<M, Module>
AnyModule::AnyModule(std::shared_ptr<M> m) : module_(std::move(m)) {
  if constexpr (requires(M& mod, const Tensor<float>& x) {
                  { mod(x) } -> std::convertible_to<Tensor<float>>;
                }) {
    forward_ = [](Module& b, const Tensor<float>& x) { return Tensor<float>(static_cast<M&>(b)(x)); };
  }
}

// --- static Sequential

template <class... Layers>
Sequential<Layers...>::Sequential(Layers... layers) : layers_(std::move(layers)...) {
  static_assert(detail::SizeFlow<detail::sequential_sizes_agree, 0, dynamic, detail::Axis::none, Layers...>::value);
  check_runtime_sizes();
}

template <class... Layers>
void Sequential<Layers...>::check_runtime_sizes() const {
  // Run-time sizes (nn::Linear(784, 128)): adjacent layers on the same axis must agree.
  std::apply([](const auto&... ls) { detail::check_runtime_sizes("nn::Sequential", ls...); }, layers_);
}

/// Checks that layers a hand-written forward applies one after another agree in size, as
/// nn::Sequential's constructor does: when compiling, wherever both sizes are template arguments
/// (`check_sizes(conv1, conv2)` with Conv2d<1, 8> then Conv2d<16, 8> fails on a static_assert whose
/// note shows 8 == 16); when called, for sizes given at run time (a dl::Error naming both layers).
/// Layers that keep a size (activations, dropout; pooling keeps channels) pass it on. Call it in the
/// module's constructor (or forward: the compile-time part costs nothing at run time).
template <class... Layers>
  requires(std::derived_from<Layers, Module> && ...)
void check_sizes(const Layers&... layers) {
  static_assert(detail::SizeFlow<detail::check_sizes_agree, 0, dynamic, detail::Axis::none, Layers...>::value);
  detail::check_runtime_sizes("nn::check_sizes", layers...);
}

template <class... Layers>
Module& Sequential<Layers...>::operator[](size_t i) {
  DL_CHECK(i < size(), "Sequential: index ", i, " is out of range (", size(), " layers)");
  Module* out = nullptr;
  size_t k = 0;
  std::apply([&](auto&... ls) { ((k++ == i ? (out = &ls, 0) : 0), ...); }, layers_);
  return *out;
}

template <class... Layers>
void Sequential<Layers...>::visit_declared_(detail::MemberVisitor& v) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (size_t i = 0; i < sizeof...(Layers); ++i) n.push_back(std::to_string(i));
    return n;
  }();
  size_t k = 0;
  std::apply([&](auto&... ls) { (detail::visit_one(v, names[k++], ls), ...); }, layers_);
}

template <class... Layers>
template <class X>
auto Sequential<Layers...>::forward(X&& x) {
  return run<0>(std::forward<X>(x));
}

template <class... Layers>
template <size_t I, class X>
auto Sequential<Layers...>::run(X&& x) {
  constexpr size_t N = sizeof...(Layers);
  if constexpr (I == N) {
    return detail::module_result_t<X>(std::forward<X>(x));
  } else {
    using L = std::tuple_element_t<I, std::tuple<Layers...>>;
    auto& layer = std::get<I>(layers_);
    if constexpr (I + 1 < N) {
      using Next = std::tuple_element_t<I + 1, std::tuple<Layers...>>;
      if constexpr (detail::epilogue_fusable<L, Next>) {
        auto& next = std::get<I + 1>(layers_);
        if (!layer.has_forward_hooks() && !next.has_forward_hooks())
          return run<I + 2>(layer.forward_with_activation(std::forward<X>(x), next.epilogue()));
      }
    }
    if constexpr (detail::is_elementwise_layer<L>) {
      constexpr size_t J = detail::elementwise_run_end<Layers...>(I);
      if constexpr (J > I + 1) {  // a run of elementwise layers: composed lazily, evaluated once
        bool hooks = false;
        [&]<size_t... K>(std::index_sequence<K...>) {
          ((hooks = hooks || std::get<I + K>(layers_).has_forward_hooks()), ...);
        }(std::make_index_sequence<J - I>{});
        if (!hooks) {
          using R = detail::module_result_t<decltype(compose<I, J>(x))>;
          return run<J>(R(compose<I, J>(std::forward<X>(x))));
        }
      }
    }
    return run<I + 1>(layer(std::forward<X>(x)));
  }
}

template <class... Layers>
template <size_t K, size_t J, class V>
auto Sequential<Layers...>::compose(V&& v) {
  if constexpr (K == J) return std::remove_cvref_t<V>(std::forward<V>(v));
  else return compose<K + 1, J>(std::get<K>(layers_).forward(std::forward<V>(v)));
}

// --- dynamic Sequential

template <class... Ms>
  requires(sizeof...(Ms) > 0 && (std::is_constructible_v<AnyModule, Ms> && ...))
Sequential<>::Sequential(Ms&&... ms) {
  (push_back(AnyModule(std::forward<Ms>(ms))), ...);
}

// --- ModuleList

// --- ModuleDict

// --- ParameterList

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "container-inl.hpp"
#endif
