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

/// The position maps of F::pad, after PyTorch's checks.
DL_API dl::detail::PadMaps pad_maps(const Shape& in, const std::vector<int64_t>& pad, PadMode mode, double value);

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

#if DL_HEADER_ONLY
#include "padding-inl.hpp"
#endif
