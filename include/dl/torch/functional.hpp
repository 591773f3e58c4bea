// dl/torch/functional.hpp — libtorch's torch::nn::functional with its option classes, over dl's
// functions (see dl/torch.hpp):
//
//   namespace F = torch::nn::functional;
//   x = F::relu(F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1)));
//   x = F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training()));
//   auto loss = F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().label_smoothing(0.1));
//
// Each `XFuncOptions` has libtorch's chainable setters; where libtorch makes the functional options
// the module's (`MSELossFuncOptions` is `MSELossOptions`), so does this header, and the layers in
// dl/torch/layers.hpp take the same classes. Reductions are torch::kMean / kSum / kNone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core.hpp"
#include "nn.hpp"

namespace torch::nn {

// ------------------------------------------------------------------------------ options

struct GELUOptions {
  TORCH_ARG(std::string, approximate) = "none";
};
struct ELUOptions {
  TORCH_ARG(double, alpha) = 1.0;
  TORCH_ARG(bool, inplace) = false;
};
struct CELUOptions {
  TORCH_ARG(double, alpha) = 1.0;
  TORCH_ARG(bool, inplace) = false;
};
struct SELUOptions {
  SELUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  TORCH_ARG(bool, inplace);
};
using ReLU6Options = SELUOptions;
struct SoftplusOptions {
  TORCH_ARG(double, beta) = 1.0;
  TORCH_ARG(double, threshold) = 20.0;
};
struct HardtanhOptions {
  TORCH_ARG(double, min_val) = -1.0;
  TORCH_ARG(double, max_val) = 1.0;
  TORCH_ARG(bool, inplace) = false;
};
struct PReLUOptions {
  TORCH_ARG(int64_t, num_parameters) = 1;
  TORCH_ARG(double, init) = 0.25;
};

/// The adaptive poolings' options (libtorch's AdaptiveAvgPoolOptions and AdaptiveMaxPoolOptions
/// hold the same field).
template <size_t D>
struct AdaptivePoolOptions {
  AdaptivePoolOptions(ExpandingArray<D> output_size) : output_size_(output_size) {}  // NOLINT
  TORCH_ARG(ExpandingArray<D>, output_size);
};
template <size_t D>
using AdaptiveAvgPoolOptions = AdaptivePoolOptions<D>;
template <size_t D>
using AdaptiveMaxPoolOptions = AdaptivePoolOptions<D>;
using AdaptiveAvgPool1dOptions = AdaptiveAvgPoolOptions<1>;
using AdaptiveAvgPool2dOptions = AdaptiveAvgPoolOptions<2>;
using AdaptiveMaxPool1dOptions = AdaptiveMaxPoolOptions<1>;
using AdaptiveMaxPool2dOptions = AdaptiveMaxPoolOptions<2>;
using MaxPool1dOptions = MaxPoolOptions<1>;
using AvgPool1dOptions = AvgPoolOptions<1>;

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim) : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  TORCH_ARG(int64_t, num_embeddings);
  TORCH_ARG(int64_t, embedding_dim);
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.0;
  TORCH_ARG(bool, scale_grad_by_freq) = false;
  TORCH_ARG(bool, sparse) = false;
  TORCH_ARG(Tensor, _weight) = Tensor();

 public:
  dl::nn::EmbeddingOptions dl() const { return {padding_idx_, max_norm_, norm_type_, scale_grad_by_freq_, sparse_}; }
};
struct EmbeddingFromPretrainedOptions {
  TORCH_ARG(bool, freeze) = true;
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.0;
  TORCH_ARG(bool, scale_grad_by_freq) = false;
  TORCH_ARG(bool, sparse) = false;

 public:
  dl::nn::EmbeddingOptions dl() const { return {padding_idx_, max_norm_, norm_type_, scale_grad_by_freq_, sparse_}; }
};

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  TORCH_ARG(std::vector<int64_t>, normalized_shape);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, elementwise_affine) = true;
};
struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  TORCH_ARG(int64_t, num_groups);
  TORCH_ARG(int64_t, num_channels);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, affine) = true;
};

/// The losses' options; `MSELossOptions(torch::kSum)` takes the reduction directly, as libtorch's.
#define DL_TORCH_REDUCTION_ONLY_LOSS(Options)                                         \
  struct Options {                                                                    \
    Options(enumtype::Name reduction = kMean) : reduction_(reduction) {} /* NOLINT */ \
    TORCH_ARG(enumtype::Name, reduction);                                             \
  };
