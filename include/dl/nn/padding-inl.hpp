// dl/nn/padding-inl.hpp — the bodies of dl/nn/padding.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "padding.hpp"

namespace dl::nn::detail {

DL_API PadBase::PadBase(std::vector<int64_t> padding_, size_t dims, std::string mode_, double value_, bool show_value)
    : padding(std::move(padding_)), mode(std::move(mode_)), value(value_), show_value_(show_value) {
  DL_CHECK(padding.size() == dims, "padding: expected ", dims, " padding sizes (left, right", dims == 4 ? ", top, bottom" : "",
           "), got ", padding.size());
}

DL_API std::string PadBase::extra_repr() const {
  std::string t = "(";
  for (size_t i = 0; i < padding.size(); ++i) t += (i ? ", " : "") + std::to_string(padding[i]);
  t += ")";
  return show_value_ ? "padding=" + t + ", value=" + py_float(value) : t;
}

}  // namespace dl::nn::detail
