// dl/nn/functional/conv_extra.hpp — the remaining convolution and pooling forms of
// torch.nn.functional on the 2-d kernels: conv3d (one conv2d over the depth taps folded into
// channels), conv_transpose1d, max/avg/adaptive pooling in 1-d, and bilinear. PyTorch's argument
// order, defaults, unbatched inputs and shape errors; all differentiable (to any order).
#pragma once

#include <optional>
#include <vector>

#include "../../config.hpp"
#include "../../ops/indexing.hpp"
#include "../functional.hpp"

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

/// 1-d max pooling over [N, C, L] (or [C, L]); stride defaults to the kernel size.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> max_pool1d(const E& input, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                     int64_t dilation = 1, bool ceil_mode = false);
/// max_pool1d with return_indices: {values, indices along L}.
template <expression E, class T = expr::value_type_t<E>>
MaxResult<T> max_pool1d_with_indices(const E& input, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                                     int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false);

/// 1-d average pooling over [N, C, L] (or [C, L]).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> avg_pool1d(const E& input, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true);

/// Average pooling to a fixed length: [N, C, L] -> [N, C, output_size] (windows cover L evenly).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> adaptive_avg_pool1d(const E& input, int64_t output_size);
/// Max pooling to a fixed length.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> adaptive_max_pool1d(const E& input, int64_t output_size);
template <expression E, class T = expr::value_type_t<E>>
MaxResult<T> adaptive_max_pool1d_with_indices(const E& input, int64_t output_size);

/// y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]: input1 [..., in1],
/// input2 [..., in2] (the same leading dims), weight [out, in1, in2], bias [out] or undefined.
template <expression A, expression B, class T = expr::value_type_t<A>>
Tensor<T> bilinear(const A& input1, const B& input2, const Tensor<T>& weight, const Tensor<T>& bias = {});

// ------------------------------------------------------------------------------ implementation

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

namespace detail {

/// Runs f on a batched [N, C, 1, L] view of a [C, L] or [N, C, L] input; removes the added dims.
template <class T, class F>
auto pooled1d(const Tensor<T>& x, F&& f) {
  const Tensor<T> x4 = x.dim() == 3 ? x.unsqueeze(2) : x.unsqueeze(0).unsqueeze(2);
  auto r = f(x4);
  auto back = [&](const auto& t) { return x.dim() == 3 ? t.squeeze(2) : t.squeeze(2).squeeze(0); };
  if constexpr (std::is_same_v<decltype(r), MaxResult<T>>) return MaxResult<T>{back(r.values), back(r.indices)};
  else return back(r);
}

DL_API void check_pool1d_dims(const Shape& x, const char* what);
#if DL_HEADER_ONLY
DL_API void check_pool1d_dims(const Shape& x, const char* what) {
  DL_CHECK(x.size() == 2 || x.size() == 3, "Expected 2 to 3 dimensions, but got ", x.size(),
           "-dimensional tensor for argument #1 'self' (while checking arguments for ", what, ")");
}
#endif  // DL_HEADER_ONLY

}  // namespace detail

template <expression E, class T>
MaxResult<T> max_pool1d_with_indices(const E& input, int64_t kernel_size, std::optional<int64_t> stride_, int64_t padding,
                                     int64_t dilation, bool ceil_mode) {
  const Tensor<T> x = dl::detail::materialize(input);
  const int64_t stride = stride_.value_or(kernel_size);
  DL_CHECK(x.dim() == 2 || x.dim() == 3,
           "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:", x.shape());
  DL_CHECK(kernel_size > 0, "max_pool1d() kernel_size must be greater than zero, but got ", kernel_size);
  DL_CHECK(stride > 0, "max_pool1d() stride must be greater than zero, but got ", stride);
  DL_CHECK(padding >= 0, "max_pool1d() padding must be non-negative, but got ", padding);
  DL_CHECK(padding <= kernel_size / 2, "max_pool1d() padding should be at most half of kernel size, but got padding=", padding,
           " and kernel_size=", kernel_size);
  DL_CHECK(dilation > 0, "max_pool1d() dilation must be greater than zero, but got ", dilation);
  const int64_t L = x.size(-1);
  const int64_t OL = dl::detail::pool_output_size(L, kernel_size, padding, stride, dilation, ceil_mode);
  DL_CHECK(OL >= 0, "max_pool1d() Invalid computed output size: ", OL);
  if (OL == 0) {  // PyTorch returns an empty result here (its 2-d kernel would reject it)
    Shape s = x.shape();
    s[s.size() - 1] = 0;
    return {x.narrow(-1, 0, 0), empty<int64_t>(s)};
  }
  dl::detail::PoolParams p;
  p.kernel = Size2(1, kernel_size);
  p.stride = Size2(1, stride);
  p.padding = Size2(0, padding);
  p.dilation = Size2(1, dilation);
  p.ceil_mode = ceil_mode;
  return detail::pooled1d(x, [&](const Tensor<T>& x4) { return dl::detail::max_pool2d_op(x4, p); });
}

