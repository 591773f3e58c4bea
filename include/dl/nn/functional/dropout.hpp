// dl/nn/functional/dropout.hpp — dropout, dropout1d, dropout2d and alpha_dropout of
// dl::nn::functional. In training each element (or whole channel) is zeroed with probability p
// and the rest scaled by 1 / (1 - p): the keep-mask comes from dl's Philox generator (reproducible
// after dl::manual_seed, identical for any thread count) and is applied in one pass fused with the
// input expression; the backward multiplies by the same stored mask.
#pragma once

#include <cmath>

#include "../../config.hpp"
#include "../../ops/dropout.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// Zeroes each element with probability p, scales the others by 1 / (1 - p). The input itself
/// (materialised) when !training or p == 0; zeros (input * 0) when p == 1.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> dropout(const E& input, double p = 0.5, bool training = true, Generator* generator = nullptr);

/// Zeroes whole channels: input [N, C, H, W] (one draw per (n, c)) or [C, H, W] (one per c).
/// Other ranks >= 2 drop input[n, c, ...] slices, as PyTorch's feature dropout.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> dropout2d(const E& input, double p = 0.5, bool training = true, Generator* generator = nullptr);

/// Zeroes whole channels of input [N, C, L] (one draw per (n, c)) or [C, L] (one per c).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> dropout1d(const E& input, double p = 0.5, bool training = true, Generator* generator = nullptr);

/// Alpha dropout (for SELU networks): dropped elements take SELU's negative saturation value and
/// an affine map keeps mean 0 and variance 1: x * a * keep + a * alpha' * (p - 1 + keep), with
/// alpha' = 1.7580993408473766 and a = 1 / sqrt((alpha'^2 p + 1)(1 - p)).
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> alpha_dropout(const E& input, double p = 0.5, bool training = false, Generator* generator = nullptr);

// ------------------------------------------------------------------------------ implementation

namespace detail {

DL_API void check_dropout_p(double p);

/// x * mask, mask of shape mask_shape (broadcast), values 0 or 1 / (1 - p): one fused pass.
template <class E, class T>
Tensor<T> apply_keep_mask(const E& input, const Shape& mask_shape, double p, Generator* gen) {
  static_assert(floating_scalar<T>, "dropout needs a floating input");
  if (p == 1) return Tensor<T>(input * T(0));
  const Tensor<T> mask = dl::detail::keep_mask<T>(mask_shape, 1 - p, T(1.0 / (1 - p)), gen, expr::device_of(expr::as_node(input)));
  return Tensor<T>(input * mask);
}

/// [N, C, 1, ..., 1] for input [N, C, ...]: one draw per (sample, channel).
DL_API Shape feature_mask_shape(const Shape& s);

}  // namespace detail

template <expression E, class T>
Tensor<T> dropout(const E& input, double p, bool training, Generator* generator) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::dropout", input);
  detail::check_dropout_p(p);
  if (!training || p == 0) return dl::detail::materialize(input);
  return detail::apply_keep_mask<E, T>(input, expr::shape_of(expr::as_node(input)), p, generator);
}

template <expression E, class T>
Tensor<T> dropout2d(const E& input, double p, bool training, Generator* generator) {
  detail::check_dropout_p(p);
  const Shape s = expr::shape_of(expr::as_node(input));
  DL_CHECK(s.size() >= 2, "dropout2d: Feature dropout requires at least 2 dimensions in the input, got input of size ", s);
  if (!training || p == 0) return dl::detail::materialize(input);
  Shape m = detail::feature_mask_shape(s);
  if (s.size() == 3) m = {s[0], 1, 1};  // unbatched [C, H, W]: one draw per channel
  return detail::apply_keep_mask<E, T>(input, m, p, generator);
}

template <expression E, class T>
Tensor<T> dropout1d(const E& input, double p, bool training, Generator* generator) {
  detail::check_dropout_p(p);
  const Shape s = expr::shape_of(expr::as_node(input));
  DL_CHECK(s.size() == 2 || s.size() == 3, "dropout1d: Expected 2D or 3D input, but received a ", s.size(),
           "D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).");
  if (!training || p == 0) return dl::detail::materialize(input);
  const Shape m = s.size() == 3 ? Shape{s[0], s[1], 1} : Shape{s[0], 1};
  return detail::apply_keep_mask<E, T>(input, m, p, generator);
}

template <expression E, class T>
Tensor<T> alpha_dropout(const E& input, double p, bool training, Generator* generator) {
  static_assert(floating_scalar<T>, "alpha_dropout needs a floating input");
  detail::check_dropout_p(p);
  if (!training || p == 0) return dl::detail::materialize(input);
  if (p == 1) return Tensor<T>(input * T(0));
  constexpr double alpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  const Tensor<T> keep = dl::detail::keep_mask<T>(expr::shape_of(expr::as_node(input)), 1 - p, T(1), generator,
                                                  expr::device_of(expr::as_node(input)));
  return Tensor<T>(input * (keep * T(a)) + (keep * T(alpha * a) + T(alpha * a * (p - 1))));
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::dropout(const dl::Tensor<float>&, double, bool, dl::Generator*))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::dropout2d(const dl::Tensor<float>&, double, bool, dl::Generator*))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::dropout1d(const dl::Tensor<float>&, double, bool, dl::Generator*))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::alpha_dropout(const dl::Tensor<float>&, double, bool, dl::Generator*))

#if DL_HEADER_ONLY
#include "dropout-inl.hpp"
#endif
