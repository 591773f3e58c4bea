// dl/nn/functional/conv.hpp — the convolutions of dl::nn::functional: conv1d, conv2d, conv3d (one
// conv2d over the depth taps folded into channels), conv_transpose1d and conv_transpose2d, and
// dl::nn::grad (torch.nn.grad.conv2d_input / conv2d_weight). PyTorch's argument order, defaults,
// unbatched inputs and shape errors; all differentiable (to any order).
#pragma once

#include <type_traits>
#include <vector>

#include "../../ops/conv.hpp"
#include "../../ops/indexing.hpp"
#include "../../tensor.hpp"
#include "batched.hpp"

namespace dl {

/// A triple of ints (depth, height, width) that also accepts one int for all three, like
/// PyTorch's `int or tuple` arguments: `stride = 2` or `stride = {1, 2, 2}`.
struct Size3 {
  int64_t d = 0, h = 0, w = 0;
  constexpr Size3(int64_t v) : d(v), h(v), w(v) {}  // NOLINT: implicit on purpose
  constexpr Size3(int64_t d_, int64_t h_, int64_t w_) : d(d_), h(h_), w(w_) {}
  friend constexpr bool operator==(const Size3&, const Size3&) = default;
};

}  // namespace dl

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// 1-d convolution: input [N, C, L] (or [C, L]), weight [O, C / groups, k], bias [O].
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv1d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, int64_t stride = 1,
                 int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);

/// 2-d convolution: input [N, C, H, W] (or [C, H, W]), weight [O, C / groups, kH, kW], bias [O].
/// Output [N, O, OH, OW] with OH = (H + 2 padding - dilation (kH - 1) - 1) / stride + 1.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv2d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, Size2 stride = 1, Size2 padding = 0,
                 Size2 dilation = 1, int64_t groups = 1);

/// 3-d convolution: input [N, C, D, H, W] (or [C, D, H, W]), weight [O, C / groups, kD, kH, kW],
/// bias [O]. Output [N, O, OD, OH, OW] with OD = (D + 2 padding - dilation (kD - 1) - 1) / stride + 1.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv3d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, Size3 stride = 1, Size3 padding = 0,
                 Size3 dilation = 1, int64_t groups = 1);

/// Transposed 1-d convolution: input [N, C_in, L] (or [C_in, L]), weight [C_in, C_out / groups, k],
/// output [N, C_out, OL] with OL = (L - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv_transpose1d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, int64_t stride = 1,
                           int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, int64_t dilation = 1);

/// Transposed 2-d convolution (the gradient of conv2d with respect to its input): input
/// [N, C_in, H, W], weight [C_in, C_out / groups, kH, kW], output [N, C_out, OH, OW] with
/// OH = (H - 1) stride - 2 padding + dilation (kH - 1) + output_padding + 1.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> conv_transpose2d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias = {}, Size2 stride = 1,
                           Size2 padding = 0, Size2 output_padding = 0, int64_t groups = 1, Size2 dilation = 1);

// ------------------------------------------------------------------------------ implementation

template <expression E, class T>
Tensor<T> conv1d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, int64_t stride, int64_t padding,
                 int64_t dilation, int64_t groups) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "conv1d: input and weight must have the same element type");
  const Tensor<T> x = dl::detail::materialize(input);
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
Tensor<T> conv2d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, Size2 stride, Size2 padding, Size2 dilation,
                 int64_t groups) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::conv2d", input, weight, bias);
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "conv2d: input and weight must have the same element type");
  const dl::detail::ConvParams p{stride, padding, dilation, groups};
  return detail::batched(dl::detail::materialize(input), "conv2d", [&](const Tensor<T>& x) {
    return dl::detail::conv2d_op(x, weight, bias, p);
  });
}

