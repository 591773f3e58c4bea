// dl/nn/functional/pixel_shuffle.hpp — F::pixel_shuffle and F::pixel_unshuffle (PyTorch's
// F.pixel_shuffle / F.pixel_unshuffle): channels moved into space and back, the sub-pixel
// convolution's upsampling. A reshape, a permutation and a reshape: differentiable to any order.
#pragma once

#include <cstdint>

#include "../../error.hpp"
#include "../../ops/reduce.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

namespace detail {
/// The sizes both rearrangements read: the leading dims flattened into `batch`, then C, H, W.
/// Checks PyTorch's "at least 3 dimensions" and "positive factor" conditions, naming `op`.
struct PixelSizes {
  int64_t batch, c, h, w;
};
inline PixelSizes pixel_sizes(const char* op, const char* factor_name, const Shape& s, int64_t factor) {
  const int nd = s.size();
  DL_CHECK(nd >= 3, op, " expects input to have at least 3 dimensions, but got input with ", nd, " dimension(s)");
  DL_CHECK(factor > 0, op, " expects a positive ", factor_name, ", but got ", factor);
  int64_t batch = 1;
  for (int d = 0; d < nd - 3; ++d) batch *= s[d];
  return {batch, s[nd - 3], s[nd - 2], s[nd - 1]};
}
/// s with its last three dims replaced by (c, h, w).
inline Shape with_chw(Shape s, int64_t c, int64_t h, int64_t w) {
  const int nd = s.size();
  s[nd - 3] = c;
  s[nd - 2] = h;
  s[nd - 1] = w;
  return s;
}
}  // namespace detail

/// [*, C * r^2, H, W] -> [*, C, H * r, W * r] with r = upscale_factor: output channel c at
/// (h * r + i, w * r + j) is input channel c * r^2 + i * r + j at (h, w).
/// Errors (PyTorch's): fewer than 3 dims, r <= 0, C * r^2 not divisible by r^2.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> pixel_shuffle(const E& input, int64_t upscale_factor) {
  const Tensor<T> x = dl::detail::materialize(input);
  const auto [batch, c, h, w] = detail::pixel_sizes("pixel_shuffle", "upscale_factor", x.shape(), upscale_factor);
  const int64_t r = upscale_factor;
  DL_CHECK(c % (r * r) == 0,
           "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
           "but input.size(-3)=", c, " is not divisible by ", r * r);
  return x.reshape({batch, c / (r * r), r, r, h, w})
      .permute({0, 1, 4, 2, 5, 3})
      .reshape(detail::with_chw(x.shape(), c / (r * r), h * r, w * r));
}

/// The inverse of pixel_shuffle: [*, C, H * r, W * r] -> [*, C * r^2, H, W] with r =
/// downscale_factor. Errors (PyTorch's): fewer than 3 dims, r <= 0, height or width not divisible
/// by r.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> pixel_unshuffle(const E& input, int64_t downscale_factor) {
  const Tensor<T> x = dl::detail::materialize(input);
  const auto [batch, c, h, w] = detail::pixel_sizes("pixel_unshuffle", "downscale_factor", x.shape(), downscale_factor);
  const int64_t r = downscale_factor;
  DL_CHECK(h % r == 0, "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=", h,
           " is not divisible by ", r);
  DL_CHECK(w % r == 0, "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=", w,
           " is not divisible by ", r);
  return x.reshape({batch, c, h / r, r, w / r, r})
      .permute({0, 1, 3, 5, 2, 4})
      .reshape(detail::with_chw(x.shape(), c * r * r, h / r, w / r));
}

}  // namespace dl::nn::functional
