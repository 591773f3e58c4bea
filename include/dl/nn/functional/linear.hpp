// dl/nn/functional/linear.hpp — linear (with a fused activation) and bilinear of
// dl::nn::functional: PyTorch's argument order, defaults and shape checks; the kernel of linear is
// dl/ops/linear.hpp.
#pragma once

#include <type_traits>

#include "../../ops/linear.hpp"
#include "../../ops/matmul.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// act(input @ weight.t() + bias): input [..., in], weight [out, in], bias [out] or undefined.
/// The bias and the activation (an elementwise functor such as dl::expr::Relu{}) are applied to
/// each output tile while it is still in cache: one pass over the output.
template <expression E, class Act = dl::detail::Identity, class T = expr::value_type_t<E>>
Tensor<T> linear(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, Act act = {});

/// y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]: input1 [..., in1],
/// input2 [..., in2] (the same leading dims), weight [out, in1, in2], bias [out] or undefined.
template <expression A, expression B, class T = expr::value_type_t<A>>
Tensor<T> bilinear(const A& input1, const B& input2, const Tensor<T>& weight, const Tensor<T>& bias = {});

// ------------------------------------------------------------------------------ implementation

template <expression E, class Act, class T>
Tensor<T> linear(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, Act act) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::linear", input, weight, bias);
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "linear: input and weight must have the same element type");
  const auto check = [&](const auto& x) {
    DL_CHECK(weight.dim() == 2, "linear: weight must be a matrix [out_features, in_features], got shape ", weight.shape());
    DL_CHECK(x.dim() >= 1, "linear: input must have at least one dimension");
    const int64_t in = weight.size(1), outf = weight.size(0);
    DL_CHECK(x.size(-1) == in, "linear: input has ", x.size(-1), " features but the layer expects ", in, " (input shape ",
             x.shape(), ")");
    DL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == outf), "linear: bias of shape ",
             bias.defined() ? bias.shape() : Shape{}, " does not match out_features = ", outf);
  };
  if constexpr (half_float<T>) {
    // dl::Half / dl::BFloat16: the product accumulated in float and rounded once — on the CPU's
    // bfloat16 dot-product instruction where it is enabled (dl/ops/gemm_bf16.hpp), else on the
    // operands widened to float — then the activation on the rounded result (matmul's rule).
    const Tensor<T> x = dl::detail::materialize(input);
    Tensor<T> y;
    if (dl::detail::native_bf16(x, weight) && !(bias.defined() && bias.device().is_cuda())) {
      check(x);
      if constexpr (std::is_same_v<T, BFloat16>) y = dl::detail::linear_bf16(x, weight, bias);
    } else {
      y = linear(dl::detail::widened(x), weight.to_float(), bias.defined() ? bias.to_float() : Tensor<float>{}).template to<T>();
    }
    if constexpr (std::is_same_v<Act, dl::detail::Identity>) return y;
    else return Tensor<T>(expr::apply(act, y));
  } else {
    const Tensor<T> x = dl::detail::materialize(input);
    check(x);
    return dl::detail::linear_op(x, weight, bias, act);
  }
}

template <expression A, expression B, class T>
Tensor<T> bilinear(const A& input1, const B& input2, const Tensor<T>& weight, const Tensor<T>& bias) {
  static_assert(std::is_same_v<expr::value_type_t<A>, T> && std::is_same_v<expr::value_type_t<B>, T>,
                "bilinear: inputs and weight must have the same element type");
  const Tensor<T> x1 = dl::detail::materialize(input1), x2 = dl::detail::materialize(input2);
  DL_CHECK(x1.dim() == x2.dim(), "bilinear(): input dimensions do not match: got ", x1.dim(), " and ", x2.dim());
  DL_CHECK(x1.dim() >= 1, "bilinear(): expected inputs with at least one dimension, got 0-d inputs");
  for (int d = 0; d + 1 < x1.dim(); ++d)
    DL_CHECK(x1.size(d) == x2.size(d), "bilinear(): input batch dimensions do not match at dim ", d, ": got ", x1.size(d), " and ",
             x2.size(d));
  DL_CHECK(weight.dim() == 3, "bilinear(): weight must be 3-D [out_features, in1_features, in2_features], got weight of size ",
           weight.shape());
  const int64_t O = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  DL_CHECK(x1.size(-1) == in1, "bilinear(): input1 size does not match weight size: got ", x1.size(-1), " but expected ", in1);
  DL_CHECK(x2.size(-1) == in2, "bilinear(): input2 size does not match weight size: got ", x2.size(-1), " but expected ", in2);
  DL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == O), "bilinear(): bias size does not match weight size: got ",
           bias.defined() ? bias.size(0) : 0, " but expected ", O);
  // t[b, o, i] = sum_j weight[o, i, j] x2[b, j] (one product with the weight as [O * in1, in2]),
  // then y[b, o] = sum_i t[b, o, i] x1[b, i] as one fused reduction.
  const Tensor<T> a = x1.reshape({-1, in1}), b = x2.reshape({-1, in2});
  const Tensor<T> t = mm(b, weight.reshape({O * in1, in2}).t()).reshape({-1, O, in1});
  Tensor<T> y = dl::sum(t * a.unsqueeze(1), 2);
  if (bias.defined()) y = y + bias;
  Shape out = x1.shape();
  out[out.size() - 1] = O;
  return y.reshape(out);
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::linear(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::detail::Identity))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::linear(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::expr::Relu))
