// dl/nn/normalization-inl.hpp — the bodies of dl/nn/normalization.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "normalization.hpp"

namespace dl::nn::detail {

DL_API NormBase::NormBase(const char* kind, int64_t num_features, const BatchNormOptions& o)
    : num_features(num_features), eps(o.eps), momentum(o.momentum), affine(o.affine), track_running_stats(o.track_running_stats) {
  DL_CHECK(num_features > 0, kind, ": num_features must be positive, got ", num_features);
  DL_CHECK(eps > 0, kind, ": eps must be positive, got ", eps);
  if (affine) {
    weight = empty<float>({num_features}).requires_grad_();
    bias = empty<float>({num_features}).requires_grad_();
  }
  if (track_running_stats) {
    running_mean = empty<float>({num_features});
    running_var = empty<float>({num_features});
    num_batches_tracked = zeros<int64_t>({});
  }
  reset_parameters();
}

DL_API void NormBase::reset_running_stats() {
  if (!track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1.0f);
  num_batches_tracked.zero_();
}

DL_API void NormBase::reset_parameters() {
  reset_running_stats();
  if (affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

DL_API std::string NormBase::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) + ", momentum=" + (momentum ? py_float(*momentum) : "None") +
         ", affine=" + py_bool(affine) + ", track_running_stats=" + py_bool(track_running_stats);
}
}  // namespace dl::nn::detail

namespace dl::nn {

DL_API LayerNorm::LayerNorm(Shape normalized_shape, const LayerNormOptions& o)
    : normalized_shape(normalized_shape), eps(o.eps), elementwise_affine(o.elementwise_affine) {
  DL_CHECK(normalized_shape.size() > 0, "LayerNorm: normalized_shape must have at least one dimension");
  if (elementwise_affine) {
    weight = empty<float>(normalized_shape).requires_grad_();
    if (o.bias) bias = empty<float>(normalized_shape).requires_grad_();
  }
  reset_parameters();
}

DL_API void LayerNorm::reset_parameters() {
  if (!elementwise_affine) return;
  init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

DL_API std::string LayerNorm::extra_repr() const {
  std::string s = "(";
  for (int i = 0; i < normalized_shape.size(); ++i) s += (i ? ", " : "") + std::to_string(normalized_shape[i]);
  s += normalized_shape.size() == 1 ? ",)" : ")";
  return s + ", eps=" + detail::py_float(eps) + ", elementwise_affine=" + detail::py_bool(elementwise_affine);
}

DL_API GroupNorm<>::GroupNorm(int64_t num_groups, int64_t num_channels, const GroupNormOptions& o)
    : num_groups(num_groups), num_channels(num_channels), eps(o.eps), affine(o.affine) {
  DL_CHECK(num_groups > 0 && num_channels > 0 && num_channels % num_groups == 0,
           "num_channels must be divisible by num_groups (num_channels ", num_channels, ", num_groups ", num_groups, ")");
  if (affine) {
    weight = empty<float>({num_channels}).requires_grad_();
    bias = empty<float>({num_channels}).requires_grad_();
  }
  reset_parameters();
}

DL_API void GroupNorm<>::reset_parameters() {
  if (!affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

DL_API std::string GroupNorm<>::extra_repr() const {
  return std::to_string(num_groups) + ", " + std::to_string(num_channels) + ", eps=" + detail::py_float(eps) +
         ", affine=" + detail::py_bool(affine);
}

}  // namespace dl::nn
