// dl/expr/reduce_fwd.hpp — declarations of the reductions (defined in dl/expr/reduce.hpp), so
// that Tensor's member functions can name them before Tensor is complete.
#pragma once

#include "node.hpp"

namespace dl {

template <class T>
struct MaxResult;

// ------------------------------------------------------------------------------ declarations

template <expression E> Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e);
template <expression E> Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e, Dims dims, bool keepdim = false);
template <expression E> Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e, int64_t dim, bool keepdim = false);
template <expression E> Tensor<expr::value_type_t<E>> mean(const E& e);
template <expression E> Tensor<expr::value_type_t<E>> mean(const E& e, Dims dims, bool keepdim = false);
template <expression E> Tensor<expr::value_type_t<E>> mean(const E& e, int64_t dim, bool keepdim = false);
template <expression E> Tensor<sum_t<expr::value_type_t<E>>> prod(const E& e);
template <expression E> Tensor<sum_t<expr::value_type_t<E>>> prod(const E& e, int64_t dim, bool keepdim = false);
/// Largest element (NaN if any element is NaN).
template <expression E> Tensor<expr::value_type_t<E>> max(const E& e);
/// Largest element along dim and its index (the first one among ties).
template <expression E> MaxResult<expr::value_type_t<E>> max(const E& e, int64_t dim, bool keepdim = false);
template <expression E> Tensor<expr::value_type_t<E>> min(const E& e);
template <expression E> MaxResult<expr::value_type_t<E>> min(const E& e, int64_t dim, bool keepdim = false);
/// Max over several dims (gradient shared evenly among ties).
template <expression E> Tensor<expr::value_type_t<E>> amax(const E& e, Dims dims = {}, bool keepdim = false);
template <expression E> Tensor<expr::value_type_t<E>> amin(const E& e, Dims dims = {}, bool keepdim = false);
/// Index of the largest element of the flattened input.
template <expression E> Tensor<int64_t> argmax(const E& e);
template <expression E> Tensor<int64_t> argmax(const E& e, int64_t dim, bool keepdim = false);
template <expression E> Tensor<int64_t> argmin(const E& e);
template <expression E> Tensor<int64_t> argmin(const E& e, int64_t dim, bool keepdim = false);
/// Variance with Bessel's correction when unbiased (PyTorch's default).
// The bool overloads of var/std take exactly bool (a template without a default type), so that a
// braced `dl::var(x, {0})` means dims: with a default type the bool overload was viable for `{0}`
// and, needing no user-defined conversion, beat the Dims overload.
template <expression E> Tensor<expr::value_type_t<E>> var(const E& e);
template <expression E, std::same_as<bool> B> Tensor<expr::value_type_t<E>> var(const E& e, B unbiased);
template <expression E> Tensor<expr::value_type_t<E>> var(const E& e, Dims dims, bool unbiased = true, bool keepdim = false);
template <expression E> Tensor<expr::value_type_t<E>> std(const E& e);
template <expression E, std::same_as<bool> B> Tensor<expr::value_type_t<E>> std(const E& e, B unbiased);
template <expression E> Tensor<expr::value_type_t<E>> std(const E& e, Dims dims, bool unbiased = true, bool keepdim = false);
/// p-norm of the flattened input (p may be INFINITY / -INFINITY, or 0 to count non-zeros).
template <expression E> Tensor<expr::value_type_t<E>> norm(const E& e, double p = 2);
template <expression E> Tensor<expr::value_type_t<E>> norm(const E& e, double p, Dims dims, bool keepdim = false);
/// log(sum(exp(x))) over dims, computed stably.
template <expression E> Tensor<expr::value_type_t<E>> logsumexp(const E& e, Dims dims, bool keepdim = false);
template <expression E> Tensor<bool> all(const E& e);
template <expression E> Tensor<bool> all(const E& e, int64_t dim, bool keepdim = false);
template <expression E> Tensor<bool> any(const E& e);
template <expression E> Tensor<bool> any(const E& e, int64_t dim, bool keepdim = false);
/// An integral, non-bool dim (a template, so that a braced list never picks it: `{}` would be 0).
template <class I>
concept single_dim = std::integral<I> && !std::same_as<I, bool>;

// Single-dim forms, as libtorch's: x.amax(1, true), dl::var(x, 1, true, false), x.norm(2.0, 1).
template <expression E, single_dim I>
Tensor<expr::value_type_t<E>> amax(const E& e, I dim, bool keepdim = false) { return dl::amax(e, Dims{int64_t(dim)}, keepdim); }
template <expression E, single_dim I>
Tensor<expr::value_type_t<E>> amin(const E& e, I dim, bool keepdim = false) { return dl::amin(e, Dims{int64_t(dim)}, keepdim); }
template <expression E, single_dim I>
Tensor<expr::value_type_t<E>> var(const E& e, I dim, bool unbiased = true, bool keepdim = false) {
  return dl::var(e, Dims{int64_t(dim)}, unbiased, keepdim);
}
template <expression E, single_dim I>
Tensor<expr::value_type_t<E>> std(const E& e, I dim, bool unbiased = true, bool keepdim = false) {
  return dl::std(e, Dims{int64_t(dim)}, unbiased, keepdim);
}
template <expression E, single_dim I>
Tensor<expr::value_type_t<E>> norm(const E& e, double p, I dim, bool keepdim = false) { return dl::norm(e, p, Dims{int64_t(dim)}, keepdim); }
template <expression E, single_dim I>
Tensor<expr::value_type_t<E>> logsumexp(const E& e, I dim, bool keepdim = false) { return dl::logsumexp(e, Dims{int64_t(dim)}, keepdim); }
template <expression E> Tensor<expr::value_type_t<E>> var(const E& e) { return dl::var(e, true); }
template <expression E> Tensor<expr::value_type_t<E>> std(const E& e) { return dl::std(e, true); }

/// True when a and b broadcast and |a - b| <= atol + rtol * |b| everywhere (torch.allclose);
/// NaNs compare equal only with equal_nan.
template <expression A, expression B>
bool allclose(const A& a, const B& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/// True when a and b have the same shape and the same elements (torch.equal).
template <expression A, expression B>
bool equal(const A& a, const B& b);

}  // namespace dl
