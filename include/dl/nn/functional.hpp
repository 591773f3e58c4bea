// dl/nn/functional.hpp — dl::nn::functional (F in samples): the stateless layer functions with
// PyTorch's argument order, defaults and shape checks. This file has linear (with a fused
// activation), conv1d, conv2d, conv_transpose2d, max/avg and adaptive 2-d pooling, and dl::nn::grad
// (torch.nn.grad.conv2d_input / conv2d_weight); it includes the rest: activations, softmax,
// losses, dropout, normalization, embedding and one_hot, padding, conv3d and the 1-d forms.
#pragma once

#include <optional>
#include <type_traits>

#include "../ops/conv.hpp"
#include "../ops/matmul.hpp"
#include "../ops/pool.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// act(input @ weight.t() + bias): input [..., in], weight [out, in], bias [out] or undefined.
/// The bias and the activation (an elementwise functor such as dl::expr::Relu{}) are applied to
/// each output tile while it is still in cache: one pass over the output.
template <expression E, class Act = dl::detail::Identity, class T = expr::value_type_t<E>>
Tensor<T> linear(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, Act act = {});

/// 2-d convolution: input [N, C, H, W] (or [C, H, W]), weight [O, C / groups, kH, kW], bias [O].
/// Output [N, O, OH, OW] with OH = (H + 2 padding - dilation (kH - 1) - 1) / stride + 1.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv2d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, Size2 stride = 1, Size2 padding = 0,
                 Size2 dilation = 1, int64_t groups = 1);

/// 1-d convolution: input [N, C, L] (or [C, L]), weight [O, C / groups, k], bias [O].
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv1d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, int64_t stride = 1,
                 int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);

/// Transposed 2-d convolution (the gradient of conv2d with respect to its input): input
/// [N, C_in, H, W], weight [C_in, C_out / groups, kH, kW], output [N, C_out, OH, OW] with
/// OH = (H - 1) stride - 2 padding + dilation (kH - 1) + output_padding + 1.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv_transpose2d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, Size2 stride = 1,
                           Size2 padding = 0, Size2 output_padding = 0, int64_t groups = 1, Size2 dilation = 1);

/// 2-d max pooling over [N, C, H, W] (or [C, H, W]); stride defaults to the kernel size.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> max_pool2d(const E& input, Size2 kernel_size, OptionalSize2 stride = std::nullopt, Size2 padding = 0,
                     Size2 dilation = 1, bool ceil_mode = false);
