// dl/nn/init.hpp — dl::nn::init, PyTorch's weight initialisation functions. Each fills a tensor in
// place (without recording history) and returns it, so it works on parameters and through apply:
//
//   net.apply([](nn::Module& m) {
//     if (auto* l = m.as<nn::Linear>()) { nn::init::xavier_uniform_(l->weight); nn::init::zeros_(l->bias); }
//   });
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "../tensor.hpp"

namespace dl::nn::init {

// ------------------------------------------------------------------------------ declarations

/// The recommended gain for a nonlinearity ("linear", "conv2d", "sigmoid", "tanh", "relu",
/// "leaky_relu" (param: negative slope, default 0.01), "selu").
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);
/// (fan_in, fan_out) of a weight: size(1) and size(0) times the receptive field (sizes from dim 2).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Shape& shape);
template <scalar_type T>
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor<T>& t) { return calculate_fan_in_and_fan_out(t.shape()); }

template <scalar_type T> Tensor<T> uniform_(Tensor<T> t, double a = 0, double b = 1);
template <scalar_type T> Tensor<T> normal_(Tensor<T> t, double mean = 0, double std = 1);
/// Normal(mean, std) restricted to [a, b] (inverse-CDF method, as PyTorch).
template <scalar_type T> Tensor<T> trunc_normal_(Tensor<T> t, double mean = 0, double std = 1, double a = -2, double b = 2);
template <scalar_type T> Tensor<T> constant_(Tensor<T> t, double value);
template <scalar_type T> Tensor<T> ones_(Tensor<T> t) { return constant_(std::move(t), 1); }
template <scalar_type T> Tensor<T> zeros_(Tensor<T> t) { return constant_(std::move(t), 0); }
/// The identity matrix (2-d tensors).
template <scalar_type T> Tensor<T> eye_(Tensor<T> t);
/// The Dirac delta for convolution weights (3-, 4- or 5-d): each group keeps its input channels.
template <scalar_type T> Tensor<T> dirac_(Tensor<T> t, int64_t groups = 1);
/// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot).
template <scalar_type T> Tensor<T> xavier_uniform_(Tensor<T> t, double gain = 1);
/// N(0, std) with std = gain * sqrt(2 / (fan_in + fan_out)).
template <scalar_type T> Tensor<T> xavier_normal_(Tensor<T> t, double gain = 1);
/// U(-bound, bound) with bound = gain(nonlinearity, a) * sqrt(3 / fan) (He); mode "fan_in" or "fan_out".
template <scalar_type T>
Tensor<T> kaiming_uniform_(Tensor<T> t, double a = 0, std::string_view mode = "fan_in", std::string_view nonlinearity = "leaky_relu");
/// N(0, std) with std = gain(nonlinearity, a) / sqrt(fan).
template <scalar_type T>
Tensor<T> kaiming_normal_(Tensor<T> t, double a = 0, std::string_view mode = "fan_in", std::string_view nonlinearity = "leaky_relu");
/// A (semi-)orthogonal matrix (trailing dims flattened), scaled by gain (Saxe et al.).
template <scalar_type T> Tensor<T> orthogonal_(Tensor<T> t, double gain = 1);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Inverse error function: Giles' single-precision approximation refined by two Newton steps.
inline double erfinv(double y) {
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                     1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3.0;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                     2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  return x;
}

inline int64_t correct_fan(const Shape& s, std::string_view mode) {
  DL_CHECK(mode == "fan_in" || mode == "fan_out", "Mode ", mode, " not supported, please use one of ['fan_in', 'fan_out']");
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(s);
  return mode == "fan_in" ? fan_in : fan_out;
}

/// Writes values (row-major over t's shape) into t, whatever its strides.
template <class T>
void assign_values(Tensor<T>& t, const std::vector<double>& v) {
  Tensor<T> tmp = empty<T>(t.shape());
  for (size_t i = 0; i < v.size(); ++i) tmp.data()[i] = T(v[i]);
  t.copy_(tmp);
}

}  // namespace detail

inline double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  for (std::string_view lin : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"})
    if (nonlinearity == lin) return 1;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4;
  throw Error(dl::detail::cat("Unsupported nonlinearity ", nonlinearity));
}

