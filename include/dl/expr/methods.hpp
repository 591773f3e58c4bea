// dl/expr/methods.hpp — member functions shared by Tensor and lazy expressions, so that PyTorch
// style chains read the same: (y_pred - y).pow(2).sum(), x.sigmoid().mean(1, true).
// Elementwise members return lazy expressions; reductions return tensors.
#pragma once

#include "../device.hpp"
#include "../grad_mode.hpp"
#include "node.hpp"
#include "boundaries.hpp"

namespace dl::expr {

template <class Derived>
struct ExprBase {
  const Derived& self() const { return static_cast<const Derived&>(*this); }

  // -------------------------------------------------------------------- elementwise (lazy)
#define DL_UNARY_MEMBER(fn) \
  auto fn() const { return expr::fn(self()); }
  DL_UNARY_MEMBER(neg)
  DL_UNARY_MEMBER(abs)
  DL_UNARY_MEMBER(sign)
  DL_UNARY_MEMBER(floor)
  DL_UNARY_MEMBER(ceil)
  DL_UNARY_MEMBER(trunc)
  DL_UNARY_MEMBER(round)
  DL_UNARY_MEMBER(exp)
  DL_UNARY_MEMBER(expm1)
  DL_UNARY_MEMBER(log)
  DL_UNARY_MEMBER(log1p)
  DL_UNARY_MEMBER(log2)
  DL_UNARY_MEMBER(log10)
  DL_UNARY_MEMBER(sqrt)
  DL_UNARY_MEMBER(rsqrt)
  DL_UNARY_MEMBER(sin)
  DL_UNARY_MEMBER(cos)
  DL_UNARY_MEMBER(tan)
  DL_UNARY_MEMBER(asin)
  DL_UNARY_MEMBER(acos)
  DL_UNARY_MEMBER(atan)
  DL_UNARY_MEMBER(sinh)
  DL_UNARY_MEMBER(cosh)
  DL_UNARY_MEMBER(tanh)
  DL_UNARY_MEMBER(erf)
  DL_UNARY_MEMBER(sigmoid)
  DL_UNARY_MEMBER(reciprocal)
  DL_UNARY_MEMBER(relu)
  DL_UNARY_MEMBER(square)
  DL_UNARY_MEMBER(logical_not)
  DL_UNARY_MEMBER(isnan)
  DL_UNARY_MEMBER(isinf)
  DL_UNARY_MEMBER(isposinf)
  DL_UNARY_MEMBER(isneginf)
  DL_UNARY_MEMBER(isfinite)
#undef DL_UNARY_MEMBER

#define DL_BINARY_MEMBER(fn)                    \
  template <operand B>                          \
  auto fn(B&& b) const {                        \
    return expr::fn(self(), std::forward<B>(b)); \
  }
  DL_BINARY_MEMBER(add)
  DL_BINARY_MEMBER(sub)
  DL_BINARY_MEMBER(mul)
  DL_BINARY_MEMBER(div)
  DL_BINARY_MEMBER(maximum)
  DL_BINARY_MEMBER(minimum)
  DL_BINARY_MEMBER(remainder)
  DL_BINARY_MEMBER(eq)
  DL_BINARY_MEMBER(ne)
  DL_BINARY_MEMBER(lt)
  DL_BINARY_MEMBER(le)
  DL_BINARY_MEMBER(gt)
  DL_BINARY_MEMBER(ge)
  DL_BINARY_MEMBER(logical_and)
  DL_BINARY_MEMBER(logical_or)
  DL_BINARY_MEMBER(logical_xor)
  DL_BINARY_MEMBER(pow)
#undef DL_BINARY_MEMBER

  template <number L, number H>
  auto clamp(L lo, H hi) const { return expr::clamp(self(), lo, hi); }
  template <number L>
  auto clamp_min(L lo) const { return expr::clamp_min(self(), lo); }
  template <number H>
  auto clamp_max(H hi) const { return expr::clamp_max(self(), hi); }
  /// Tensor (or expression) bounds, broadcasting; see dl::clamp.
  template <operand L, operand H>
    requires(expression<L> || expression<H>)
  auto clamp(L&& lo, H&& hi) const { return expr::clamp(self(), std::forward<L>(lo), std::forward<H>(hi)); }
  template <operand L>
  auto clamp(L&& lo, std::nullopt_t) const { return expr::clamp_min(self(), std::forward<L>(lo)); }
  template <operand H>
  auto clamp(std::nullopt_t, H&& hi) const { return expr::clamp_max(self(), std::forward<H>(hi)); }
  template <expression L>
  auto clamp_min(L&& lo) const { return expr::clamp_min(self(), std::forward<L>(lo)); }
  template <expression H>
  auto clamp_max(H&& hi) const { return expr::clamp_max(self(), std::forward<H>(hi)); }
  auto nan_to_num(double nan = 0.0, std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt) const {
    return expr::nan_to_num(self(), nan, posinf, neginf);
  }
  template <expression M, number V>
  auto masked_fill(M&& mask, V value) const { return expr::masked_fill(self(), std::forward<M>(mask), value); }
  template <operand B, operand W>
  auto lerp(B&& end, W&& weight) const { return expr::lerp(self(), std::forward<B>(end), std::forward<W>(weight)); }