/// max_pool2d with return_indices: {values, indices}, indices flat in each H x W plane.
template <expression E, class T = expr::value_type_t<E>>
MaxResult<T> max_pool2d_with_indices(const E& input, Size2 kernel_size, OptionalSize2 stride = std::nullopt,
                                     Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
/// The input gradient of max pooling from its indices (what max_pool2d's backward computes).
template <class T>
Tensor<T> max_pool2d_backward(const Tensor<T>& grad_output, const Tensor<int64_t>& indices, const Shape& input_shape);

/// 2-d average pooling; divisor_override > 0 replaces the window size as divisor.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> avg_pool2d(const E& input, Size2 kernel_size, OptionalSize2 stride = std::nullopt, Size2 padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true, int64_t divisor_override = 0);

/// Average pooling to a fixed output size [.., OH, OW] (windows cover the input evenly).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> adaptive_avg_pool2d(const E& input, Size2 output_size);
/// Max pooling to a fixed output size.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> adaptive_max_pool2d(const E& input, Size2 output_size);
template <expression E, class T = expr::value_type_t<E>>
MaxResult<T> adaptive_max_pool2d_with_indices(const E& input, Size2 output_size);

// ------------------------------------------------------------------------------ implementation

namespace detail {

using dl::detail::materialize;

/// Runs f on a batched view of a 3-d (unbatched) or 4-d input and removes the added batch dim.
template <class T, class F>
auto batched(const Tensor<T>& x, const char* what, F&& f) {
  DL_CHECK(x.dim() == 3 || x.dim() == 4, "Expected 3D (unbatched) or 4D (batched) input to ", what, ", but got input of size: ",
           x.shape());
  if (x.dim() == 4) return f(x);
  auto r = f(x.unsqueeze(0));
  if constexpr (std::is_same_v<decltype(r), MaxResult<T>>) return MaxResult<T>{r.values.squeeze(0), r.indices.squeeze(0)};
  else return r.squeeze(0);
}

/// where(mask > 0, g, 0) as a kernel, differentiable (the map is its own adjoint): the backward
/// of relu fused into linear, without an extra expression type.
template <class T>
Tensor<T> relu_mask(const Tensor<T>& g_, const Tensor<T>& mask) {
  const Tensor<T> g = g_.contiguous();
  Tensor<T> out = empty<T>(g.shape());
  const T* gp = g.data();
  const T* mp = mask.data();
  T* op = out.data();
  // Pointers copied into restrict locals: through the lambda's reference captures the loop would
  // not vectorise.
  dl::detail::parallel_for(0, g.numel(), 1 << 16, [gp, mp, op](int64_t i0, int64_t i1) {
    const T* __restrict gr = gp;
    const T* __restrict mr = mp;
    T* __restrict orr = op;
    for (int64_t i = i0; i < i1; ++i) orr[i] = mr[i] > T(0) ? gr[i] : T(0);
  });
  return dl::detail::record_kernel(out, "ReluBackward", {}, [mask](const Tensor<T>& gg, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
    return std::vector<TensorImplPtr>{relu_mask(gg, mask).impl()};
  }, g_);
}

/// The backward rule of linear (saved: input [rows, in], weight, and the output when relu): the
/// gradients of the input, the weight and the bias.
template <class T>
auto linear_rule(bool relu) {
  return [relu](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(3);
    const Tensor<T> gp = relu ? relu_mask(g, s[2]) : g;
    if (needs[0]) r[0] = dl::detail::matmul_nd(gp, s[1], "MmBackward").impl();
    if (needs[1]) r[1] = dl::detail::matmul_nd(gp.t(), s[0], "MmBackward").impl();
    if (needs[2]) r[2] = dl::sum(gp, 0).impl();
    return r;
  };
}

/// Whether an expression type is relu(something).
template <class E>
inline constexpr bool is_relu_of = false;
template <class A>
inline constexpr bool is_relu_of<expr::Apply<expr::Relu, A>> = true;

template <class Act>
inline constexpr bool recordable_activation =
    std::is_same_v<Act, dl::detail::Identity> || std::is_same_v<Act, expr::Relu>;

inline dl::detail::PoolParams pool_params(Size2 kernel, std::optional<Size2> stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  dl::detail::PoolParams p;
  p.kernel = kernel;
  p.stride = stride.value_or(kernel);
  p.padding = padding;
  p.dilation = dilation;
  p.ceil_mode = ceil_mode;
  return p;
}

}  // namespace detail

template <expression E, class Act, class T>
Tensor<T> linear(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, Act act) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::linear", input, weight, bias);
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "linear: input and weight must have the same element type");
  if constexpr (half_float<T>) {
    // dl::Half / dl::BFloat16: the product in float (widened operands), rounded once, then the
    // activation on the rounded result (matmul's rule, dl/ops/matmul.hpp).
    const Tensor<float> wide = linear(dl::detail::widened(input), weight.to_float(), bias.defined() ? bias.to_float() : Tensor<float>{});
    const Tensor<T> y = wide.template to<T>();
    if constexpr (std::is_same_v<Act, dl::detail::Identity>) return y;
    else return Tensor<T>(expr::apply(act, y));
  } else {
  const Tensor<T> x = detail::materialize(input);
  DL_CHECK(weight.dim() == 2, "linear: weight must be a matrix [out_features, in_features], got shape ", weight.shape());
  DL_CHECK(x.dim() >= 1, "linear: input must have at least one dimension");
  const int64_t in = weight.size(1), outf = weight.size(0);
  DL_CHECK(x.size(-1) == in, "linear: input has ", x.size(-1), " features but the layer expects ", in, " (input shape ",
           x.shape(), ")");
  DL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == outf), "linear: bias of shape ",
           bias.defined() ? bias.shape() : Shape{}, " does not match out_features = ", outf);
  const bool needs_grad = autograd::any_requires_grad(x, weight, bias);