DL_TORCH_REDUCTION_ONLY_LOSS(MSELossOptions)
DL_TORCH_REDUCTION_ONLY_LOSS(L1LossOptions)
#undef DL_TORCH_REDUCTION_ONLY_LOSS
struct CrossEntropyLossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(int64_t, ignore_index) = -100;
  TORCH_ARG(enumtype::Name, reduction) = kMean;
  TORCH_ARG(double, label_smoothing) = 0.0;
};
struct NLLLossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(int64_t, ignore_index) = -100;
  TORCH_ARG(enumtype::Name, reduction) = kMean;
};
struct BCELossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(enumtype::Name, reduction) = kMean;
};
struct BCEWithLogitsLossOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(enumtype::Name, reduction) = kMean;
  TORCH_ARG(Tensor, pos_weight) = {};
};
struct SmoothL1LossOptions {
  SmoothL1LossOptions(enumtype::Name reduction = kMean) : reduction_(reduction) {}  // NOLINT
  TORCH_ARG(enumtype::Name, reduction);
  TORCH_ARG(std::optional<double>, beta) = std::nullopt;
};
struct HuberLossOptions {
  HuberLossOptions(enumtype::Name reduction = kMean) : reduction_(reduction) {}  // NOLINT
  TORCH_ARG(enumtype::Name, reduction);
  TORCH_ARG(double, delta) = 1.0;
};
struct KLDivLossOptions {
  KLDivLossOptions(enumtype::Name reduction = kMean) : reduction_(reduction) {}  // NOLINT
  TORCH_ARG(enumtype::Name, reduction);
  TORCH_ARG(bool, log_target) = false;
};
struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}  // NOLINT
  TORCH_ARG(int64_t, upscale_factor);
};
struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}  // NOLINT
  TORCH_ARG(int64_t, downscale_factor);
};
/// torch::nn::UpsampleOptions: one of size and scale_factor (one value per spatial dim), mode
/// torch::kNearest (default), kLinear, kBilinear, kBicubic or kTrilinear.
struct UpsampleOptions {
  TORCH_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  TORCH_ARG(enumtype::Name, mode) = kNearest;
  TORCH_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

/// torch::nn::UnfoldOptions(kernel_size).dilation(..).padding(..).stride(..).
struct UnfoldOptions {
  UnfoldOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  TORCH_ARG(ExpandingArray<2>, kernel_size);
  TORCH_ARG(ExpandingArray<2>, dilation) = 1;
  TORCH_ARG(ExpandingArray<2>, padding) = 0;
  TORCH_ARG(ExpandingArray<2>, stride) = 1;
};
/// torch::nn::FoldOptions(output_size, kernel_size).dilation(..).padding(..).stride(..).
struct FoldOptions {
  FoldOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size) : output_size_(output_size), kernel_size_(kernel_size) {}
  TORCH_ARG(ExpandingArray<2>, output_size);
  TORCH_ARG(ExpandingArray<2>, kernel_size);
  TORCH_ARG(ExpandingArray<2>, dilation) = 1;
  TORCH_ARG(ExpandingArray<2>, padding) = 0;
  TORCH_ARG(ExpandingArray<2>, stride) = 1;
};