template <expression E, class T>
Tensor<T> max_pool1d(const E& input, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding, int64_t dilation,
                     bool ceil_mode) {
  return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode).values;
}

template <expression E, class T>
Tensor<T> avg_pool1d(const E& input, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding, bool ceil_mode,
                     bool count_include_pad) {
  const Tensor<T> x = dl::detail::materialize(input);
  detail::check_pool1d_dims(x.shape(), "avg_pool1d");
  DL_CHECK(stride.value_or(1) != 0, "stride should not be zero");
  auto p = detail::pool_params(Size2(1, kernel_size), stride ? std::optional<Size2>(Size2(1, *stride)) : std::nullopt,
                               Size2(0, padding), 1, ceil_mode);
  p.count_include_pad = count_include_pad;
  return detail::pooled1d(x, [&](const Tensor<T>& x4) {
    return dl::detail::avg_pool2d_op(x4, p, dl::detail::pool2d_shape(x4.shape(), p, "avg_pool1d"), false);
  });
}

template <expression E, class T>
Tensor<T> adaptive_avg_pool1d(const E& input, int64_t output_size) {
  const Tensor<T> x = dl::detail::materialize(input);
  detail::check_pool1d_dims(x.shape(), "adaptive_avg_pool1d");
  return detail::pooled1d(x, [&](const Tensor<T>& x4) {
    detail::check_adaptive(x4.shape(), Size2(1, output_size), "adaptive_avg_pool1d");
    return dl::detail::avg_pool2d_op(x4, {}, {x4.size(0), x4.size(1), 1, output_size}, true);
  });
}

template <expression E, class T>
MaxResult<T> adaptive_max_pool1d_with_indices(const E& input, int64_t output_size) {
  const Tensor<T> x = dl::detail::materialize(input);
  detail::check_pool1d_dims(x.shape(), "adaptive_max_pool1d");
  return detail::pooled1d(x, [&](const Tensor<T>& x4) {
    detail::check_adaptive(x4.shape(), Size2(1, output_size), "adaptive_max_pool1d");
    return dl::detail::adaptive_max_pool2d_op(x4, 1, output_size);
  });
}

template <expression E, class T>
Tensor<T> adaptive_max_pool1d(const E& input, int64_t output_size) {
  return adaptive_max_pool1d_with_indices(input, output_size).values;
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
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv3d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, dl::Size3, dl::Size3, dl::Size3, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::conv_transpose1d(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, int64_t, int64_t, int64_t, int64_t, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::max_pool1d(const dl::Tensor<float>&, int64_t, std::optional<int64_t>, int64_t, int64_t, bool))
DL_EXTERN_TEMPLATE(nn, dl::MaxResult<float> dl::nn::functional::max_pool1d_with_indices(const dl::Tensor<float>&, int64_t, std::optional<int64_t>,
                                                                                       int64_t, int64_t, bool))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::avg_pool1d(const dl::Tensor<float>&, int64_t, std::optional<int64_t>, int64_t, bool, bool))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_avg_pool1d(const dl::Tensor<float>&, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_max_pool1d(const dl::Tensor<float>&, int64_t))