#if defined(__CUDACC__)
  // nvcc cannot compile the CPU GEMM's SIMD epilogue with an activation (xsimd batches in a
  // __host__ __device__ functor): there, the activation is a second pass.
  if constexpr (!std::is_same_v<Act, dl::detail::Identity>) {
    return Tensor<T>(expr::apply(act, linear(x, weight, bias)));
  } else
#endif
  {
    if constexpr (!detail::recordable_activation<Act>) {
      if (needs_grad) {  // a differentiable composition: act'(pre) needs pre, which the fused form never stores
        const Tensor<T> pre = linear(x, weight, bias);
        return Tensor<T>(expr::apply(act, pre));
      }
    }
    Shape out_shape = x.shape();
    out_shape[out_shape.size() - 1] = outf;
    const Tensor<T> x2 = x.reshape({-1, in});
    if (x.is_cuda() || weight.is_cuda() || (bias.defined() && bias.is_cuda())) {
      dl::detail::check_devices("linear", x, weight);
      if (bias.defined()) dl::detail::check_devices("linear", x, bias);
      // On the GPU, float: one cuBLASLt call with the bias (and, without autograd, the ReLU) in the
      // GEMM epilogue.
      constexpr bool relu = std::is_same_v<Act, expr::Relu>;
      if constexpr (std::is_same_v<T, float> && (relu || std::is_same_v<Act, dl::detail::Identity>)) {
        const auto lt = dl::detail::cuda_backend().linear;
        if (lt && !(relu && needs_grad) && x2.stride(1) == 1 && weight.stride(1) == 1 && (!bias.defined() || bias.stride(0) == 1)) {
          Tensor<T> out = empty<T>({x2.size(0), outf}, x.device());
          if (lt(ScalarType::Float, x.device().index, x2.size(0), outf, in, x2.data_ptr(), x2.stride(0), weight.data_ptr(),
                 weight.stride(0), bias.defined() ? bias.data_ptr() : nullptr, relu ? 1 : 0, out.data_ptr())) {
            if (needs_grad)  // (relu is false here)
              out = dl::detail::record_kernel(out, "AddmmBackward", {x2, weight, Tensor<T>()}, detail::linear_rule<T>(false),
                                              x2, weight, bias);
            return out.reshape(out_shape);
          }
        }
      }
      // Otherwise cuBLAS (addmm, recorded as such), then the activation as a generated kernel.
      Tensor<T> pre = bias.defined() ? dl::addmm(bias, x2, weight.t()) : dl::detail::matmul_nd(x2, weight.t(), "MmBackward");
      if constexpr (!std::is_same_v<Act, dl::detail::Identity>) pre = Tensor<T>(expr::apply(act, pre));
      return pre.reshape(out_shape);
    }
    const int64_t rows = x2.size(0);
    Tensor<T> out = empty<T>({rows, outf});
    dl::detail::Epilogue<T, Act> ep;
    ep.act = act;
    if (bias.defined()) ep.bias = {bias.data(), 0, bias.stride(0)};
    dl::detail::gemm(rows, outf, in, T(1), dl::detail::matrix_ref(x2), dl::detail::MatrixRef<T>{weight.data(), weight.stride(1), weight.stride(0)},
                     T(0), out.data(), outf, ep);
    if constexpr (detail::recordable_activation<Act>) {
      if (needs_grad) {
        constexpr bool relu = std::is_same_v<Act, expr::Relu>;
        const Tensor<T> saved_out = relu ? out.detach() : Tensor<T>();  // detached: no cycle through the node
        out = dl::detail::record_kernel(out, relu ? "LinearReluBackward" : "AddmmBackward", {x2, weight, saved_out},
                                        detail::linear_rule<T>(relu), x2, weight, bias);
      }
    }
    return out.reshape(out_shape);
  }
  }
}