  // -------------------------------------------------------------------- reductions (tensors)
  auto sum() const { return dl::sum(self()); }
  auto sum(int64_t dim, bool keepdim = false) const { return dl::sum(self(), dim, keepdim); }
  auto sum(Dims dims, bool keepdim = false) const { return dl::sum(self(), dims, keepdim); }
  // A braced list means dims, as PyTorch's dim=[...]: x.sum({}) reduces every dim (without this
  // overload `{}` would pick sum(int64_t dim) and reduce dim 0).
  auto sum(std::initializer_list<int64_t> dims, bool keepdim = false) const { return dl::sum(self(), Dims(dims), keepdim); }
  auto mean() const { return dl::mean(self()); }
  auto mean(int64_t dim, bool keepdim = false) const { return dl::mean(self(), dim, keepdim); }
  auto mean(Dims dims, bool keepdim = false) const { return dl::mean(self(), dims, keepdim); }
  auto mean(std::initializer_list<int64_t> dims, bool keepdim = false) const { return dl::mean(self(), Dims(dims), keepdim); }
  auto prod() const { return dl::prod(self()); }
  auto prod(int64_t dim, bool keepdim = false) const { return dl::prod(self(), dim, keepdim); }
  auto max() const { return dl::max(self()); }
  auto max(int64_t dim, bool keepdim = false) const { return dl::max(self(), dim, keepdim); }
  auto min() const { return dl::min(self()); }
  auto min(int64_t dim, bool keepdim = false) const { return dl::min(self(), dim, keepdim); }
  auto amax(Dims dims = {}, bool keepdim = false) const { return dl::amax(self(), dims, keepdim); }
  auto amin(Dims dims = {}, bool keepdim = false) const { return dl::amin(self(), dims, keepdim); }
  auto argmax() const { return dl::argmax(self()); }
  auto argmax(int64_t dim, bool keepdim = false) const { return dl::argmax(self(), dim, keepdim); }
  auto argmin() const { return dl::argmin(self()); }
  auto argmin(int64_t dim, bool keepdim = false) const { return dl::argmin(self(), dim, keepdim); }
  // The bool overloads are templates on exactly bool, so that x.var({1}) means dims, not a bool.
  auto var() const { return dl::var(self(), true); }
  template <std::same_as<bool> B>
  auto var(B unbiased) const { return dl::var(self(), unbiased); }
  auto var(Dims dims, bool unbiased = true, bool keepdim = false) const { return dl::var(self(), dims, unbiased, keepdim); }
  auto std() const { return dl::std(self(), true); }
  template <std::same_as<bool> B>
  auto std(B unbiased) const { return dl::std(self(), unbiased); }
  auto std(Dims dims, bool unbiased = true, bool keepdim = false) const { return dl::std(self(), dims, unbiased, keepdim); }
  auto norm(double p = 2) const { return dl::norm(self(), p); }
  auto norm(double p, Dims dims, bool keepdim = false) const { return dl::norm(self(), p, dims, keepdim); }
  auto logsumexp(Dims dims, bool keepdim = false) const { return dl::logsumexp(self(), dims, keepdim); }
  // One int dim, as libtorch's x.amax(1, true), x.var(1, true, false) (dim, unbiased, keepdim),
  // x.norm(2.0, 1, false). Templates, so that a braced list still means Dims.
  template <single_dim I>
  auto amax(I dim, bool keepdim = false) const { return dl::amax(self(), dim, keepdim); }
  template <single_dim I>
  auto amin(I dim, bool keepdim = false) const { return dl::amin(self(), dim, keepdim); }
  template <single_dim I>
  auto var(I dim, bool unbiased = true, bool keepdim = false) const { return dl::var(self(), dim, unbiased, keepdim); }
  template <single_dim I>
  auto std(I dim, bool unbiased = true, bool keepdim = false) const { return dl::std(self(), dim, unbiased, keepdim); }
  template <single_dim I>
  auto norm(double p, I dim, bool keepdim = false) const { return dl::norm(self(), p, dim, keepdim); }
  template <single_dim I>
  auto logsumexp(I dim, bool keepdim = false) const { return dl::logsumexp(self(), dim, keepdim); }
  auto all() const { return dl::all(self()); }
  auto all(int64_t dim, bool keepdim = false) const { return dl::all(self(), dim, keepdim); }
  auto any() const { return dl::any(self()); }
  auto any(int64_t dim, bool keepdim = false) const { return dl::any(self(), dim, keepdim); }