template <expression E, class T>
Tensor<T> conv3d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, Size3 stride, Size3 padding, Size3 dilation,
                 int64_t groups) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "conv3d: input and weight must have the same element type");
  const Tensor<T> x = dl::detail::materialize(input);
  DL_CHECK(x.dim() == 4 || x.dim() == 5, "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: ", x.shape());
  if (x.dim() == 4) return conv3d(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0);
  DL_CHECK(weight.dim() == 5, "conv3d: expected a 5-D weight [out_channels, in_channels / groups, kD, kH, kW], but got weight of size ",
           weight.shape());
  DL_CHECK(stride.d > 0 && stride.h > 0 && stride.w > 0, "non-positive stride is not supported (stride=[", stride.d, ", ", stride.h,
           ", ", stride.w, "])");
  DL_CHECK(padding.d >= 0 && padding.h >= 0 && padding.w >= 0, "negative padding is not supported (padding=[", padding.d, ", ",
           padding.h, ", ", padding.w, "])");
  DL_CHECK(dilation.d > 0 && dilation.h > 0 && dilation.w > 0, "non-positive dilation is not supported (dilation=[", dilation.d,
           ", ", dilation.h, ", ", dilation.w, "])");
  DL_CHECK(groups > 0, "non-positive groups is not supported (groups=", groups, ")");
  const int64_t N = x.size(0), C = x.size(1), D = x.size(2), H = x.size(3), W = x.size(4);
  const int64_t O = weight.size(0), Cg = weight.size(1), KD = weight.size(2), KH = weight.size(3), KW = weight.size(4);
  DL_CHECK(O % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
           " at dimension 0, but got weight of size ", weight.shape(), " instead");
  DL_CHECK(C == Cg * groups, "Given groups=", groups, ", weight of size ", weight.shape(), ", expected input", x.shape(), " to have ",
           Cg * groups, " channels, but got ", C, " channels instead");
  DL_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == O), "Given weight of size ", weight.shape(),
           ", expected bias to be 1-dimensional with ", O, " elements, but got bias of size ", bias.defined() ? bias.shape() : Shape{},
           " instead");
  const int64_t ed = dilation.d * (KD - 1) + 1, eh = dilation.h * (KH - 1) + 1, ew = dilation.w * (KW - 1) + 1;
  const int64_t pd = D + 2 * padding.d, ph = H + 2 * padding.h, pw = W + 2 * padding.w;
  DL_CHECK(pd >= ed && ph >= eh && pw >= ew, "Calculated padded input size per channel: (", pd, " x ", ph, " x ", pw,
           "). Kernel size: (", ed, " x ", eh, " x ", ew, "). Kernel size can't be greater than actual input size");
  const int64_t OD = (pd - ed) / stride.d + 1;
  // The depth taps become channels: xu[n * OD + od, c * KD + kd] = x[n, c, od * stride - padding +
  // kd * dilation] (a zero plane where that falls in the padding), so that one grouped conv2d with
  // the weight viewed as [O, Cg * KD, kH, kW] computes every output plane. @post y [N, O, OD, OH, OW]
  Tensor<int64_t> taps = empty<int64_t>({OD * KD});
  bool padded = false;
  for (int64_t od = 0; od < OD; ++od)
    for (int64_t kd = 0; kd < KD; ++kd) {
      const int64_t z = od * stride.d - padding.d + kd * dilation.d;
      padded = padded || z < 0 || z >= D;
      taps.data()[od * KD + kd] = z < 0 || z >= D ? D : z;
    }
  const Tensor<T> src = padded ? cat(std::vector<Tensor<T>>{x, zeros<T>({N, C, 1, H, W})}, 2) : x;
  const Tensor<T> xu = index_select(src, 2, taps).reshape({N, C, OD, KD, H, W}).permute({0, 2, 1, 3, 4, 5}).reshape({N * OD, C * KD, H, W});
  const dl::detail::ConvParams p{Size2(stride.h, stride.w), Size2(padding.h, padding.w), Size2(dilation.h, dilation.w), groups};
  const Tensor<T> y = dl::detail::conv2d_op(xu, weight.reshape({O, Cg * KD, KH, KW}), bias, p);
  return y.reshape({N, OD, O, y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
}

template <expression E, class T>
Tensor<T> conv_transpose1d(const E& input, const Tensor<T>& weight, const Tensor<T>& bias, int64_t stride, int64_t padding,
                           int64_t output_padding, int64_t groups, int64_t dilation) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "conv_transpose1d: input and weight must have the same element type");
  const Tensor<T> x = dl::detail::materialize(input);
  DL_CHECK(x.dim() == 2 || x.dim() == 3, "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: ",
           x.shape());
  DL_CHECK(weight.dim() == 3, "conv_transpose1d: expected a 3-D weight [in_channels, out_channels / groups, k], but got weight of size ",
           weight.shape());
  const Tensor<T> x4 = x.dim() == 3 ? x.unsqueeze(2) : x.unsqueeze(0).unsqueeze(2);
  Tensor<T> y = conv_transpose2d(x4, weight.unsqueeze(2), bias, Size2(1, stride), Size2(0, padding), Size2(0, output_padding), groups,
                                 Size2(1, dilation))
                    .squeeze(2);
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
  return detail::batched(dl::detail::materialize(input), "conv_transpose2d", [&](const Tensor<T>& x) {
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
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv2d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::Size2, dl::Size2, dl::Size2, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv1d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, int64_t, int64_t, int64_t, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv_transpose2d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::Size2, dl::Size2, dl::Size2, int64_t,
                                                                dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv3d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::Size3, dl::Size3, dl::Size3, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv_transpose1d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, int64_t, int64_t, int64_t, int64_t, int64_t))
