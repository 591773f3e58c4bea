// dl/expr/methods.hpp — member functions shared by Tensor and lazy expressions, so that PyTorch
// style chains read the same: (y_pred - y).pow(2).sum(), x.sigmoid().mean(1, true).
// Elementwise members return lazy expressions; reductions return tensors.
#pragma once

#include "node.hpp"
#include "reduce_fwd.hpp"
#include "../ops/matmul_fwd.hpp"

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
  template <expression M, number V>
  auto masked_fill(M&& mask, V value) const { return expr::masked_fill(self(), std::forward<M>(mask), value); }
  template <operand B, operand W>
  auto lerp(B&& end, W&& weight) const { return expr::lerp(self(), std::forward<B>(end), std::forward<W>(weight)); }

  // -------------------------------------------------------------------- reductions (tensors)
  auto sum() const { return dl::sum(self()); }
  auto sum(int64_t dim, bool keepdim = false) const { return dl::sum(self(), dim, keepdim); }
  auto sum(Dims dims, bool keepdim = false) const { return dl::sum(self(), dims, keepdim); }
  auto mean() const { return dl::mean(self()); }
  auto mean(int64_t dim, bool keepdim = false) const { return dl::mean(self(), dim, keepdim); }
  auto mean(Dims dims, bool keepdim = false) const { return dl::mean(self(), dims, keepdim); }
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
  /// Broadcast shape of the expression (throws on mismatched operands).
  Shape shape() const { return shape_of(as_node(self())); }
  /// Materialises the expression into a tensor.
  auto eval() const { return tensor_t<Derived>(self()); }
};

}  // namespace dl::expr
