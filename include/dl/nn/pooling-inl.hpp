// dl/nn/pooling-inl.hpp — the bodies of dl/nn/pooling.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "pooling.hpp"

namespace dl::nn {

DL_API MaxPool2d::MaxPool2d(detail::PoolSize k, const MaxPoolOptions<Size2>& o)
    : kernel_size(k), stride(o.stride.value_or(k.v)), padding(o.padding), dilation(o.dilation), return_indices(o.return_indices),
      ceil_mode(o.ceil_mode) {
  DL_CHECK(k.v.h > 0 && k.v.w > 0, "MaxPool2d: kernel_size must be positive, got ", k.str());
}

DL_API std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + kernel_size.str() + ", stride=" + detail::size2_str(stride) + ", padding=" + detail::size2_str(padding) +
         ", dilation=" + detail::size2_str(dilation) + ", ceil_mode=" + detail::py_bool(ceil_mode);
}

DL_API MaxPool1d::MaxPool1d(int64_t k, const MaxPoolOptions<int64_t>& o)
    : kernel_size(k), stride(o.stride.value_or(k)), padding(o.padding), dilation(o.dilation), return_indices(o.return_indices),
      ceil_mode(o.ceil_mode) {
  DL_CHECK(k > 0, "MaxPool1d: kernel_size must be positive, got ", k);
}

DL_API std::string MaxPool1d::extra_repr() const {
  return "kernel_size=" + std::to_string(kernel_size) + ", stride=" + std::to_string(stride) + ", padding=" + std::to_string(padding) +
         ", dilation=" + std::to_string(dilation) + ", ceil_mode=" + detail::py_bool(ceil_mode);
}

DL_API AvgPool2d::AvgPool2d(detail::PoolSize k, const AvgPoolOptions<Size2>& o)
    : kernel_size(k), stride(o.stride.value_or(k.v)), padding(o.padding), ceil_mode(o.ceil_mode),
      count_include_pad(o.count_include_pad), divisor_override(o.divisor_override) {
  DL_CHECK(k.v.h > 0 && k.v.w > 0, "AvgPool2d: kernel_size must be positive, got ", k.str());
}

DL_API std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + kernel_size.str() + ", stride=" + detail::size2_str(stride) + ", padding=" + detail::size2_str(padding);
}

DL_API AvgPool1d::AvgPool1d(int64_t k, const AvgPoolOptions<int64_t>& o)
    : kernel_size(k), stride(o.stride.value_or(k)), padding(o.padding), ceil_mode(o.ceil_mode), count_include_pad(o.count_include_pad) {
  DL_CHECK(k > 0, "AvgPool1d: kernel_size must be positive, got ", k);
  DL_CHECK(o.divisor_override == 0, "AvgPool1d has no divisor_override (PyTorch's AvgPool1d does not either)");
}

DL_API std::string AvgPool1d::extra_repr() const {
  return "kernel_size=(" + std::to_string(kernel_size) + ",), stride=(" + std::to_string(stride) + ",), padding=(" +
         std::to_string(padding) + ",)";
}

}  // namespace dl::nn