template <expression E, class T>
Tensor<T> conv2d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, Size2 stride, Size2 padding, Size2 dilation,
                 int64_t groups) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::conv2d", input, weight, bias);
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "conv2d: input and weight must have the same element type");
  const dl::detail::ConvParams p{stride, padding, dilation, groups};
  return detail::batched(detail::materialize(input), "conv2d", [&](const Tensor<T>& x) {
    return dl::detail::conv2d_op(x, weight, bias, p);
  });
}

template <expression E, class T>
Tensor<T> conv1d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, int64_t stride, int64_t padding,
                 int64_t dilation, int64_t groups) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "conv1d: input and weight must have the same element type");
  const Tensor<T> x = detail::materialize(input);
  DL_CHECK(x.dim() == 2 || x.dim() == 3, "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ",
           x.shape());
  DL_CHECK(weight.dim() == 3, "conv1d: expected a 3-D weight [out_channels, in_channels / groups, k], but got weight of size ",
           weight.shape());
  const dl::detail::ConvParams p{Size2(1, stride), Size2(0, padding), Size2(1, dilation), groups};
  const Tensor<T> x4 = x.dim() == 3 ? x.unsqueeze(2) : x.unsqueeze(0).unsqueeze(2);
  Tensor<T> y = dl::detail::conv2d_op(x4, weight.unsqueeze(2), bias, p).squeeze(2);
  return x.dim() == 3 ? y : y.squeeze(0);
}

template <expression E, class T>
Tensor<T> conv_transpose2d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, Size2 stride, Size2 padding,
                           Size2 output_padding, int64_t groups, Size2 dilation) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "conv_transpose2d: input and weight must have the same element type");
  const dl::detail::ConvParams p{stride, padding, dilation, groups};
  dl::detail::check_conv_params(p);
  DL_CHECK(output_padding.h >= 0 && output_padding.w >= 0, "negative output_padding is not supported");
  DL_CHECK(output_padding.h < stride.h && output_padding.w < stride.w,
           "output padding must be smaller than stride, but got output_padding_height: ", output_padding.h,
           " output_padding_width: ", output_padding.w, " stride_height: ", stride.h, " stride_width: ", stride.w);
  return detail::batched(detail::materialize(input), "conv_transpose2d", [&](const Tensor<T>& x) {
    DL_CHECK(weight.dim() == 4, "conv_transpose2d: expected a 4-D weight [in_channels, out_channels / groups, kH, kW], got ",
             weight.shape());
    DL_CHECK(weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
             " at dimension 0, but got weight of size ", weight.shape(), " instead");
    DL_CHECK(x.size(1) == weight.size(0), "Given transposed=1, weight of size ", weight.shape(), ", expected input", x.shape(),
             " to have ", weight.size(0), " channels, but got ", x.size(1), " channels instead");
    const int64_t cout = weight.size(1) * groups;
    DL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == cout), "Given transposed=1, weight of size ", weight.shape(),
             ", expected bias to be 1-dimensional with ", cout, " elements, but got bias of size ",
             bias.defined() ? bias.shape() : Shape{}, " instead");
    const int64_t oh = (x.size(2) - 1) * stride.h - 2 * padding.h + dilation.h * (weight.size(2) - 1) + output_padding.h + 1;
    const int64_t ow = (x.size(3) - 1) * stride.w - 2 * padding.w + dilation.w * (weight.size(3) - 1) + output_padding.w + 1;
    DL_CHECK(oh > 0 && ow > 0, "conv_transpose2d: the output size (", oh, " x ", ow, ") is too small (input ", x.shape(), ")");
    Tensor<T> y = dl::detail::conv2d_input_op(x, weight, {x.size(0), cout, oh, ow}, p);
    if (bias.defined()) y = Tensor<T>(y + bias.reshape({1, cout, 1, 1}));
    return y;
  });
}

