// dl/nn/functional/padding.hpp — F::pad: constant, reflect, replicate and circular padding of the
// last dims with PyTorch's order of pairs ({left, right, top, bottom, front, back}); negative
// pads crop. Differentiable to any order.
#pragma once

#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include "../../config.hpp"
#include "../../ops/pad.hpp"
#include "../../tensor.hpp"

namespace dl::nn::functional {

// ------------------------------------------------------------------------------ declarations

/// Pads the last pad.size() / 2 dims of input: pad = {left, right} for the last dim, then
/// {top, bottom} for the one before, and so on. mode "constant" fills with value and pads any
/// number of dims; "reflect" (mirror without repeating the edge), "replicate" (repeat the edge)
/// and "circular" (wrap around) pad 1 to 3 dims of an input with one or two more dims.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> pad(const E& input, std::vector<int64_t> pad, std::string_view mode = "constant", double value = 0);

// ------------------------------------------------------------------------------ implementation

namespace detail {

enum class PadMode { constant, reflect, replicate, circular };

DL_API PadMode pad_mode(std::string_view mode);
#if DL_HEADER_ONLY
DL_API PadMode pad_mode(std::string_view mode) {
  if (mode == "constant") return PadMode::constant;
  if (mode == "reflect") return PadMode::reflect;
  if (mode == "replicate") return PadMode::replicate;
  if (mode == "circular") return PadMode::circular;
  throw Error(dl::detail::cat("Unrecognised padding mode ", mode, " (expected constant, reflect, replicate or circular)"));
}
#endif  // DL_HEADER_ONLY

/// The position maps of F::pad, after PyTorch's checks.
DL_API dl::detail::PadMaps pad_maps(const Shape& in, const std::vector<int64_t>& pad, PadMode mode, double value);
#if DL_HEADER_ONLY
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
#endif  // DL_HEADER_ONLY

}  // namespace detail

template <expression E, class T>
Tensor<T> pad(const E& input, std::vector<int64_t> pad, std::string_view mode, double value) {
  const detail::PadMode pm = detail::pad_mode(mode);
  const Tensor<T> x = dl::detail::materialize(input);
  auto maps = std::make_shared<const dl::detail::PadMaps>(detail::pad_maps(x.shape(), pad, pm, value));
  if (maps->maps.empty()) return Tensor<T>(x * T(1));  // nothing padded: a copy, as PyTorch
  return dl::detail::pad_gather_op(x, maps, T(value));
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::pad(const dl::Tensor<float>&, std::vector<int64_t>, std::string_view, double))
