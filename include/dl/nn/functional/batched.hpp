// dl/nn/functional/batched.hpp — detail::batched, how convolution and pooling accept an unbatched
// input ([C, H, W] as well as [N, C, H, W]): the op runs on a batch of one.
#pragma once

#include <type_traits>

#include "../../tensor.hpp"

namespace dl::nn::functional::detail {

/// Runs f on a batched view of a 3-d (unbatched) or 4-d input and removes the added batch dim.
template <class T, class F>
auto batched(const Tensor<T>& x, const char* what, F&& f) {
  DL_CHECK(x.dim() == 3 || x.dim() == 4, "Expected 3D (unbatched) or 4D (batched) input to ", what, ", but got input of size: ",
           x.shape());
  if (x.dim() == 4) return f(x);
  auto r = f(x.unsqueeze(0));
  if constexpr (std::is_same_v<decltype(r), MaxResult<T>>) return MaxResult<T>{r.values.squeeze(0), r.indices.squeeze(0)};
  else return r.squeeze(0);
}

}  // namespace dl::nn::functional::detail
