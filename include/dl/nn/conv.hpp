// dl/nn/conv.hpp — Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d. Channel counts
// follow std::span's convention: nn::Conv2d<1, 6> conv1{5} knows its channels when compiled,
// nn::Conv2d(1, 6, 5, {.stride = 1, .padding = 2, .bias = false}) at run time.
#pragma once

#include <string>

#include "../config.hpp"
#include "container.hpp"
#include "functional/conv.hpp"
#include "functional/padding.hpp"
#include "init.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

/// Options of ConvNd (S: int64_t, Size2 or Size3; one int means the same value in every dim).
/// padding_mode: "zeros", "reflect", "replicate" or "circular".
template <class S>
struct ConvOptions {
  S stride = 1;
  S padding = 0;
  S dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  std::string padding_mode = "zeros";
};
/// Options of ConvTransposeNd, in PyTorch's argument order.
template <class S>
struct ConvTransposeOptions {
  S stride = 1;
  S padding = 0;
  S output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  S dilation = 1;
  std::string padding_mode = "zeros";
};
using Conv1dOptions = ConvOptions<int64_t>;
using Conv2dOptions = ConvOptions<Size2>;
using Conv3dOptions = ConvOptions<Size3>;
using ConvTranspose1dOptions = ConvTransposeOptions<int64_t>;
using ConvTranspose2dOptions = ConvTransposeOptions<Size2>;

namespace detail {

/// What every convolution module holds: its hyper-parameters (as D-long lists), weight and bias.
template <int D, bool Transposed>
class ConvBase : public Module {
 public:
  static constexpr detail::Axis feature_axis = detail::Axis::channel;
  Tensor<float> weight, bias;
  int64_t in_channels, out_channels, groups;
  Dims kernel_size, stride, padding, dilation, output_padding;
  std::string padding_mode;

  /// PyTorch's default: kaiming_uniform_(weight, a = sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters();
  int64_t input_size() const { return in_channels; }
  int64_t output_size() const { return out_channels; }
  DL_API std::string extra_repr() const override;

 protected:
  ConvBase(int64_t in, int64_t out, Dims kernel, Dims stride, Dims padding, Dims dilation, Dims output_padding, int64_t groups,
           bool bias, std::string padding_mode);
  /// x padded by padding_mode when it is not "zeros" (the convolution then pads nothing).
  Tensor<float> pad_input(const Tensor<float>& x) const;
  bool zero_padding() const { return padding_mode == "zeros"; }
};

template <class S>
Dims dims_of(const S& s);

}  // namespace detail

#define DL_CONV_LAYER(Name, D, Transposed, Size, OptionsT, Call)                                                    \
  template <int64_t In = dynamic, int64_t Out = dynamic>                                                            \
  class Name;                                                                                                       \
  template <>                                                                                                       \
  class Name<dynamic, dynamic> : public detail::ConvBase<D, Transposed> {                                           \
   public:                                                                                                          \
    static constexpr int64_t static_in_features = dynamic, static_out_features = dynamic;                           \
    using Options = OptionsT;                                                                                       \
    Name(int64_t in_channels, int64_t out_channels, Size kernel_size, const Options& o = {});                        \
    template <expression E>                                                                                         \
    Tensor<float> forward(const E& input) {                                                                         \
      const Tensor<float> x = this->pad_input(Tensor<float>(input));                                                \
      return Call;                                                                                                  \
    }                                                                                                               \
    DL_MODULE(Name, weight, bias)                                                                                   \
  };                                                                                                                \
  template <int64_t In, int64_t Out>                                                                                \
  class Name : public Name<> {                                                                                      \
    static_assert(In > 0 && Out > 0, "nn::" #Name "<In, Out>: channel counts must be positive (nn::" #Name           \
                                     "<> for run-time counts)");                                                   \
                                                                                                                    \
   public:                                                                                                          \
    static constexpr int64_t static_in_features = In, static_out_features = Out;                                    \
    explicit Name(Size kernel_size, const Options& o = {}) : Name<>(In, Out, kernel_size, o) {}                     \
  };                                                                                                                \
  Name(int64_t, int64_t, Size)->Name<>;                                                                             \
  Name(int64_t, int64_t, Size, const OptionsT&)->Name<>;

