// dl/ops/windows.hpp — the window functions of torch.signal's ancestors: hann_window,
// hamming_window, blackman_window, bartlett_window, kaiser_window. Each returns a 1-d tensor of
// window_length elements ([] for 0, [1] for 1). A periodic window (the default, for spectral
// analysis) is the symmetric window of window_length + 1 with its last element dropped.
#pragma once

#include <cmath>
#include <numbers>

#include "../tensor.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// 0.5 - 0.5 cos(2 pi n / (N - 1)).
template <floating_scalar T = float>
Tensor<T> hann_window(int64_t window_length, bool periodic = true);
/// alpha - beta cos(2 pi n / (N - 1)).
template <floating_scalar T = float>
Tensor<T> hamming_window(int64_t window_length, bool periodic = true, double alpha = 0.54, double beta = 0.46);
/// 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)).
template <floating_scalar T = float>
Tensor<T> blackman_window(int64_t window_length, bool periodic = true);
/// 1 - |2n / (N - 1) - 1| (a triangle).
template <floating_scalar T = float>
Tensor<T> bartlett_window(int64_t window_length, bool periodic = true);
/// I0(beta sqrt(1 - ((n - (N - 1) / 2) / ((N - 1) / 2))^2)) / I0(beta), I0 the modified Bessel
/// function of the first kind of order 0.
template <floating_scalar T = float>
Tensor<T> kaiser_window(int64_t window_length, bool periodic = true, double beta = 12.0);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// Fills a window of window_length elements with f(n, N) for the symmetric length N (N = length + 1
/// when periodic), after PyTorch's checks and its 0- and 1-element cases.
template <class T, class F>
Tensor<T> make_window(const char* name, int64_t window_length, bool periodic, F f) {
  DL_CHECK(window_length >= 0, name, " requires non-negative window_length, got window_length=", window_length);
  Tensor<T> out = empty<T>({window_length});
  if (window_length == 1) {
    out.data()[0] = T(1);
    return out;
  }
  const int64_t n = periodic ? window_length + 1 : window_length;
  for (int64_t i = 0; i < window_length; ++i) out.data()[i] = f(i, n);
  return out;
}

}  // namespace detail

// The arithmetic follows PyTorch's order of operations in T, so float windows agree to the last
// bit or two.
template <floating_scalar T>
Tensor<T> hamming_window(int64_t window_length, bool periodic, double alpha, double beta) {
  return detail::make_window<T>("hamming_window", window_length, periodic, [=](int64_t i, int64_t n) {
    return std::cos(T(i) * T(2 * std::numbers::pi / double(n - 1))) * T(-beta) + T(alpha);
  });
}

template <floating_scalar T>
Tensor<T> hann_window(int64_t window_length, bool periodic) {
  DL_CHECK(window_length >= 0, "hann_window requires non-negative window_length, got window_length=", window_length);
  return hamming_window<T>(window_length, periodic, 0.5, 0.5);
}

template <floating_scalar T>
Tensor<T> blackman_window(int64_t window_length, bool periodic) {
  return detail::make_window<T>("blackman_window", window_length, periodic, [](int64_t i, int64_t n) {
    const T w = T(i) * T(std::numbers::pi / double(n - 1));
    return std::cos(w * T(4)) * T(0.08) - std::cos(w * T(2)) * T(0.5) + T(0.42);
  });
}

template <floating_scalar T>
Tensor<T> bartlett_window(int64_t window_length, bool periodic) {
  return detail::make_window<T>("bartlett_window", window_length, periodic, [](int64_t i, int64_t n) {
    const T w = T(i) * T(2. / double(n - 1));
    return i < ((n - 1) >> 1) + 1 ? w : T(2) - w;
  });
}

template <floating_scalar T>
Tensor<T> kaiser_window(int64_t window_length, bool periodic, double beta) {
  const double i0_beta = std::cyl_bessel_i(0.0, beta);
  return detail::make_window<T>("kaiser_window", window_length, periodic, [=](int64_t i, int64_t n) {
    const double alpha = double(n - 1) / 2.0, r = (double(i) - alpha) / alpha;
    return T(std::cyl_bessel_i(0.0, beta * std::sqrt(std::abs(1 - r * r))) / i0_beta);
  });
}

}  // namespace dl
