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
template <expression E, std::same_as<bool> B = bool> Tensor<expr::value_type_t<E>> var(const E& e, B unbiased = true);
template <expression E> Tensor<expr::value_type_t<E>> var(const E& e, Dims dims, bool unbiased = true, bool keepdim = false);
template <expression E, std::same_as<bool> B = bool> Tensor<expr::value_type_t<E>> std(const E& e, B unbiased = true);
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
/// True when a and b broadcast and |a - b| <= atol + rtol * |b| everywhere (torch.allclose);
/// NaNs compare equal only with equal_nan.
template <expression A, expression B>
bool allclose(const A& a, const B& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/// True when a and b have the same shape and the same elements (torch.equal).
template <expression A, expression B>
bool equal(const A& a, const B& b);

}  // namespace dl