/// 1-d convolution over [N, C, L] (or [C, L]).
DL_CONV_LAYER(Conv1d, 1, false, int64_t, Conv1dOptions,
              functional::conv1d(x, weight, bias, stride[0], zero_padding() ? padding[0] : 0, dilation[0], groups))
/// 2-d convolution over [N, C, H, W] (or [C, H, W]).
DL_CONV_LAYER(Conv2d, 2, false, Size2, Conv2dOptions,
              functional::conv2d(x, weight, bias, Size2(stride[0], stride[1]),
                                 zero_padding() ? Size2(padding[0], padding[1]) : Size2(0), Size2(dilation[0], dilation[1]), groups))
/// 3-d convolution over [N, C, D, H, W] (or [C, D, H, W]).
DL_CONV_LAYER(Conv3d, 3, false, Size3, Conv3dOptions,
              functional::conv3d(x, weight, bias, Size3(stride[0], stride[1], stride[2]),
                                 zero_padding() ? Size3(padding[0], padding[1], padding[2]) : Size3(0),
                                 Size3(dilation[0], dilation[1], dilation[2]), groups))
/// Transposed 1-d convolution (the gradient of conv1d with respect to its input).
DL_CONV_LAYER(ConvTranspose1d, 1, true, int64_t, ConvTranspose1dOptions,
              functional::conv_transpose1d(x, weight, bias, stride[0], padding[0], output_padding[0], groups, dilation[0]))
/// Transposed 2-d convolution.
DL_CONV_LAYER(ConvTranspose2d, 2, true, Size2, ConvTranspose2dOptions,
              functional::conv_transpose2d(x, weight, bias, Size2(stride[0], stride[1]), Size2(padding[0], padding[1]),
                                           Size2(output_padding[0], output_padding[1]), groups, Size2(dilation[0], dilation[1])))
#undef DL_CONV_LAYER

// ------------------------------------------------------------------------------ implementation

namespace detail {

template <class S>
Dims dims_of(const S& s) {
  if constexpr (std::is_integral_v<S>) return Dims{int64_t(s)};
  else if constexpr (std::is_same_v<S, Size2>) return Dims{s.h, s.w};
  else return Dims{s.d, s.h, s.w};
}

template <int D, bool Transposed>
ConvBase<D, Transposed>::ConvBase(int64_t in, int64_t out, Dims kernel, Dims stride_, Dims padding_, Dims dilation_,
                                  Dims output_padding_, int64_t groups_, bool bias_, std::string padding_mode_)
    : in_channels(in),
      out_channels(out),
      groups(groups_),
      kernel_size(kernel),
      stride(stride_),
      padding(padding_),
      dilation(dilation_),
      output_padding(output_padding_),
      padding_mode(std::move(padding_mode_)) {
  DL_CHECK(groups > 0, "groups must be a positive integer, got ", groups);
  DL_CHECK(in > 0 && out > 0, "in_channels and out_channels must be positive, got ", in, " and ", out);
  DL_CHECK(in % groups == 0, "in_channels must be divisible by groups (in_channels ", in, ", groups ", groups, ")");
  DL_CHECK(out % groups == 0, "out_channels must be divisible by groups (out_channels ", out, ", groups ", groups, ")");
  for (int d = 0; d < D; ++d) {
    DL_CHECK(kernel_size[d] > 0, "kernel_size must be positive, got ", kernel_size);
    DL_CHECK(stride[d] > 0, "stride must be positive, got ", stride);
    DL_CHECK(padding[d] >= 0, "padding must be non-negative, got ", padding);
    DL_CHECK(dilation[d] > 0, "dilation must be positive, got ", dilation);
  }
  DL_CHECK(padding_mode == "zeros" || padding_mode == "reflect" || padding_mode == "replicate" || padding_mode == "circular",
           "padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got padding_mode='", padding_mode, "'");
  DL_CHECK(!Transposed || padding_mode == "zeros", "Only \"zeros\" padding mode is supported for transposed convolutions");
  Shape ws = Transposed ? Shape{in, out / groups} : Shape{out, in / groups};
  for (int d = 0; d < D; ++d) ws.push_back(kernel_size[d]);
  weight = empty<float>(ws).requires_grad_();
  if (bias_) bias = empty<float>({out}).requires_grad_();
  reset_parameters();
}

template <int D, bool Transposed>
void ConvBase<D, Transposed>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight.shape()).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <int D, bool Transposed>
Tensor<float> ConvBase<D, Transposed>::pad_input(const Tensor<float>& x) const {
  if (zero_padding()) return x;
  // PyTorch's _reversed_padding_repeated_twice: (last dim left, right, ..., first dim left, right).
  std::vector<int64_t> pads;
  for (int d = D - 1; d >= 0; --d) pads.insert(pads.end(), {padding[d], padding[d]});
  return functional::pad(x, pads, padding_mode);
}