template <expression E, class T>
MaxResult<T> max_pool2d_with_indices(const E& input, Size2 kernel_size, OptionalSize2 stride, Size2 padding,
                                     Size2 dilation, bool ceil_mode) {
  const auto p = detail::pool_params(kernel_size, stride, padding, dilation, ceil_mode);
  return detail::batched(detail::materialize(input), "max_pool2d", [&](const Tensor<T>& x) {
    return dl::detail::max_pool2d_op(x, p);
  });
}

template <expression E, class T>
Tensor<T> max_pool2d(const E& input, Size2 kernel_size, OptionalSize2 stride, Size2 padding, Size2 dilation,
                     bool ceil_mode) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::max_pool2d", input);
  if constexpr (detail::is_relu_of<std::remove_cvref_t<E>>) {
    // max commutes with relu (monotone): pooling first and applying relu to the pooled values
    // reads the input once, skips a full-size relu pass forward and backward, and gives the same
    // values and gradients (a window whose maximum is negative has zero gradient either way).
    const auto& inner = expr::get<0>(input.args);
    if constexpr (expr::is_leaf_v<std::remove_cvref_t<decltype(inner)>>)
      return Tensor<T>(expr::relu(max_pool2d(inner.tensor, kernel_size, stride, padding, dilation, ceil_mode)));
    else
      return Tensor<T>(expr::relu(max_pool2d(inner, kernel_size, stride, padding, dilation, ceil_mode)));
  }
  return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode).values;
}

template <class T>
Tensor<T> max_pool2d_backward(const Tensor<T>& grad_output, const Tensor<int64_t>& indices, const Shape& input_shape) {
  DL_CHECK(grad_output.shape() == indices.shape(), "max_pool2d_backward: grad_output ", grad_output.shape(),
           " and indices ", indices.shape(), " must have the same shape");
  DL_CHECK(input_shape.size() == 4 && grad_output.dim() == 4 && input_shape[0] == grad_output.size(0) &&
               input_shape[1] == grad_output.size(1),
           "max_pool2d_backward: expected 4-D input_shape [N, C, H, W] matching grad_output ", grad_output.shape(), ", got ",
           input_shape);
  return dl::detail::max_pool2d_scatter_op(grad_output, indices.contiguous(), input_shape);
}

template <expression E, class T>
Tensor<T> avg_pool2d(const E& input, Size2 kernel_size, OptionalSize2 stride, Size2 padding, bool ceil_mode,
                     bool count_include_pad, int64_t divisor_override) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::avg_pool2d", input);
  auto p = detail::pool_params(kernel_size, stride, padding, 1, ceil_mode);
  p.count_include_pad = count_include_pad;
  DL_CHECK(divisor_override >= 0, "avg_pool2d: divisor must be not zero (got divisor_override=", divisor_override, ")");
  p.divisor_override = divisor_override;
  return detail::batched(detail::materialize(input), "avg_pool2d", [&](const Tensor<T>& x) {
    return dl::detail::avg_pool2d_op(x, p, dl::detail::pool2d_shape(x.shape(), p, "avg_pool2d"), false);
  });
}

namespace detail {
inline void check_adaptive(const Shape& x, Size2 out, const char* what) {
  DL_CHECK(out.h >= 0 && out.w >= 0, what, ": output_size must be non-negative, got (", out.h, ", ", out.w, ")");
  for (int d = 1; d < x.size(); ++d)
    DL_CHECK(x[d] > 0, what, "(): Expected input to have non-zero size for non-batch dimensions, but input has sizes ", x,
             " with dimension ", d, " being empty");
}
}  // namespace detail

template <expression E, class T>
Tensor<T> adaptive_avg_pool2d(const E& input, Size2 output_size) {
  return detail::batched(detail::materialize(input), "adaptive_avg_pool2d", [&](const Tensor<T>& x) {
    detail::check_adaptive(x.shape(), output_size, "adaptive_avg_pool2d");
    return dl::detail::avg_pool2d_op(x, {}, {x.size(0), x.size(1), output_size.h, output_size.w}, true);
  });
}

