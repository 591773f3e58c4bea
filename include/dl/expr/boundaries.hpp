// dl/expr/boundaries.hpp — declarations of the evaluation boundaries that expression and Tensor
// members name (x.sum(), x.matmul(y)...): the reductions, defined in dl/ops/reduce.hpp, and the
// products, defined in dl/ops/matmul.hpp. The expression layer declares them; the ops layer, above
// it, defines them (dl/tensor.hpp includes both).
#pragma once

#include "node.hpp"

namespace dl {

template <class T>
struct MaxResult;

namespace detail {
/// g summed over the dims along which `shape` was broadcast to g's shape (the gradient of a
/// broadcast operand); defined in dl/ops/reduce.hpp.
template <class T>
Tensor<T> sum_to(const Tensor<T>& g, const Shape& shape);
}  // namespace detail

// ------------------------------------------------------------------------------ declarations

template <expression E> Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e);
template <expression E> Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e, Dims dims, bool keepdim = false);
template <expression E> Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e, int64_t dim, bool keepdim = false);
template <expression E> Tensor<expr::value_type_t<E>> mean(const E& e);
template <expression E> Tensor<expr::value_type_t<E>> mean(const E& e, Dims dims, bool keepdim = false);
template <expression E> Tensor<expr::value_type_t<E>> mean(const E& e, int64_t dim, bool keepdim = false);
/// A braced list means dims, as PyTorch's dim=[...]: dl::sum(x, {}) reduces every dim (`{}` would
/// otherwise pick the int64_t overload and reduce dim 0).
template <expression E>
Tensor<sum_t<expr::value_type_t<E>>> sum(const E& e, std::initializer_list<int64_t> dims, bool keepdim = false) {
  return dl::sum(e, Dims(dims), keepdim);
}
template <expression E>
Tensor<expr::value_type_t<E>> mean(const E& e, std::initializer_list<int64_t> dims, bool keepdim = false) {
  return dl::mean(e, Dims(dims), keepdim);
}
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

/// Matrix product with PyTorch's rules: 1-D x 1-D is a dot product, 2-D x 1-D a matrix-vector
/// product, 2-D x 2-D a matrix product, and N-D operands are batches of matrices whose batch dims
/// broadcast (a 1-D operand gets a dim prepended / appended, removed again from the result).
/// Needs <dl/ops/matmul.hpp> (or <dl/dl.hpp>) for its definition.
template <expression A, expression B>
Tensor<expr::value_type_t<A>> matmul(const A& a, const B& b);

/// Product of two matrices: [n, m] x [m, p] -> [n, p].
template <expression A, expression B>
Tensor<expr::value_type_t<A>> mm(const A& a, const B& b);

}  // namespace dl