inline std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Shape& s) {
  DL_CHECK(s.size() >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (shape ", s, ")");
  int64_t receptive = 1;
  for (int d = 2; d < s.size(); ++d) receptive *= s[d];
  return {s[1] * receptive, s[0] * receptive};
}

template <scalar_type T>
Tensor<T> uniform_(Tensor<T> t, double a, double b) {
  DL_CHECK(a <= b, "uniform_ expects to return a [from, to) range, but found from=", a, " > to=", b);
  NoGradGuard no_grad;
  t.uniform_(a, b);
  return t;
}

template <scalar_type T>
Tensor<T> normal_(Tensor<T> t, double mean, double std) {
  DL_CHECK(std >= 0, "normal_ expects std >= 0.0, but found std ", std);
  NoGradGuard no_grad;
  t.normal_(mean, std);
  return t;
}

template <scalar_type T>
Tensor<T> trunc_normal_(Tensor<T> t, double mean, double std, double a, double b) {
  DL_CHECK(a < b, "trunc_normal_: the bounds must satisfy a < b, got a=", a, ", b=", b);
  auto cdf = [](double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; };
  const double l = cdf((a - mean) / std), u = cdf((b - mean) / std);
  NoGradGuard no_grad;
  Tensor<double> r = rand<double>(t.shape());
  std::vector<double> v(size_t(r.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    const double p = (2 * l - 1) + (2 * u - 2 * l) * r.data()[i];
    v[i] = std::clamp(detail::erfinv(p) * std * std::sqrt(2.0) + mean, a, b);
  }
  detail::assign_values(t, v);
  return t;
}

template <scalar_type T>
Tensor<T> constant_(Tensor<T> t, double value) {
  NoGradGuard no_grad;
  t.fill_(T(value));
  return t;
}

template <scalar_type T>
Tensor<T> eye_(Tensor<T> t) {
  DL_CHECK(t.dim() == 2, "Only tensors with 2 dimensions are supported (eye_ got shape ", t.shape(), ")");
  NoGradGuard no_grad;
  t.copy_(eye<T>(t.size(0), t.size(1)));
  return t;
}

template <scalar_type T>
Tensor<T> dirac_(Tensor<T> t, int64_t groups) {
  const int nd = t.dim();
  DL_CHECK(nd >= 3 && nd <= 5, "Only tensors with 3, 4, or 5 dimensions are supported (dirac_ got shape ", t.shape(), ")");
  DL_CHECK(groups > 0 && t.size(0) % groups == 0, "dim 0 must be divisible by groups (size ", t.size(0), ", groups ", groups, ")");
  const int64_t per_group = t.size(0) / groups, min_dim = std::min(per_group, t.size(1));
  std::vector<double> v(size_t(t.numel()), 0.0);
  const Strides st = contiguous_strides(t.shape());
  int64_t center = 0;
  for (int d = 2; d < nd; ++d) center += (t.size(d) / 2) * st[d];
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t d = 0; d < min_dim; ++d) v[size_t((g * per_group + d) * st[0] + d * st[1] + center)] = 1;
  NoGradGuard no_grad;
  detail::assign_values(t, v);
  return t;
}

template <scalar_type T>
Tensor<T> xavier_uniform_(Tensor<T> t, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t.shape());
  const double a = gain * std::sqrt(2.0 / double(fan_in + fan_out)) * std::sqrt(3.0);
  return uniform_(std::move(t), -a, a);
}

template <scalar_type T>
Tensor<T> xavier_normal_(Tensor<T> t, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t.shape());
  return normal_(std::move(t), 0, gain * std::sqrt(2.0 / double(fan_in + fan_out)));
}

template <scalar_type T>
Tensor<T> kaiming_uniform_(Tensor<T> t, double a, std::string_view mode, std::string_view nonlinearity) {
  if (t.numel() == 0) return t;  // PyTorch: a no-op with a warning
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(double(detail::correct_fan(t.shape(), mode)));
  return uniform_(std::move(t), -bound, bound);
}

template <scalar_type T>
Tensor<T> kaiming_normal_(Tensor<T> t, double a, std::string_view mode, std::string_view nonlinearity) {
  if (t.numel() == 0) return t;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(double(detail::correct_fan(t.shape(), mode)));
  return normal_(std::move(t), 0, std);
}

template <scalar_type T>
Tensor<T> orthogonal_(Tensor<T> t, double gain) {
  DL_CHECK(t.dim() >= 2, "Only tensors with 2 or more dimensions are supported (orthogonal_ got shape ", t.shape(), ")");
  if (t.numel() == 0) return t;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // QR of a normal matrix A (m x n, m >= n; the transpose when rows < cols) by modified Gram-Schmidt
  // on its columns; Q's columns are multiplied by sign(diag(R)) so Q is uniform (Mezzadri).
  const bool transposed = rows < cols;
  const int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  Tensor<double> a = randn<double>({m, n});
  std::vector<double> q(a.data(), a.data() + m * n);  // column j: q[i * n + j]
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += q[size_t(i * n + k)] * q[size_t(i * n + j)];
      for (int64_t i = 0; i < m; ++i) q[size_t(i * n + j)] -= dot * q[size_t(i * n + k)];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += q[size_t(i * n + j)] * q[size_t(i * n + j)];
    norm = std::sqrt(norm);
    // R's diagonal entry is this norm (positive), so the sign correction is the identity here.
    for (int64_t i = 0; i < m; ++i) q[size_t(i * n + j)] = norm > 0 ? q[size_t(i * n + j)] / norm : 0;
  }
  std::vector<double> v(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v[size_t(r * cols + c)] = gain * (transposed ? q[size_t(c * n + r)] : q[size_t(r * n + c)]);
  NoGradGuard no_grad;
  detail::assign_values(t, v);
  return t;
}

}  // namespace dl::nn::init
