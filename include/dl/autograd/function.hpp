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
#pragma once

#include <algorithm>
#include <any>
#include <cstdlib>
#include <cxxabi.h>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "../tensor/tensor.hpp"
#include "engine.hpp"

namespace dl::autograd {

/// What forward leaves for backward: saved tensors (checked against in-place changes) and any
/// other values.
class Context {
 public:
  template <class... Ts>
  void save_for_backward(const Tensor<Ts>&... ts) {
    (saved_.emplace_back(ts.impl(), "a custom Function"), ...);
  }
  /// Saved tensor i; throws if it was modified in place after forward, or released.
  template <scalar_type T>
  Tensor<T> saved(size_t i) const {
    DL_CHECK(i < saved_.size(), "Context::saved: index ", i, " but ", saved_.size(), " tensors were saved");
    return Tensor<T>(saved_[i].unpack());
  }
  size_t num_saved() const { return saved_.size(); }
  /// Non-tensor values, by name (PyTorch's ctx.attribute = value).
  std::map<std::string, std::any> saved_data;
  /// needs_input_grad(i): whether tensor input i wants a gradient.
  bool needs_input_grad(size_t i) const { return i < needs_.size() && needs_[i]; }

  void release() {
    for (auto& s : saved_) s.release();
  }

 private:
  template <class F>
  friend struct Function;
  std::vector<SavedTensor> saved_;
  std::vector<bool> needs_;
};

namespace detail {

template <class T>
inline constexpr bool is_tensor_arg = expr::is_tensor_v<std::remove_cvref_t<T>>;

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
template <scalar_type T>
struct Outputs<Tensor<T>> {
  static void attach(Tensor<T>& t, const std::shared_ptr<Node>& node, const std::vector<TensorImplPtr>& inputs) {
    if (std::find(inputs.begin(), inputs.end(), t.impl()) != inputs.end()) t = t.detach();
    set_history(t, node, 0);
  }
};
template <scalar_type T>
struct Outputs<std::vector<Tensor<T>>> {
  static void attach(std::vector<Tensor<T>>& v, const std::shared_ptr<Node>& node, const std::vector<TensorImplPtr>& inputs) {
    for (uint32_t i = 0; i < v.size(); ++i) {
      if (std::find(inputs.begin(), inputs.end(), v[i].impl()) != inputs.end()) v[i] = v[i].detach();
      set_history(v[i], node, i);
    }
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
    using Out = decltype(F::forward(*ctx, args...));
    Out out;
    {
      NoGradGuard no_grad;
      out = F::forward(*ctx, args...);
    }
    const bool any = is_grad_enabled() && std::any_of(edges.begin(), edges.end(), [](const Edge& e) { return e.valid(); });
    if (any) {
      auto node = std::make_shared<FunctionNode>(ctx, edges, typeid(F).name());
      detail::Outputs<Out>::attach(out, node, detail::tensor_impls(args...));
    }
    return out;
  }

 private:
  class FunctionNode : public Node {
   public:
    FunctionNode(std::shared_ptr<Context> ctx, std::vector<Edge> edges, std::string name) : ctx_(std::move(ctx)), name_(std::move(name)) {
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
      // A missing output gradient is zeros of the output's shape.
      grads.resize(outputs().size());
      for (size_t i = 0; i < grads.size(); ++i)
        if (!grads[i]) {
          const OutputInfo& info = outputs()[i];
          grads[i] = dl::detail::make_impl(ScalarType(info.dtype), info.shape);
          std::memset(grads[i]->data(), 0, size_t(numel(info.shape)) * element_size(ScalarType(info.dtype)));
        }
      std::vector<TensorImplPtr> out;
      invoke(grads, out, std::make_index_sequence<backward_arity()>{});
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

    template <size_t... Is>
    void invoke(const std::vector<TensorImplPtr>& grads, std::vector<TensorImplPtr>& out, std::index_sequence<Is...>) {
      DL_CHECK(grads.size() == sizeof...(Is), "function ", name_, ": backward takes ", sizeof...(Is), " gradients but forward produced ",
               grads.size(), " outputs");
      detail::collect_grads(F::backward(*ctx_, std::remove_cvref_t<std::tuple_element_t<Is + 1, backward_args>>(grads[Is])...), out);
    }

    std::shared_ptr<Context> ctx_;
    std::string name_;
  };
};

}  // namespace dl::autograd