namespace functional {

// Options only the functions take.
using ReLUFuncOptions = ReLUOptions;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using GELUFuncOptions = GELUOptions;
using ELUFuncOptions = ELUOptions;
using CELUFuncOptions = CELUOptions;
using SELUFuncOptions = SELUOptions;
using ReLU6FuncOptions = ReLU6Options;
using SoftplusFuncOptions = SoftplusOptions;
using HardtanhFuncOptions = HardtanhOptions;
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  TORCH_ARG(int64_t, dim);
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
struct DropoutFuncOptions {
  TORCH_ARG(double, p) = 0.5;
  TORCH_ARG(bool, training) = true;
  TORCH_ARG(bool, inplace) = false;
};
using Dropout1dFuncOptions = DropoutFuncOptions;
using Dropout2dFuncOptions = DropoutFuncOptions;
using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;
using UnfoldFuncOptions = UnfoldOptions;
using FoldFuncOptions = FoldOptions;
/// F::interpolate's options (torch::nn::functional::InterpolateFuncOptions); mode also takes
/// torch::kArea and torch::kNearestExact.
struct InterpolateFuncOptions {
  TORCH_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  TORCH_ARG(enumtype::Name, mode) = kNearest;
  TORCH_ARG(std::optional<bool>, align_corners) = std::nullopt;
  TORCH_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  TORCH_ARG(bool, antialias) = false;
};

template <size_t D>
struct ConvFuncOptions {
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
};
template <size_t D>
struct ConvTransposeFuncOptions {
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, output_padding) = 0;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;

using MaxPool1dFuncOptions = MaxPool1dOptions;
using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;

struct BatchNormFuncOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(bool, training) = false;
  TORCH_ARG(std::optional<double>, momentum) = 0.1;
  TORCH_ARG(double, eps) = 1e-5;
};
struct InstanceNormFuncOptions {
  TORCH_ARG(Tensor, running_mean) = {};
  TORCH_ARG(Tensor, running_var) = {};
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(bool, use_input_stats) = true;
  TORCH_ARG(double, momentum) = 0.1;
  TORCH_ARG(double, eps) = 1e-5;
};
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  TORCH_ARG(std::vector<int64_t>, normalized_shape);
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(double, eps) = 1e-5;
};
struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  TORCH_ARG(int64_t, num_groups);
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(double, eps) = 1e-5;
};
struct NormalizeFuncOptions {
  TORCH_ARG(double, p) = 2.0;
  TORCH_ARG(int64_t, dim) = 1;
  TORCH_ARG(double, eps) = 1e-12;
};
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}  // NOLINT
  TORCH_ARG(std::vector<int64_t>, pad);
  TORCH_ARG(enumtype::Name, mode) = kConstant;
  TORCH_ARG(double, value) = 0;
};
struct EmbeddingFuncOptions {
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.0;
  TORCH_ARG(bool, scale_grad_by_freq) = false;
  TORCH_ARG(bool, sparse) = false;
};

using MSELossFuncOptions = MSELossOptions;
using L1LossFuncOptions = L1LossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using KLDivFuncOptions = KLDivLossOptions;

// ------------------------------------------------------------------------------ functions

namespace detail {
/// The inplace option: the result is written into the input (which must be a tensor that may be
/// written: not a leaf that requires grad), as libtorch's relu_ and friends.
inline Tensor maybe_inplace(Tensor input, const Tensor& result, bool inplace) {
  if (!inplace) return result;
  input.copy_(result);
  return input;
}
}  // namespace detail

inline Tensor relu(Tensor input, const ReLUFuncOptions& options = {}) {
  return detail::maybe_inplace(input, Tensor(dl::relu(input)), options.inplace());
}
inline Tensor leaky_relu(Tensor input, const LeakyReLUFuncOptions& options = {}) {
  return detail::maybe_inplace(input, Tensor(dl::nn::functional::leaky_relu(input, options.negative_slope())), options.inplace());
}
inline Tensor gelu(const Tensor& input, const GELUFuncOptions& options = {}) {
  return Tensor(dl::nn::functional::gelu(input, options.approximate()));
}
inline Tensor elu(Tensor input, const ELUFuncOptions& options = {}) {
  return detail::maybe_inplace(input, Tensor(dl::nn::functional::elu(input, options.alpha())), options.inplace());
}
inline Tensor celu(Tensor input, const CELUFuncOptions& options = {}) {
  return detail::maybe_inplace(input, Tensor(dl::nn::functional::celu(input, options.alpha())), options.inplace());
}
inline Tensor selu(Tensor input, const SELUFuncOptions& options = {}) {
  return detail::maybe_inplace(input, Tensor(dl::nn::functional::selu(input)), options.inplace());
}
inline Tensor relu6(Tensor input, const ReLU6FuncOptions& options = {}) {
  return detail::maybe_inplace(input, Tensor(dl::nn::functional::relu6(input)), options.inplace());
}
inline Tensor silu(const Tensor& input) { return Tensor(dl::nn::functional::silu(input)); }
inline Tensor mish(const Tensor& input) { return Tensor(dl::nn::functional::mish(input)); }
inline Tensor logsigmoid(const Tensor& input) { return Tensor(dl::nn::functional::logsigmoid(input)); }
inline Tensor softsign(const Tensor& input) { return Tensor(dl::nn::functional::softsign(input)); }
inline Tensor hardswish(const Tensor& input) { return Tensor(dl::nn::functional::hardswish(input)); }
inline Tensor hardsigmoid(const Tensor& input) { return Tensor(dl::nn::functional::hardsigmoid(input)); }
inline Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options = {}) {
  return Tensor(dl::nn::functional::softplus(input, options.beta(), options.threshold()));
}
inline Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options = {}) {
  return detail::maybe_inplace(input, Tensor(dl::nn::functional::hardtanh(input, options.min_val(), options.max_val())),
                               options.inplace());
}
inline Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options) {
  return dl::nn::functional::softmax(input, options.dim());
}
inline Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options) {
  return dl::nn::functional::log_softmax(input, options.dim());
}

