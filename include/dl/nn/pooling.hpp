// dl/nn/pooling.hpp — MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d.
//   nn::MaxPool2d pool(3, {.stride = 2, .padding = 1, .ceil_mode = true});
//   auto [y, idx] = pool.forward_with_indices(x);    // PyTorch's return_indices=True
#pragma once

#include <optional>
#include <string>

#include "../config.hpp"
#include "container.hpp"
#include "functional/pooling.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

/// Options of max pooling; stride defaults to the kernel size.
template <class S>
struct MaxPoolOptions {
  std::optional<S> stride = std::nullopt;
  S padding = 0;
  S dilation = 1;
  bool return_indices = false;  ///< call forward_with_indices for (values, indices)
  bool ceil_mode = false;
};
template <class S>
struct AvgPoolOptions {
  std::optional<S> stride = std::nullopt;
  S padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  ///< 0: the window size
};

namespace detail {
/// Pooling keeps the channel count.
struct ChannelKeeping {
  static constexpr bool keeps_axis(Axis a) { return a == Axis::channel; }
};
/// A pooling size printed as PyTorch prints what was given: an int, or a tuple.
struct PoolSize {
  Size2 v;
  bool scalar;
  PoolSize(int64_t x) : v(x), scalar(true) {}   // NOLINT: implicit on purpose
  PoolSize(Size2 x) : v(x), scalar(false) {}    // NOLINT
  PoolSize(int64_t h, int64_t w) : v(h, w), scalar(false) {}
  std::string str() const {
    return scalar ? std::to_string(v.h) : "(" + std::to_string(v.h) + ", " + std::to_string(v.w) + ")";
  }
};
inline std::string size2_str(Size2 s) {
  return s.h == s.w ? std::to_string(s.h) : "(" + std::to_string(s.h) + ", " + std::to_string(s.w) + ")";
}
}  // namespace detail

/// 2-d max pooling over [N, C, H, W] (or [C, H, W]).
class MaxPool2d : public Module, public detail::ChannelKeeping {
 public:
  explicit MaxPool2d(detail::PoolSize kernel_size, const MaxPoolOptions<Size2>& o = {});
  detail::PoolSize kernel_size;
  Size2 stride, padding, dilation;
  bool return_indices, ceil_mode;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::max_pool2d(x, kernel_size.v, stride, padding, dilation, ceil_mode); }
  template <expression E>
  MaxResult<float> forward_with_indices(const E& x) {
    return functional::max_pool2d_with_indices(x, kernel_size.v, stride, padding, dilation, ceil_mode);
  }
  DL_API std::string extra_repr() const override;
  DL_MODULE(MaxPool2d)
};

/// 1-d max pooling over [N, C, L] (or [C, L]).
class MaxPool1d : public Module, public detail::ChannelKeeping {
 public:
  explicit MaxPool1d(int64_t kernel_size, const MaxPoolOptions<int64_t>& o = {});
  int64_t kernel_size, stride, padding, dilation;
  bool return_indices, ceil_mode;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode); }
  template <expression E>
  MaxResult<float> forward_with_indices(const E& x) {
    return functional::max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode);
  }
  DL_API std::string extra_repr() const override;
  DL_MODULE(MaxPool1d)
};

/// 2-d average pooling.
class AvgPool2d : public Module, public detail::ChannelKeeping {
 public:
  explicit AvgPool2d(detail::PoolSize kernel_size, const AvgPoolOptions<Size2>& o = {});
  detail::PoolSize kernel_size;
  Size2 stride, padding;
  bool ceil_mode, count_include_pad;
  int64_t divisor_override;
  template <expression E>
  Tensor<float> forward(const E& x) {
    return functional::avg_pool2d(x, kernel_size.v, stride, padding, ceil_mode, count_include_pad, divisor_override);
  }
  DL_API std::string extra_repr() const override;
  DL_MODULE(AvgPool2d)
};

/// 1-d average pooling.
class AvgPool1d : public Module, public detail::ChannelKeeping {
 public:
  explicit AvgPool1d(int64_t kernel_size, const AvgPoolOptions<int64_t>& o = {});
  int64_t kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  template <expression E>
  Tensor<float> forward(const E& x) {
    return functional::avg_pool1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad);
  }
  DL_API std::string extra_repr() const override;
  DL_MODULE(AvgPool1d)
};

/// Average pooling to a fixed output size: AdaptiveAvgPool2d({1, 1}) (global), AdaptiveAvgPool2d(7).
class AdaptiveAvgPool2d : public Module, public detail::ChannelKeeping {
 public:
  explicit AdaptiveAvgPool2d(detail::PoolSize output_size) : output_size(output_size) {}
  detail::PoolSize output_size;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::adaptive_avg_pool2d(x, output_size.v); }
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }
  DL_MODULE(AdaptiveAvgPool2d)
};

class AdaptiveMaxPool2d : public Module, public detail::ChannelKeeping {
 public:
  explicit AdaptiveMaxPool2d(detail::PoolSize output_size, bool return_indices = false)
      : output_size(output_size), return_indices(return_indices) {}
  detail::PoolSize output_size;
  bool return_indices;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::adaptive_max_pool2d(x, output_size.v); }
  template <expression E>
  MaxResult<float> forward_with_indices(const E& x) { return functional::adaptive_max_pool2d_with_indices(x, output_size.v); }
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }
  DL_MODULE(AdaptiveMaxPool2d)
};

class AdaptiveAvgPool1d : public Module, public detail::ChannelKeeping {
 public:
  explicit AdaptiveAvgPool1d(int64_t output_size) : output_size(output_size) {}
  int64_t output_size;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::adaptive_avg_pool1d(x, output_size); }
  std::string extra_repr() const override { return "output_size=" + std::to_string(output_size); }
  DL_MODULE(AdaptiveAvgPool1d)
};

class AdaptiveMaxPool1d : public Module, public detail::ChannelKeeping {
 public:
  explicit AdaptiveMaxPool1d(int64_t output_size) : output_size(output_size) {}
  int64_t output_size;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::adaptive_max_pool1d(x, output_size); }
  std::string extra_repr() const override { return "output_size=" + std::to_string(output_size); }
  DL_MODULE(AdaptiveMaxPool1d)
};

// ------------------------------------------------------------------------------ implementation

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "pooling-inl.hpp"
#endif
