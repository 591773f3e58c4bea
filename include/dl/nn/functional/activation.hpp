// dl/nn/functional/activation.hpp — the activation functions of dl::nn::functional (F): relu,
// relu6, leaky_relu, elu, selu, celu, gelu, silu, mish, sigmoid, tanh, softplus, hardtanh,
// hardsigmoid, hardswish, logsigmoid, softsign, tanhshrink, threshold, prelu. Each is lazy: it
// returns an expression that fuses with its neighbours (`Tensor<float> y = F::gelu(a * b)` is one
// pass, and one fused backward pass).
#pragma once

#include <string_view>

#include "../../expr/activations.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

// relu(x), sigmoid(x), tanh(x): the expression functions of dl.
using dl::expr::relu, dl::expr::sigmoid, dl::expr::tanh;

/// min(max(x, 0), 6); the gradient is 0 at 0 and 6.
template <expression E>
auto relu6(E&& x);
/// x > 0 ? x : negative_slope * x.
template <expression E>
auto leaky_relu(E&& x, double negative_slope = 0.01);
/// x > 0 ? x : alpha * (exp(x) - 1).
template <expression E>
auto elu(E&& x, double alpha = 1.0);
/// scale * elu(x, alpha) with PyTorch's constants (alpha = 1.6732632..., scale = 1.0507009...).
template <expression E>
auto selu(E&& x);
/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha must not be 0.
template <expression E>
auto celu(E&& x, double alpha = 1.0);
/// x * Phi(x) (approximate = "none") or its tanh approximation (approximate = "tanh").
template <expression E>
auto gelu(E&& x, std::string_view approximate = "none");
/// x * sigmoid(x).
template <expression E>
auto silu(E&& x);
/// x * tanh(softplus(x)).
template <expression E>
auto mish(E&& x);
/// log(1 + exp(beta x)) / beta, reverting to x where beta x > threshold.
template <expression E>
auto softplus(E&& x, double beta = 1, double threshold = 20);
/// clamp(x, min_val, max_val); the gradient is 0 at and beyond the bounds.
template <expression E>
auto hardtanh(E&& x, double min_val = -1, double max_val = 1);
/// clamp(x / 6 + 1 / 2, 0, 1).
template <expression E>
auto hardsigmoid(E&& x);
/// x * hardsigmoid(x).
template <expression E>
auto hardswish(E&& x);
/// log(sigmoid(x)), computed stably.
template <expression E>
auto logsigmoid(E&& x);
/// x / (1 + |x|).
template <expression E>
auto softsign(E&& x);
/// x - tanh(x).
template <expression E>
auto tanhshrink(E&& x);
/// x <= threshold ? value : x.
template <expression E>
auto threshold(E&& x, double threshold, double value);
/// x > 0 ? x : weight * x, with weight [1] (shared) or [C] (one per channel, dim 1 of x; a 0-d
/// or 1-d x has one channel). Gradients flow to x and weight.
template <expression E, class T = expr::value_type_t<E>>
auto prelu(E&& x, const Tensor<T>& weight);

// ------------------------------------------------------------------------------ implementation

namespace detail {
template <class E>
constexpr void check_floating_activation() {
  static_assert(floating_scalar<expr::value_type_t<E>>,
                "this activation needs a floating input (PyTorch has no integer kernel for it); "
                "convert with .to<float>() or dl::cast<float>(x) first");
}
}  // namespace detail

template <expression E>
auto relu6(E&& x) {
  using T = expr::value_type_t<E>;
  return expr::apply(expr::Hardtanh<T>{T(0), T(6)}, std::forward<E>(x));
}

template <expression E>
auto leaky_relu(E&& x, double negative_slope) {
  detail::check_floating_activation<E>();
  using T = expr::value_type_t<E>;
  return expr::apply(expr::LeakyRelu<T>{T(negative_slope)}, std::forward<E>(x));
}

template <expression E>
auto elu(E&& x, double alpha) {
  detail::check_floating_activation<E>();
  using T = expr::value_type_t<E>;
  return expr::apply(expr::Elu<T>{T(alpha), T(1), T(1)}, std::forward<E>(x));
}

template <expression E>
auto selu(E&& x) {
  detail::check_floating_activation<E>();
  using T = expr::value_type_t<E>;
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  return expr::apply(expr::Elu<T>{T(alpha), T(scale), T(1)}, std::forward<E>(x));
}

template <expression E>
auto celu(E&& x, double alpha) {
  detail::check_floating_activation<E>();
  using T = expr::value_type_t<E>;
  DL_CHECK(alpha != 0, "ZeroDivisionError: alpha cannot be 0 for CELU");
  return expr::apply(expr::Elu<T>{T(alpha), T(1), T(1.0 / alpha)}, std::forward<E>(x));
}