inline Tensor dropout(Tensor input, const DropoutFuncOptions& options = {}) {
  return detail::maybe_inplace(input, dl::nn::functional::dropout(input, options.p(), options.training()), options.inplace());
}
inline Tensor dropout1d(Tensor input, const Dropout1dFuncOptions& options = {}) {
  return detail::maybe_inplace(input, dl::nn::functional::dropout1d(input, options.p(), options.training()), options.inplace());
}
inline Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options = {}) {
  return detail::maybe_inplace(input, dl::nn::functional::dropout2d(input, options.p(), options.training()), options.inplace());
}

inline Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {}) {
  return dl::nn::functional::linear(input, weight, bias);
}
inline Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& o = {}) {
  return dl::nn::functional::conv1d(input, weight, o.bias(), o.stride().dl(), o.padding().dl(), o.dilation().dl(), o.groups());
}
inline Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& o = {}) {
  return dl::nn::functional::conv2d(input, weight, o.bias(), o.stride().dl(), o.padding().dl(), o.dilation().dl(), o.groups());
}
inline Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& o = {}) {
  return dl::nn::functional::conv3d(input, weight, o.bias(), o.stride().dl(), o.padding().dl(), o.dilation().dl(), o.groups());
}
inline Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& o = {}) {
  return dl::nn::functional::conv_transpose1d(input, weight, o.bias(), o.stride().dl(), o.padding().dl(), o.output_padding().dl(),
                                              o.groups(), o.dilation().dl());
}
inline Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& o = {}) {
  return dl::nn::functional::conv_transpose2d(input, weight, o.bias(), o.stride().dl(), o.padding().dl(), o.output_padding().dl(),
                                              o.groups(), o.dilation().dl());
}

inline Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& o) {
  return dl::nn::functional::max_pool1d(input, o.kernel_size().dl(), o.stride().dl(), o.padding().dl(), o.dilation().dl(),
                                        o.ceil_mode());
}
inline Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& o) {
  return dl::nn::functional::max_pool2d(input, o.kernel_size().dl(), o.stride().dl(), o.padding().dl(), o.dilation().dl(),
                                        o.ceil_mode());
}
inline Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& o) {
  return dl::nn::functional::avg_pool1d(input, o.kernel_size().dl(), o.stride().dl(), o.padding().dl(), o.ceil_mode(),
                                        o.count_include_pad());
}
inline Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& o) {
  return dl::nn::functional::avg_pool2d(input, o.kernel_size().dl(), o.stride().dl(), o.padding().dl(), o.ceil_mode(),
                                        o.count_include_pad(), o.divisor_override().value_or(0));
}
inline Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& o) {
  return dl::nn::functional::adaptive_avg_pool1d(input, o.output_size().dl());
}
inline Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& o) {
  return dl::nn::functional::adaptive_avg_pool2d(input, o.output_size().dl());
}
inline Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o) {
  return dl::nn::functional::adaptive_max_pool1d(input, o.output_size().dl());
}
inline Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o) {
  return dl::nn::functional::adaptive_max_pool2d(input, o.output_size().dl());
}

