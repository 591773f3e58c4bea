// dl/nn/functional/padding-inl.hpp — the bodies of dl/nn/functional/padding.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "padding.hpp"

namespace dl::nn::functional::detail {

DL_API PadMode pad_mode(std::string_view mode) {
  if (mode == "constant") return PadMode::constant;
  if (mode == "reflect") return PadMode::reflect;
  if (mode == "replicate") return PadMode::replicate;
  if (mode == "circular") return PadMode::circular;
  throw Error(dl::detail::cat("Unrecognised padding mode ", mode, " (expected constant, reflect, replicate or circular)"));
}

DL_API dl::detail::PadMaps pad_maps(const Shape& in, const std::vector<int64_t>& pad, PadMode mode, double value) {
  const int nd = in.size();
  DL_CHECK(pad.size() % 2 == 0, "Padding length must be divisible by 2");
  DL_CHECK(int64_t(pad.size()) <= 2 * int64_t(nd), "Padding length too large");
  const int k = int(pad.size() / 2);
  if (mode != PadMode::constant) {
    const char* names[] = {"constant", "reflect", "replicate", "circular"};
    DL_CHECK(value == 0, "Padding mode \"", names[int(mode)], "\" doesn't take in value argument");
    DL_CHECK(k >= 1 && k <= 3 && (nd == k + 1 || nd == k + 2),
             "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now (got ", k,
             " padded dims of an input of size ", in, ")");
    if (mode != PadMode::circular)
      for (int d = nd - k - 1; d < nd; ++d)
        DL_CHECK(d == 0 && nd == k + 2 ? true : in[d] > 0, "Expected ", k + 1, "D or ", k + 2,
                 "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ", in);
  }
  dl::detail::PadMaps m;
  m.in = m.out = in;
  for (int j = 0; j < k; ++j) {
    const int d = nd - k + j;
    // pad lists the last dim first
    const int64_t l = pad[size_t(2 * (k - 1 - j))], r = pad[size_t(2 * (k - 1 - j) + 1)], n = in[d], o = n + l + r;
    if (mode == PadMode::constant) {
      DL_CHECK(o >= 0, "The input size ", n, ", plus negative padding ", l, " and ", r,
               " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
    } else if (mode == PadMode::reflect) {
      DL_CHECK(l < n && r < n, "Argument #4: Padding size should be less than the corresponding input dimension, but got: ",
               "padding (", l, ", ", r, ") at dimension ", d, " of input ", in);
      DL_CHECK(o >= 1, "reflect padding: input (size ", n, " at dimension ", d, ") is too small for padding (", l, ", ", r,
               "): calculated output size ", o);
    } else if (mode == PadMode::replicate) {
      DL_CHECK(o >= 1, "replicate padding: input (size ", n, " at dimension ", d, ") is too small for padding (", l, ", ",
               r, "): calculated output size ", o);
    } else {
      DL_CHECK(l <= n && r <= n, "Padding value causes wrapping around more than once (padding (", l, ", ", r,
               ") at dimension ", d, " of input ", in, ")");
      DL_CHECK(o >= 0, "Negative padding value is resulting in an empty dimension (padding (", l, ", ", r,
               ") at dimension ", d, " of input ", in, ")");
      DL_CHECK(o == 0 || n + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0) > 0, "circular padding (", l, ", ", r,
               ") crops every element of dimension ", d, " of input ", in, " and cannot wrap around");
    }
    m.out[d] = o;
    std::vector<int64_t> map(static_cast<size_t>(o));
    // circular: negative pads crop first, then the cropped row wraps around
    const int64_t crop_l = std::max<int64_t>(-l, 0), kept = n - crop_l - std::max<int64_t>(-r, 0);
    for (int64_t q = 0; q < o; ++q) {
      int64_t i = q - l;
      switch (mode) {
        case PadMode::constant: i = i >= 0 && i < n ? i : -1; break;
        case PadMode::reflect:
          if (i < 0) i = -i;
          if (i >= n) i = 2 * (n - 1) - i;
          break;
        case PadMode::replicate: i = std::clamp<int64_t>(i, 0, n - 1); break;
        case PadMode::circular: {
          const int64_t c = q - std::max<int64_t>(l, 0);
          i = crop_l + ((c % kept) + kept) % kept;
          break;
        }
      }
      map[size_t(q)] = i;
    }
    m.maps.push_back(std::move(map));
  }
  return m;
}

}  // namespace dl::nn::functional::detail