template <expression E>
auto gelu(E&& x, std::string_view approximate) {
  detail::check_floating_activation<E>();
  using T = expr::value_type_t<E>;
  DL_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh (got \"",
           approximate, "\")");
  return expr::apply(expr::Gelu<T>{approximate == "tanh"}, std::forward<E>(x));
}

template <expression E>
auto silu(E&& x) {
  detail::check_floating_activation<E>();
  return expr::apply(expr::Silu{}, std::forward<E>(x));
}

template <expression E>
auto mish(E&& x) {
  detail::check_floating_activation<E>();
  return expr::apply(expr::Mish{}, std::forward<E>(x));
}

template <expression E>
auto softplus(E&& x, double beta, double threshold) {
  detail::check_floating_activation<E>();
  using T = expr::value_type_t<E>;
  return expr::apply(expr::Softplus<T>{T(beta), T(threshold)}, std::forward<E>(x));
}

template <expression E>
auto hardtanh(E&& x, double min_val, double max_val) {
  using T = expr::value_type_t<E>;
  static_assert(!std::is_same_v<T, bool>, "hardtanh: bool inputs are not supported");
  return expr::apply(expr::Hardtanh<T>{T(min_val), T(max_val)}, std::forward<E>(x));
}

template <expression E>
auto hardsigmoid(E&& x) {
  detail::check_floating_activation<E>();
  return expr::apply(expr::Hardsigmoid{}, std::forward<E>(x));
}

template <expression E>
auto hardswish(E&& x) {
  detail::check_floating_activation<E>();
  return expr::apply(expr::Hardswish{}, std::forward<E>(x));
}

template <expression E>
auto logsigmoid(E&& x) {
  detail::check_floating_activation<E>();
  return expr::apply(expr::LogSigmoid{}, std::forward<E>(x));
}

template <expression E>
auto softsign(E&& x) {
  detail::check_floating_activation<E>();
  return expr::apply(expr::Softsign{}, std::forward<E>(x));
}

template <expression E>
auto tanhshrink(E&& x) {
  detail::check_floating_activation<E>();
  return expr::apply(expr::Tanhshrink{}, std::forward<E>(x));
}

template <expression E>
auto threshold(E&& x, double threshold, double value) {
  using T = expr::value_type_t<E>;
  static_assert(!std::is_same_v<T, bool>, "threshold: bool inputs are not supported");
  return expr::apply(expr::Threshold<T>{T(threshold), T(value)}, std::forward<E>(x));
}

template <expression E, class T>
auto prelu(E&& x, const Tensor<T>& weight) {
  static_assert(std::is_same_v<expr::value_type_t<E>, T>, "prelu: input and weight must have the same element type");
  detail::check_floating_activation<E>();
  DL_CHECK(weight.defined(), "prelu: weight is undefined");
  DL_CHECK(weight.dim() <= 1, "prelu: Expected `weight` to be a scalar or 1D tensor, but got ndim = ", weight.dim());
  const Shape shape = expr::shape_of(expr::as_node(x));
  Tensor<T> w = weight;
  if (weight.numel() == 1) {
    w = weight.reshape({});
  } else {
    DL_CHECK(shape.size() > 0, "prelu: Not allow zero-dim input tensor.");
    const int64_t channels = shape.size() > 1 ? shape[1] : 1;
    DL_CHECK(channels == weight.numel(), "Mismatch of parameter numbers and input channel size. Found parameter numbers = ",
             weight.numel(), " and channel size = ", channels, ".");
    Shape ws = Dims::filled(shape.size() - 1, 1);  // [C, 1, ..., 1]: broadcasts over dim 1
    ws[0] = channels;
    w = weight.reshape(ws);
  }
  return expr::apply(expr::Prelu{}, std::forward<E>(x), std::move(w));
}

}  // namespace dl::nn::functional

// Compiled mode: each activation of a tensor is evaluated in libdl_kernels (dl/tensor/instances.hpp).
#if defined(DL_COMPILED_KERNELS)
#define DL_ACTIVATION_OPS(X, T)                                                                                  \
  X(T, Silu) X(T, Mish) X(T, Hardsigmoid) X(T, Hardswish) X(T, LogSigmoid) X(T, Softsign) X(T, Tanhshrink)     \
  X(T, LeakyRelu<T>) X(T, Elu<T>) X(T, Gelu<T>) X(T, Softplus<T>) X(T, Hardtanh<T>) X(T, Threshold<T>)
DL_ACTIVATION_OPS(DL_EXTERN_UNARY, float)
#undef DL_ACTIVATION_OPS
#endif