template <expression E, class T>
MaxResult<T> adaptive_max_pool2d_with_indices(const E& input, Size2 output_size) {
  return detail::batched(detail::materialize(input), "adaptive_max_pool2d", [&](const Tensor<T>& x) {
    detail::check_adaptive(x.shape(), output_size, "adaptive_max_pool2d");
    return dl::detail::adaptive_max_pool2d_op(x, output_size.h, output_size.w);
  });
}

template <expression E, class T>
Tensor<T> adaptive_max_pool2d(const E& input, Size2 output_size) {
  return adaptive_max_pool2d_with_indices(input, output_size).values;
}

}  // namespace dl::nn::functional

namespace dl::nn::grad {

/// The gradient of conv2d with respect to its input (PyTorch's torch.nn.grad.conv2d_input):
/// input_shape [N, C, H, W], weight [O, C / groups, kH, kW], grad_output [N, O, OH, OW].
/// Differentiable (its backward is conv2d and conv2d_weight).
template <class T>
Tensor<T> conv2d_input(const Shape& input_shape, const Tensor<T>& weight, const Tensor<T>& grad_output, Size2 stride = 1,
                       Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1) {
  const dl::detail::ConvParams p{stride, padding, dilation, groups};
  const auto g = dl::detail::conv2d_geometry(input_shape, weight.shape(), Tensor<T>(), p);
  DL_CHECK(grad_output.shape() == Shape({g.N, g.O, g.OH, g.OW}), "conv2d_input: grad_output of shape ", grad_output.shape(),
           " does not match the convolution's output shape [", g.N, ", ", g.O, ", ", g.OH, ", ", g.OW, "]");
  return dl::detail::conv2d_input_op(grad_output, weight, input_shape, p);
}

/// The gradient of conv2d with respect to its weight (torch.nn.grad.conv2d_weight).
template <class T>
Tensor<T> conv2d_weight(const Tensor<T>& input, const Shape& weight_shape, const Tensor<T>& grad_output, Size2 stride = 1,
                        Size2 padding = 0, Size2 dilation = 1, int64_t groups = 1) {
  const dl::detail::ConvParams p{stride, padding, dilation, groups};
  const auto g = dl::detail::conv2d_geometry(input.shape(), weight_shape, Tensor<T>(), p);
  DL_CHECK(grad_output.shape() == Shape({g.N, g.O, g.OH, g.OW}), "conv2d_weight: grad_output of shape ", grad_output.shape(),
           " does not match the convolution's output shape [", g.N, ", ", g.O, ", ", g.OH, ", ", g.OW, "]");
  return dl::detail::conv2d_weight_op(input, grad_output, weight_shape, p);
}

}  // namespace dl::nn::grad


// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::linear(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::detail::Identity))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::linear(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::expr::Relu))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv2d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::Size2, dl::Size2, dl::Size2, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv1d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, int64_t, int64_t, int64_t, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv_transpose2d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::Size2, dl::Size2, dl::Size2, int64_t,
                                                                dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::max_pool2d(const dl::Tensor<float>&, dl::Size2, dl::OptionalSize2, dl::Size2, dl::Size2, bool))
DL_EXTERN_TEMPLATE(nn, dl::MaxResult<float> dl::nn::functional::max_pool2d_with_indices(const dl::Tensor<float>&, dl::Size2, dl::OptionalSize2,
                                                                                       dl::Size2, dl::Size2, bool))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::avg_pool2d(const dl::Tensor<float>&, dl::Size2, dl::OptionalSize2, dl::Size2, bool, bool, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_avg_pool2d(const dl::Tensor<float>&, dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_max_pool2d(const dl::Tensor<float>&, dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::MaxResult<float> dl::nn::functional::adaptive_max_pool2d_with_indices(const dl::Tensor<float>&, dl::Size2))

#include "functional/activation.hpp"
#include "functional/conv_extra.hpp"
#include "functional/dropout.hpp"
#include "functional/loss.hpp"
#include "functional/normalization.hpp"
#include "functional/padding.hpp"
#include "functional/softmax.hpp"
#include "functional/sparse.hpp"
