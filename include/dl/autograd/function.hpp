// dl/autograd/function.hpp — custom differentiable functions (PyTorch's autograd.Function):
//
//   struct MyReLU : dl::autograd::Function<MyReLU> {
//     static dl::Tensor<float> forward(dl::autograd::Context& ctx, const dl::Tensor<float>& x) {
//       ctx.save_for_backward(x);
//       return dl::relu(x);
//     }
//     static dl::Tensor<float> backward(dl::autograd::Context& ctx, const dl::Tensor<float>& g) {
//       auto x = ctx.saved<float>(0);
//       return dl::where(x > 0.0f, g, 0.0f);
//     }
//   };
//   dl::Tensor<float> y = MyReLU::apply(x);
//
// forward runs without recording; backward receives one gradient per output and returns one
// gradient per tensor input (a Tensor, or a std::vector / std::tuple of them; an undefined Tensor
// means "no gradient").
//
// libtorch's spelling compiles too: a context pointer, one list of gradients, one gradient per
// argument (undefined for the non-tensor ones), saved_data read with toDouble() / toInt():
//
//   struct MulConstant : dl::autograd::Function<MulConstant> {
//     static dl::Tensor<float> forward(dl::autograd::AutogradContext* ctx, dl::Tensor<float> x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * float(c);
//     }
//     static dl::autograd::variable_list backward(dl::autograd::AutogradContext* ctx, dl::autograd::variable_list g) {
//       return {g[0] * float(ctx->saved_data["c"].toDouble()), dl::Tensor<float>()};
//     }
//   };
#pragma once

#include <algorithm>
#include <any>
#include <cstdlib>
#include <cxxabi.h>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "../tensor/tensor.hpp"
#include "engine.hpp"

namespace dl::autograd {

/// libtorch's list of tensors (torch::autograd::variable_list) for float tensors; other element
/// types write std::vector<Tensor<T>>.
using variable_list = std::vector<Tensor<float>>;
using tensor_list = variable_list;

/// A value kept in Context::saved_data: any copyable value, read back with std::any_cast or with
/// libtorch's IValue accessors (toDouble, toInt, toBool, toTensor).
class SavedValue : public std::any {
 public:
  using std::any::any;
  using std::any::operator=;
  SavedValue() = default;

  /// A double, float or integer value as a double.
  double toDouble() const {
    if (const auto* v = std::any_cast<double>(this)) return *v;
    if (const auto* v = std::any_cast<float>(this)) return *v;
    if (const auto i = as_int()) return double(*i);
    throw_wrong("toDouble", "a double");
  }
  /// An integer value (any integer type) as int64_t.
  int64_t toInt() const {
    if (const auto i = as_int()) return *i;
    throw_wrong("toInt", "an integer");
  }
  bool toBool() const {
    if (const auto* v = std::any_cast<bool>(this)) return *v;
    throw_wrong("toBool", "a bool");
  }
  template <scalar_type T = float>
  Tensor<T> toTensor() const {
    if (const auto* v = std::any_cast<Tensor<T>>(this)) return *v;
    throw_wrong("toTensor", "a Tensor of that element type");
  }
  /// The value as T (std::any_cast with dl's error).
  template <class T>
  T to() const {
    if (const auto* v = std::any_cast<T>(this)) return *v;
    throw_wrong("to<T>", "a value of that type");
  }

