// dl/nn/functional/loss-inl.hpp — the bodies of dl/nn/functional/loss.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "loss.hpp"

namespace dl::nn::functional::detail {

DL_API void check_reduction(Reduction r, const char* what) {
  DL_CHECK(r != Reduction::batchmean, what, ": batchmean is not a valid value for reduction (only kl_div accepts it)");
}

DL_API dl::detail::ClassReduction class_reduction(Reduction r) {
  return r == Reduction::none ? dl::detail::ClassReduction::none
         : r == Reduction::sum ? dl::detail::ClassReduction::sum
                               : dl::detail::ClassReduction::mean;
}

DL_API void check_label_smoothing(double s) {
  DL_CHECK(s >= 0 && s <= 1, "label_smoothing must be between 0.0 and 1.0. Got: ", s);
}

}  // namespace dl::nn::functional::detail