  // -------------------------------------------------------------------- products (tensors)
  /// dl::matmul(*this, b); defined in <dl/ops/matmul.hpp>.
  template <expression B>
  auto matmul(const B& b) const { return dl::matmul(self(), b); }
  /// dl::mm(*this, b); defined in <dl/ops/matmul.hpp>.
  template <expression B>
  auto mm(const B& b) const { return dl::mm(self(), b); }

  // -------------------------------------------------------------------- expression helpers
  // Queries that need no evaluation (Tensor has its own). An expression is unevaluated: `auto y =
  // x + 2` computes nothing until it is assigned to a dl::Tensor.
  /// Broadcast shape of the expression (throws on mismatched operands).
  Shape shape() const { return shape_of(as_node(self())); }
  Shape sizes() const { return shape(); }
  int64_t size(int64_t dim) const {
    const Shape s = shape();
    return s[wrap_dim(dim, s.size(), "size")];
  }
  int dim() const { return shape().size(); }
  int64_t numel() const { return dl::numel(shape()); }
  ScalarType dtype() const { return dtype_of<value_type_t<Derived>>; }
  /// The device of the tensor operands (CPU when there are none).
  Device device() const {
    Device d = kCPU;
    bool first = true;
    for_each_leaf(as_node(self()), [&](const auto& t) {
      if (first) d = t.device();
      first = false;
    });
    return d;
  }
  /// Whether the result will require grad: grad mode is on and a floating operand requires grad.
  bool requires_grad() const {
    if (!floating_scalar<value_type_t<Derived>> || !is_grad_enabled()) return false;
    bool any = false;
    for_each_leaf(as_node(self()), [&](const auto& t) { any = any || t.requires_grad(); });
    return any;
  }
  // What needs a recorded result fails to compile on an expression, saying what to do.
  template <class D = Derived>
  void grad_fn() const {
    static_assert(is_tensor_v<D>, "grad_fn(): this is an unevaluated expression (`auto y = x + 2` computes nothing); assign it to a dl::Tensor first: `dl::Tensor<float> y = x + 2;`");
  }
  template <class... A>
  void backward(const A&...) const {
    static_assert(is_tensor_v<Derived> && sizeof...(A) < 0, "backward(): this is an unevaluated expression (`auto y = x + 2` computes nothing); assign it to a dl::Tensor first: `dl::Tensor<float> y = x + 2;`");
  }
  template <class D = Derived>
  void retain_grad() const {
    static_assert(is_tensor_v<D>, "retain_grad(): this is an unevaluated expression (`auto y = x + 2` computes nothing); assign it to a dl::Tensor first: `dl::Tensor<float> y = x + 2;`");
  }
  /// Materialises the expression into a tensor.
  auto eval() const { return tensor_t<Derived>(self()); }

  // -------------------------------------------------------------------- shapes of the value
  // An expression has no storage to view: these evaluate it once and return the view (or copy) of
  // the new tensor, so PyTorch chains such as `(w * 0.1).view_as(p)` read the same. Tensor declares
  // its own, which view its storage.
  auto view(Shape shape) const { return eval().view(std::move(shape)); }
  auto reshape(Shape shape) const { return eval().reshape(std::move(shape)); }
  template <class Other>
  auto view_as(const Other& other) const { return eval().view(other.shape()); }
  template <class Other>
  auto reshape_as(const Other& other) const { return eval().reshape(other.shape()); }
  auto flatten(int64_t start_dim = 0, int64_t end_dim = -1) const { return eval().flatten(start_dim, end_dim); }
  auto unsqueeze(int64_t dim) const { return eval().unsqueeze(dim); }
  auto squeeze() const { return eval().squeeze(); }
  auto squeeze(int64_t dim) const { return eval().squeeze(dim); }
  auto transpose(int64_t dim0, int64_t dim1) const { return eval().transpose(dim0, dim1); }
  auto t() const { return eval().t(); }
  auto permute(Dims dims) const { return eval().permute(std::move(dims)); }
  auto detach() const { return eval().detach(); }
  auto contiguous() const { return eval(); }
  /// The single element (after evaluating): (a - b).abs().max().item(), .item<double>().
  auto item() const { return eval().item(); }
  template <class U>
  U item() const { return eval().template item<U>(); }
};

}  // namespace dl::expr