inline Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                         const BatchNormFuncOptions& o = {}) {
  return dl::nn::functional::batch_norm(input, running_mean, running_var, o.weight(), o.bias(), o.training(),
                                        o.momentum().value_or(0.1), o.eps());
}
inline Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& o = {}) {
  return dl::nn::functional::instance_norm(input, o.running_mean(), o.running_var(), o.weight(), o.bias(), o.use_input_stats(),
                                           o.momentum(), o.eps());
}
inline Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o) {
  return dl::nn::functional::layer_norm(input, dl::Shape(o.normalized_shape()), o.weight(), o.bias(), o.eps());
}
inline Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o) {
  return dl::nn::functional::group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps());
}
inline Tensor normalize(const Tensor& input, NormalizeFuncOptions o = {}) {
  return dl::nn::functional::normalize(input, o.p(), o.dim(), o.eps());
}
inline Tensor pad(const Tensor& input, const PadFuncOptions& o) {
  return dl::nn::functional::pad(input, o.pad(), o.mode().name, o.value());
}
inline Tensor embedding(const dl::Tensor<int64_t>& input, const Tensor& weight, const EmbeddingFuncOptions& o = {}) {
  return dl::nn::functional::embedding(input, weight, o.padding_idx(), o.max_norm(), o.norm_type(), o.scale_grad_by_freq(),
                                       o.sparse());
}
inline Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& o) {
  return dl::nn::functional::pixel_shuffle(input, o.upscale_factor());
}
inline Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& o) {
  return dl::nn::functional::pixel_unshuffle(input, o.downscale_factor());
}
inline Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& o = {}) {
  return dl::nn::functional::interpolate(input, {o.size().value_or(std::vector<int64_t>{}), o.scale_factor().value_or(std::vector<double>{}),
                                                 o.mode().name, o.align_corners(), o.recompute_scale_factor(), o.antialias()});
}
inline Tensor unfold(const Tensor& input, const UnfoldFuncOptions& o) {
  return dl::nn::functional::unfold(input, o.kernel_size().dl(), o.dilation().dl(), o.padding().dl(), o.stride().dl());
}
inline Tensor fold(const Tensor& input, const FoldFuncOptions& o) {
  return dl::nn::functional::fold(input, o.output_size().dl(), o.kernel_size().dl(), o.dilation().dl(), o.padding().dl(),
                                  o.stride().dl());
}
inline dl::Tensor<int64_t> one_hot(const dl::Tensor<int64_t>& tensor, int64_t num_classes = -1) {
  return dl::nn::functional::one_hot(tensor, num_classes);
}

inline Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o = {}) {
  return dl::nn::functional::mse_loss(input, target, {.reduction = ::torch::detail::reduction(o.reduction())});
}
inline Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o = {}) {
  return dl::nn::functional::l1_loss(input, target, {.reduction = ::torch::detail::reduction(o.reduction())});
}
/// Class-index targets (int64).
inline Tensor cross_entropy(const Tensor& input, const dl::Tensor<int64_t>& target, const CrossEntropyFuncOptions& o = {}) {
  return dl::nn::functional::cross_entropy(input, target,
                                           {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction()),
                                            .ignore_index = o.ignore_index(), .label_smoothing = o.label_smoothing()});
}
/// Class probabilities of the input's shape.
inline Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o = {}) {
  return dl::nn::functional::cross_entropy(input, target,
                                           {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction()),
                                            .ignore_index = o.ignore_index(), .label_smoothing = o.label_smoothing()});
}
inline Tensor nll_loss(const Tensor& input, const dl::Tensor<int64_t>& target, const NLLLossFuncOptions& o = {}) {
  return dl::nn::functional::nll_loss(
      input, target, {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction()), .ignore_index = o.ignore_index()});
}
inline Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o = {}) {
  return dl::nn::functional::binary_cross_entropy(input, target,
                                                  {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction())});
}
inline Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                               const BinaryCrossEntropyWithLogitsFuncOptions& o = {}) {
  return dl::nn::functional::binary_cross_entropy_with_logits(
      input, target, {.weight = o.weight(), .reduction = ::torch::detail::reduction(o.reduction()), .pos_weight = o.pos_weight()});
}
/// beta: the options' beta when set, else this argument (libtorch 1.13 takes both).
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o = {}, double beta = 1.0) {
  return dl::nn::functional::smooth_l1_loss(input, target,
                                            {.reduction = ::torch::detail::reduction(o.reduction()), .beta = o.beta().value_or(beta)});
}
inline Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o = {}) {
  return dl::nn::functional::huber_loss(input, target, {.reduction = ::torch::detail::reduction(o.reduction()), .delta = o.delta()});
}
inline Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o = {}) {
  return dl::nn::functional::kl_div(input, target,
                                    {.reduction = ::torch::detail::reduction(o.reduction(), true), .log_target = o.log_target()});
}

}  // namespace functional
}  // namespace torch::nn
