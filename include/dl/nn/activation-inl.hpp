// dl/nn/activation-inl.hpp — the bodies of dl/nn/activation.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "activation.hpp"

namespace dl::nn {

DL_API std::string Softplus::extra_repr() const {
  return "beta=" + dl::detail::py_number(beta) + ", threshold=" + dl::detail::py_number(threshold);
}

DL_API std::string Threshold::extra_repr() const {
  return "threshold=" + dl::detail::py_number(threshold) + ", value=" + dl::detail::py_number(value);
}

DL_API PReLU::PReLU(int64_t num_parameters, double init) : num_parameters(num_parameters) {
  DL_CHECK(num_parameters > 0, "PReLU: num_parameters must be positive, got ", num_parameters);
  weight = full<float>({num_parameters}, init).requires_grad_();
}

}  // namespace dl::nn