 private:
  std::optional<int64_t> as_int() const {
    if (const auto* v = std::any_cast<int64_t>(this)) return *v;
    if (const auto* v = std::any_cast<int>(this)) return *v;
    if (const auto* v = std::any_cast<long long>(this)) return int64_t(*v);
    if (const auto* v = std::any_cast<uint64_t>(this)) return int64_t(*v);
    if (const auto* v = std::any_cast<unsigned>(this)) return int64_t(*v);
    return std::nullopt;
  }
  [[noreturn]] void throw_wrong(const char* call, const char* wanted) const {
    int status = 0;
    std::string held = has_value() ? type().name() : "nothing";
    if (char* d = has_value() ? abi::__cxa_demangle(held.c_str(), nullptr, nullptr, &status) : nullptr) {
      held = d;
      std::free(d);
    }
    throw Error(dl::detail::cat("saved_data: ", call, "() needs ", wanted, ", but the value holds ", held));
  }
};

/// What forward leaves for backward: saved tensors (checked against in-place changes) and any
/// other values.
class Context {
 public:
  template <class... Ts>
  void save_for_backward(const Tensor<Ts>&... ts) {
    (saved_.emplace_back(ts.impl(), "a custom Function"), ...);
  }
  /// libtorch's form: ctx->save_for_backward({input, weight, bias}) (undefined tensors allowed).
  template <scalar_type T>
  void save_for_backward(const std::vector<Tensor<T>>& ts) {
    for (const Tensor<T>& t : ts) saved_.emplace_back(t.impl(), "a custom Function");
  }
  template <scalar_type T>
  void save_for_backward(std::initializer_list<Tensor<T>> ts) {
    save_for_backward(std::vector<Tensor<T>>(ts));
  }
  /// Every saved tensor, in order (libtorch's get_saved_variables); throws as saved() does.
  template <scalar_type T = float>
  std::vector<Tensor<T>> get_saved_variables() const {
    std::vector<Tensor<T>> out;
    for (size_t i = 0; i < saved_.size(); ++i) out.push_back(saved<T>(i));
    return out;
  }
  /// Saved tensor i; throws if it was modified in place after forward, or released.
  template <scalar_type T>
  Tensor<T> saved(size_t i) const {
    DL_CHECK(i < saved_.size(), "Context::saved: index ", i, " but ", saved_.size(), " tensors were saved");
    return Tensor<T>(saved_[i].unpack());
  }
  size_t num_saved() const { return saved_.size(); }
  /// Non-tensor values, by name (PyTorch's ctx.attribute = value).
  std::map<std::string, SavedValue> saved_data;
  /// needs_input_grad(i): whether tensor input i wants a gradient.
  bool needs_input_grad(size_t i) const { return i < needs_.size() && needs_[i]; }
  /// Outputs that are not differentiable (indices, masks): they get no history and do not require
  /// grad; backward still gets a gradient for each (zeros, or undefined after
  /// set_materialize_grads(false)).
  template <class... Ts>
  void mark_non_differentiable(const Tensor<Ts>&... ts) {
    (non_differentiable_.push_back(ts.impl()), ...);
  }
  template <scalar_type T>
  void mark_non_differentiable(const std::vector<Tensor<T>>& ts) {
    for (const Tensor<T>& t : ts) non_differentiable_.push_back(t.impl());
  }
  /// false: gradients of outputs that did not take part in the loss arrive undefined instead of
  /// as zeros (PyTorch's ctx.set_materialize_grads).
  void set_materialize_grads(bool value) { materialize_grads_ = value; }

  void release() {
    for (auto& s : saved_) s.release();
  }

