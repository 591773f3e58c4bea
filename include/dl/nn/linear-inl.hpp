// dl/nn/linear-inl.hpp — the bodies of dl/nn/linear.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "linear.hpp"

namespace dl::nn::detail {

DL_API std::string py_tuple(const Shape& s) {
  std::string out = "(";
  for (int i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}
}  // namespace dl::nn::detail

namespace dl::nn {

DL_API Linear<>::Linear(int64_t in_features, int64_t out_features, bool bias)
    : in_features(in_features), out_features(out_features) {
  DL_CHECK(in_features >= 0 && out_features >= 0, "Linear: in_features and out_features must be non-negative, got ", in_features,
           " and ", out_features);
  weight = empty<float>({out_features, in_features}).requires_grad_();
  if (bias) this->bias = empty<float>({out_features}).requires_grad_();
  reset_parameters();
}

DL_API void Linear<>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(double(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

DL_API std::string Linear<>::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + detail::py_bool(bias.defined());
}

DL_API Bilinear<>::Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias)
    : in1_features(in1_features), in2_features(in2_features), out_features(out_features) {
  DL_CHECK(in1_features > 0 && in2_features > 0 && out_features > 0, "Bilinear: sizes must be positive, got ", in1_features, ", ",
           in2_features, ", ", out_features);
  weight = empty<float>({out_features, in1_features, in2_features}).requires_grad_();
  if (bias) this->bias = empty<float>({out_features}).requires_grad_();
  reset_parameters();
}

DL_API void Bilinear<>::reset_parameters() {
  const double bound = 1.0 / std::sqrt(double(in1_features));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

DL_API std::string Bilinear<>::extra_repr() const {
  return "in1_features=" + std::to_string(in1_features) + ", in2_features=" + std::to_string(in2_features) +
         ", out_features=" + std::to_string(out_features) + ", bias=" + detail::py_bool(bias.defined());
}

DL_API std::string Unflatten::extra_repr() const {
  return "dim=" + std::to_string(dim) + ", unflattened_size=" + detail::py_tuple(unflattened_size);
}

}  // namespace dl::nn
