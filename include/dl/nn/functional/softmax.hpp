// dl/nn/functional/softmax.hpp — F::softmax and F::log_softmax (torch.nn.functional.softmax /
// log_softmax): numerically stable, along any dim, on tensors or lazy expressions read fused.
#pragma once

#include "../../ops/softmax.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// exp(x) / sum(exp(x), dim), computed as exp(x - max) / sum(exp(x - max)) in one pass per row.
/// dim may be negative; a 0-d input takes dim 0 or -1 (its softmax is 1). Differentiable to any
/// order; the backward reads only the output.
///
///   auto p = F::softmax(logits, 1);              // [N, C] -> rows sum to 1
///   auto q = F::softmax(logits * (1 / temp), -1); // the scaled logits are never stored
template <expression E>
Tensor<expr::value_type_t<E>> softmax(const E& input, int64_t dim);

/// x - max - log(sum(exp(x - max), dim)): the logarithm of softmax without its underflow.
template <expression E>
Tensor<expr::value_type_t<E>> log_softmax(const E& input, int64_t dim);

// ------------------------------------------------------------------------------ implementation

template <expression E>
Tensor<expr::value_type_t<E>> softmax(const E& input, int64_t dim) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::softmax", input);
  return dl::detail::softmax_op<false>(input, dim, "softmax");
}

template <expression E>
Tensor<expr::value_type_t<E>> log_softmax(const E& input, int64_t dim) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::log_softmax", input);
  return dl::detail::softmax_op<true>(input, dim, "log_softmax");
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::softmax(const dl::Tensor<float>&, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::log_softmax(const dl::Tensor<float>&, int64_t))