 private:
  template <class F>
  friend struct Function;
  std::vector<SavedTensor> saved_;
  std::vector<bool> needs_;
  std::vector<TensorImplPtr> non_differentiable_;
  bool materialize_grads_ = true;
};

/// libtorch's name of the context (its functions take an AutogradContext*).
using AutogradContext = Context;

namespace detail {

template <class T>
inline constexpr bool is_tensor_arg = expr::is_tensor_v<std::remove_cvref_t<T>>;
template <class L>
inline constexpr bool is_tensor_vector = false;
template <class T>
inline constexpr bool is_tensor_vector<std::vector<Tensor<T>>> = true;

/// Collects the gradient edges of the tensor arguments, in order.
template <class... Args>
std::vector<Edge> tensor_edges(const Args&... args) {
  std::vector<Edge> edges;
  auto one = [&](const auto& a) {
    if constexpr (is_tensor_arg<decltype(a)>) edges.push_back(a.defined() ? gradient_edge(a.impl()) : Edge{});
  };
  (one(args), ...);
  return edges;
}

/// The outputs of forward: a Tensor or a std::vector of them. `attach` makes `node` their history;
/// an output that is one of the inputs is first given its own handle, so the input keeps its own.
template <class Out>
struct Outputs;
/// Output t (number `nr` of the node) gets the node as its history, unless it was marked not
/// differentiable.
template <scalar_type T>
void attach_one(Tensor<T>& t, uint32_t nr, const std::shared_ptr<Node>& node, const std::vector<TensorImplPtr>& inputs,
                const std::vector<TensorImplPtr>& non_differentiable) {
  const bool nondiff = std::find(non_differentiable.begin(), non_differentiable.end(), t.impl()) != non_differentiable.end();
  if (std::find(inputs.begin(), inputs.end(), t.impl()) != inputs.end()) t = t.detach();
  if (nondiff) {  // still one of the node's outputs: backward gets a gradient slot for it
    auto& outs = node->mutable_outputs();
    if (outs.size() <= nr) outs.resize(nr + 1);
    outs[nr] = {t.shape(), uint8_t(dtype_of<T>)};
    return;
  }
  set_history(t, node, nr);
}
template <scalar_type T>
struct Outputs<Tensor<T>> {
  static void attach(Tensor<T>& t, const std::shared_ptr<Node>& node, const std::vector<TensorImplPtr>& inputs,
                     const std::vector<TensorImplPtr>& nondiff) {
    attach_one(t, 0, node, inputs, nondiff);
  }
};
template <scalar_type T>
struct Outputs<std::vector<Tensor<T>>> {
  static void attach(std::vector<Tensor<T>>& v, const std::shared_ptr<Node>& node, const std::vector<TensorImplPtr>& inputs,
                     const std::vector<TensorImplPtr>& nondiff) {
    for (uint32_t i = 0; i < v.size(); ++i) attach_one(v[i], i, node, inputs, nondiff);
  }
};

template <class... Args>
std::vector<TensorImplPtr> tensor_impls(const Args&... args) {
  std::vector<TensorImplPtr> out;
  auto one = [&](const auto& a) {
    if constexpr (is_tensor_arg<decltype(a)>) out.push_back(a.impl());
  };
  (one(args), ...);
  return out;
}

/// Turns what backward returned into one impl per tensor input.
template <class R>
void collect_grads(const R& r, std::vector<TensorImplPtr>& out) {
  if constexpr (expr::is_tensor_v<R>) {
    out.push_back(r.defined() ? r.impl() : nullptr);
  } else if constexpr (requires { std::tuple_size<R>::value; }) {
    std::apply([&](const auto&... t) { (collect_grads(t, out), ...); }, r);
  } else {
    for (const auto& t : r) collect_grads(t, out);
  }
}

}  // namespace detail

/// CRTP base of custom functions; see the header comment.
template <class F>
struct Function {
  template <class... Args>
  static auto apply(const Args&... args) {
    auto ctx = std::make_shared<Context>();
    const std::vector<Edge> edges = detail::tensor_edges(args...);
    for (const Edge& e : edges) ctx->needs_.push_back(e.valid());
    using Out = decltype(call_forward(*ctx, args...));
    Out out;
    {
      NoGradGuard no_grad;
      out = call_forward(*ctx, args...);
    }
    const bool any = is_grad_enabled() && std::any_of(edges.begin(), edges.end(), [](const Edge& e) { return e.valid(); });
    if (any) {
      auto node = std::make_shared<FunctionNode>(ctx, edges, typeid(F).name(), std::vector<bool>{detail::is_tensor_arg<Args>...});
      detail::Outputs<Out>::attach(out, node, detail::tensor_impls(args...), ctx->non_differentiable_);
    }
    return out;
  }

  /// forward(Context&, ...) or libtorch's forward(AutogradContext*, ...).
  template <class... Args>
  static auto call_forward(Context& ctx, const Args&... args) {
    if constexpr (requires { F::forward(&ctx, args...); }) return F::forward(&ctx, args...);
    else return F::forward(ctx, args...);
  }

