// dl/nn/pixel_shuffle.hpp — PixelShuffle and PixelUnshuffle (torch.nn.PixelShuffle /
// PixelUnshuffle): the modules of F::pixel_shuffle and F::pixel_unshuffle, for sub-pixel
// upsampling after a convolution with r^2 times the channels.
#pragma once

#include <string>

#include "container.hpp"
#include "functional/pixel_shuffle.hpp"

namespace dl::nn {

#define DL_PIXEL_SHUFFLE_LAYER(Name, factor, fn)                                                    \
  class Name : public Module {                                                                      \
   public:                                                                                          \
    explicit Name(int64_t factor) : factor(factor) {                                                \
      DL_CHECK(factor > 0, #Name ": " #factor " must be positive, got ", factor);                   \
    }                                                                                               \
    int64_t factor;                                                                                 \
    template <expression E>                                                                         \
    Tensor<float> forward(const E& x) { return functional::fn(x, factor); }                         \
    std::string extra_repr() const override { return #factor "=" + std::to_string(factor); }        \
    DL_MODULE(Name)                                                                                 \
  };
/// [*, C * r^2, H, W] -> [*, C, H * r, W * r]: PixelShuffle(3) after a Conv2d(64, 3 * 9, 3).
DL_PIXEL_SHUFFLE_LAYER(PixelShuffle, upscale_factor, pixel_shuffle)
/// [*, C, H * r, W * r] -> [*, C * r^2, H, W], the inverse of PixelShuffle(r).
DL_PIXEL_SHUFFLE_LAYER(PixelUnshuffle, downscale_factor, pixel_unshuffle)
#undef DL_PIXEL_SHUFFLE_LAYER

}  // namespace dl::nn
