// dl/nn/pixel_shuffle.hpp — PixelShuffle and PixelUnshuffle (torch.nn.PixelShuffle /
// PixelUnshuffle): the modules of F::pixel_shuffle and F::pixel_unshuffle, for sub-pixel
// upsampling after a convolution with r^2 times the channels.
#pragma once

#include <string>

#include "container.hpp"
#include "functional/pixel_shuffle.hpp"

namespace dl::nn {

/// [*, C * r^2, H, W] -> [*, C, H * r, W * r]: PixelShuffle(3) after a Conv2d(64, 3 * 9, 3).
class PixelShuffle : public Module {
 public:
  explicit PixelShuffle(int64_t upscale_factor) : upscale_factor(upscale_factor) {
    DL_CHECK(upscale_factor > 0, "PixelShuffle: upscale_factor must be positive, got ", upscale_factor);
  }
  int64_t upscale_factor;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::pixel_shuffle(x, upscale_factor); }
  std::string extra_repr() const override { return "upscale_factor=" + std::to_string(upscale_factor); }
  DL_MODULE(PixelShuffle)
};

/// [*, C, H * r, W * r] -> [*, C * r^2, H, W], the inverse of PixelShuffle(r).
class PixelUnshuffle : public Module {
 public:
  explicit PixelUnshuffle(int64_t downscale_factor) : downscale_factor(downscale_factor) {
    DL_CHECK(downscale_factor > 0, "PixelUnshuffle: downscale_factor must be positive, got ", downscale_factor);
  }
  int64_t downscale_factor;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::pixel_unshuffle(x, downscale_factor); }
  std::string extra_repr() const override { return "downscale_factor=" + std::to_string(downscale_factor); }
  DL_MODULE(PixelUnshuffle)
};

}  // namespace dl::nn