 private:
  class FunctionNode : public Node {
   public:
    FunctionNode(std::shared_ptr<Context> ctx, std::vector<Edge> edges, std::string name, std::vector<bool> arg_is_tensor)
        : ctx_(std::move(ctx)), name_(std::move(name)), arg_is_tensor_(std::move(arg_is_tensor)) {
      mutable_next_edges() = std::move(edges);
      // typeid names are mangled: demangle and keep the unqualified name ("MyReLU").
      int status = 0;
      if (char* d = abi::__cxa_demangle(name_.c_str(), nullptr, nullptr, &status)) {
        name_ = d;
        std::free(d);
      }
      if (const size_t p = name_.rfind("::"); p != std::string::npos) name_ = name_.substr(p + 2);
      name_ += "Backward";
    }
    std::string name() const override { return name_; }
    void release_variables() override { ctx_->release(); }
    std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
      // A missing output gradient is zeros of the output's shape (undefined without materialize_grads).
      grads.resize(outputs().size());
      for (size_t i = 0; i < grads.size(); ++i)
        if (!grads[i] && ctx_->materialize_grads_) {
          const OutputInfo& info = outputs()[i];
          grads[i] = dl::detail::make_impl(ScalarType(info.dtype), info.shape);
          std::memset(grads[i]->data(), 0, size_t(numel(info.shape)) * element_size(ScalarType(info.dtype)));
        }
      std::vector<TensorImplPtr> out;
      if constexpr (list_backward) {
        using L = std::remove_cvref_t<std::tuple_element_t<1, backward_args>>;
        L list;
        for (const TensorImplPtr& g : grads) list.push_back(typename L::value_type(g));
        detail::collect_grads(F::backward(ctx_arg(), std::move(list)), out);
      } else {
        invoke(grads, out, std::make_index_sequence<backward_arity()>{});
      }
      // libtorch returns one gradient per argument, undefined for the non-tensor ones: keep the
      // tensor arguments' (a defined gradient for a non-tensor argument is an error).
      if (out.size() == arg_is_tensor_.size() && out.size() != next_edges().size()) {
        std::vector<TensorImplPtr> kept;
        for (size_t i = 0; i < out.size(); ++i) {
          DL_CHECK(arg_is_tensor_[i] || !out[i], "function ", name_, " returned a gradient for argument ", i,
                   ", which is not a tensor (return an undefined tensor there)");
          if (arg_is_tensor_[i]) kept.push_back(out[i]);
        }
        out = std::move(kept);
      }
      // Undefined gradients past the tensor inputs (for defaulted or non-tensor arguments, as
      // libtorch's `return {grad, torch::Tensor()}`) are dropped, as libtorch does.
      while (out.size() > next_edges().size() && !out.back()) out.pop_back();
      DL_CHECK(out.size() == next_edges().size(), "function ", name_, " returned an incorrect number of gradients (expected ",
               next_edges().size(), ", got ", out.size(), ")");
      return out;
    }

   private:
    template <class S>
    struct signature;
    template <class R, class... A>
    struct signature<R (*)(A...)> {
      using args = std::tuple<A...>;
    };
    using backward_args = typename signature<decltype(&F::backward)>::args;
    static constexpr size_t backward_arity() { return std::tuple_size_v<backward_args> - 1; }
    /// backward(ctx, variable_list): every output's gradient in one list (libtorch's form).
    static constexpr bool list_backward =
        backward_arity() == 1 && detail::is_tensor_vector<std::remove_cvref_t<std::tuple_element_t<1, backward_args>>>;
    /// The context as backward takes it: a reference, or libtorch's pointer.
    decltype(auto) ctx_arg() const {
      if constexpr (std::is_pointer_v<std::tuple_element_t<0, backward_args>>) return ctx_.get();
      else return (*ctx_);
    }

    template <size_t... Is>
    void invoke(const std::vector<TensorImplPtr>& grads, std::vector<TensorImplPtr>& out, std::index_sequence<Is...>) {
      DL_CHECK(grads.size() == sizeof...(Is), "function ", name_, ": backward takes ", sizeof...(Is), " gradients but forward produced ",
               grads.size(), " outputs");
      detail::collect_grads(F::backward(ctx_arg(), std::remove_cvref_t<std::tuple_element_t<Is + 1, backward_args>>(grads[Is])...), out);
    }

    std::shared_ptr<Context> ctx_;
    std::string name_;
    std::vector<bool> arg_is_tensor_;
  };
};

}  // namespace dl::autograd
