// dl/nn/functional/sparse-inl.hpp — the bodies of dl/nn/functional/sparse.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "sparse.hpp"

namespace dl::nn::functional {

DL_API Tensor<int64_t> one_hot(const Tensor<int64_t>& input, int64_t num_classes) {
  const Tensor<int64_t> x = input.contiguous();
  const int64_t n = x.numel();
  const int64_t* p = x.data();
  if (num_classes == -1) {
    DL_CHECK(n > 0, "Can not infer total number of classes from empty tensor.");
    num_classes = *std::max_element(p, p + n) + 1;
  }
  for (int64_t i = 0; i < n; ++i) {
    DL_CHECK(p[i] >= 0, "Class values must be non-negative. (got ", p[i], ")");
    DL_CHECK(p[i] < num_classes, "Class values must be smaller than num_classes. (got ", p[i], " with num_classes = ", num_classes,
             ")");
  }
  Shape shape = input.shape();
  shape.push_back(std::max<int64_t>(num_classes, 0));
  Tensor<int64_t> out = zeros<int64_t>(shape);
  for (int64_t i = 0; i < n; ++i) out.data()[i * num_classes + p[i]] = 1;
  return out;
}

}  // namespace dl::nn::functional