template <int D, bool Transposed>
std::string ConvBase<D, Transposed>::extra_repr() const {
  auto tuple = [](const Dims& d) {
    std::string s = "(";
    for (int i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + (d.size() == 1 ? ",)" : ")");
  };
  auto all = [](const Dims& d, int64_t v) { return std::all_of(d.begin(), d.end(), [v](int64_t x) { return x == v; }); };
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) + ", kernel_size=" + tuple(kernel_size) +
                  ", stride=" + tuple(stride);
  if (!all(padding, 0)) s += ", padding=" + tuple(padding);
  if (!all(dilation, 1)) s += ", dilation=" + tuple(dilation);
  if (!all(output_padding, 0)) s += ", output_padding=" + tuple(output_padding);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias.defined()) s += ", bias=False";
  if (padding_mode != "zeros") s += ", padding_mode=" + padding_mode;
  return s;
}

}  // namespace detail

inline Conv1d<>::Conv1d(int64_t in, int64_t out, int64_t k, const Options& o)
    : ConvBase(in, out, {k}, {o.stride}, {o.padding}, {o.dilation}, {0}, o.groups, o.bias, o.padding_mode) {}
inline Conv2d<>::Conv2d(int64_t in, int64_t out, Size2 k, const Options& o)
    : ConvBase(in, out, detail::dims_of(k), detail::dims_of(o.stride), detail::dims_of(o.padding), detail::dims_of(o.dilation),
               {0, 0}, o.groups, o.bias, o.padding_mode) {}
inline Conv3d<>::Conv3d(int64_t in, int64_t out, Size3 k, const Options& o)
    : ConvBase(in, out, detail::dims_of(k), detail::dims_of(o.stride), detail::dims_of(o.padding), detail::dims_of(o.dilation),
               {0, 0, 0}, o.groups, o.bias, o.padding_mode) {}
inline ConvTranspose1d<>::ConvTranspose1d(int64_t in, int64_t out, int64_t k, const Options& o)
    : ConvBase(in, out, {k}, {o.stride}, {o.padding}, {o.dilation}, {o.output_padding}, o.groups, o.bias, o.padding_mode) {}
inline ConvTranspose2d<>::ConvTranspose2d(int64_t in, int64_t out, Size2 k, const Options& o)
    : ConvBase(in, out, detail::dims_of(k), detail::dims_of(o.stride), detail::dims_of(o.padding), detail::dims_of(o.dilation),
               detail::dims_of(o.output_padding), o.groups, o.bias, o.padding_mode) {}

}  // namespace dl::nn

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, class dl::nn::detail::ConvBase<2, false>)
