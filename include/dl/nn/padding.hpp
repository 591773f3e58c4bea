// dl/nn/padding.hpp — ZeroPad2d, ConstantPad1d/2d, ReflectionPad1d/2d, ReplicationPad1d/2d:
// padding of the last dims, given as one size for every side or as (left, right[, top, bottom]).
#pragma once

#include <string>
#include <vector>

#include "../config.hpp"
#include "container.hpp"
#include "functional/padding.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

namespace detail {
/// What the padding modules share: the pad list (PyTorch's order: last dim first), mode and value.
class PadBase : public Module {
 public:
  static constexpr bool keeps_axis(Axis a) { return a == Axis::channel; }
  std::vector<int64_t> padding;
  std::string mode;
  double value = 0;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::pad(Tensor<float>(x), padding, mode, value); }
  DL_API std::string extra_repr() const override;

 protected:
  PadBase(std::vector<int64_t> padding, size_t dims, std::string mode, double value, bool show_value);
  bool show_value_;
};
}  // namespace detail

#define DL_PAD_LAYER(Name, Dims, Mode, ShowValue, ValueParam, ValueArg)                                         \
  class Name : public detail::PadBase {                                                                         \
   public:                                                                                                      \
    explicit Name(int64_t padding ValueParam) : PadBase(std::vector<int64_t>(2 * Dims, padding), 2 * Dims, Mode, ValueArg, ShowValue) {} \
    explicit Name(std::vector<int64_t> padding ValueParam) : PadBase(std::move(padding), 2 * Dims, Mode, ValueArg, ShowValue) {}  \
    DL_MODULE(Name)                                                                                             \
  };
#define DL_COMMA ,
/// Zeros around the last two dims: ZeroPad2d(1) or ZeroPad2d({left, right, top, bottom}).
DL_PAD_LAYER(ZeroPad2d, 2, "constant", false, , 0.0)
DL_PAD_LAYER(ConstantPad1d, 1, "constant", true, DL_COMMA double value, value)
DL_PAD_LAYER(ConstantPad2d, 2, "constant", true, DL_COMMA double value, value)
DL_PAD_LAYER(ReflectionPad1d, 1, "reflect", false, , 0.0)
DL_PAD_LAYER(ReflectionPad2d, 2, "reflect", false, , 0.0)
DL_PAD_LAYER(ReplicationPad1d, 1, "replicate", false, , 0.0)
DL_PAD_LAYER(ReplicationPad2d, 2, "replicate", false, , 0.0)
#undef DL_COMMA
#undef DL_PAD_LAYER

// ------------------------------------------------------------------------------ implementation

namespace detail {

}  // namespace detail

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "padding-inl.hpp"
#endif
