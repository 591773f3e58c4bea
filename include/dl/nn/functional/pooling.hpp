// dl/nn/functional/pooling.hpp — the pooling functions of dl::nn::functional: max, average and
// adaptive pooling in 1-d and 2-d (the 1-d forms on the 2-d kernels), with PyTorch's argument
// order, defaults, unbatched inputs and shape errors; all differentiable (to any order).
#pragma once

#include <optional>
#include <type_traits>

#include "../../config.hpp"
#include "../../ops/pool.hpp"
#include "../../tensor.hpp"
#include "batched.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

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

/// Whether an expression type is relu(something).
template <class E>
inline constexpr bool is_relu_of = false;
template <class A>
inline constexpr bool is_relu_of<expr::Apply<expr::Relu, A>> = true;

inline dl::detail::PoolParams pool_params(Size2 kernel, std::optional<Size2> stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  dl::detail::PoolParams p;
  p.kernel = kernel;
  p.stride = stride.value_or(kernel);
  p.padding = padding;
  p.dilation = dilation;
  p.ceil_mode = ceil_mode;
  return p;
}

inline void check_adaptive(const Shape& x, Size2 out, const char* what) {
  DL_CHECK(out.h >= 0 && out.w >= 0, what, ": output_size must be non-negative, got (", out.h, ", ", out.w, ")");
  for (int d = 1; d < x.size(); ++d)
    DL_CHECK(x[d] > 0, what, "(): Expected input to have non-zero size for non-batch dimensions, but input has sizes ", x,
             " with dimension ", d, " being empty");
}

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

template <expression E, class T>
MaxResult<T> max_pool2d_with_indices(const E& input, Size2 kernel_size, OptionalSize2 stride, Size2 padding,
                                     Size2 dilation, bool ceil_mode) {
  const auto p = detail::pool_params(kernel_size, stride, padding, dilation, ceil_mode);
  return detail::batched(dl::detail::materialize(input), "max_pool2d", [&](const Tensor<T>& x) {
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
  return detail::batched(dl::detail::materialize(input), "avg_pool2d", [&](const Tensor<T>& x) {
    return dl::detail::avg_pool2d_op(x, p, dl::detail::pool2d_shape(x.shape(), p, "avg_pool2d"), false);
  });
}

template <expression E, class T>
Tensor<T> adaptive_avg_pool2d(const E& input, Size2 output_size) {
  return detail::batched(dl::detail::materialize(input), "adaptive_avg_pool2d", [&](const Tensor<T>& x) {
    detail::check_adaptive(x.shape(), output_size, "adaptive_avg_pool2d");
    return dl::detail::avg_pool2d_op(x, {}, {x.size(0), x.size(1), output_size.h, output_size.w}, true);
  });
}

template <expression E, class T>
MaxResult<T> adaptive_max_pool2d_with_indices(const E& input, Size2 output_size) {
  return detail::batched(dl::detail::materialize(input), "adaptive_max_pool2d", [&](const Tensor<T>& x) {
    detail::check_adaptive(x.shape(), output_size, "adaptive_max_pool2d");
    return dl::detail::adaptive_max_pool2d_op(x, output_size.h, output_size.w);
  });
}

template <expression E, class T>
Tensor<T> adaptive_max_pool2d(const E& input, Size2 output_size) {
  return adaptive_max_pool2d_with_indices(input, output_size).values;
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::max_pool2d(const dl::Tensor<float>&, dl::Size2, dl::OptionalSize2, dl::Size2, dl::Size2, bool))
DL_EXTERN_TEMPLATE(nn, dl::MaxResult<float> dl::nn::functional::max_pool2d_with_indices(const dl::Tensor<float>&, dl::Size2, dl::OptionalSize2,
                                                                                       dl::Size2, dl::Size2, bool))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::avg_pool2d(const dl::Tensor<float>&, dl::Size2, dl::OptionalSize2, dl::Size2, bool, bool, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_avg_pool2d(const dl::Tensor<float>&, dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_max_pool2d(const dl::Tensor<float>&, dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::MaxResult<float> dl::nn::functional::adaptive_max_pool2d_with_indices(const dl::Tensor<float>&, dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::max_pool1d(const dl::Tensor<float>&, int64_t, std::optional<int64_t>, int64_t, int64_t, bool))
DL_EXTERN_TEMPLATE(nn, dl::MaxResult<float> dl::nn::functional::max_pool1d_with_indices(const dl::Tensor<float>&, int64_t, std::optional<int64_t>,
                                                                                       int64_t, int64_t, bool))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::avg_pool1d(const dl::Tensor<float>&, int64_t, std::optional<int64_t>, int64_t, bool, bool))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_avg_pool1d(const dl::Tensor<float>&, int64_t))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::adaptive_max_pool1d(const dl::Tensor<float>&, int64_t))

#if DL_HEADER_ONLY
#include "pooling-inl.hpp"
#endif
