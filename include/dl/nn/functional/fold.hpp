// dl/nn/functional/fold.hpp — F::unfold and F::fold (PyTorch's F.unfold / F.fold, the functions of
// nn.Unfold and nn.Fold): the sliding blocks of an image as columns (im2col) and its adjoint, the
// columns summed back into an image (col2im).
//
//   auto cols = F::unfold(x, {2, 3}, /*dilation=*/1, /*padding=*/1, /*stride=*/2);  // [N, C*2*3, L]
//   auto img = F::fold(cols, /*output_size=*/{H, W}, {2, 3}, 1, 1, 2);              // [N, C, H, W]
//
// Both are one index_select / index_add over the (zero-padded) flattened image with the positions
// of every (kernel element, block) pair, so they are differentiable to any order and run wherever
// those ops do.
#pragma once

#include <cstdint>
#include <vector>

#include "../../config.hpp"
#include "../../error.hpp"
#include "../../ops/conv.hpp"
#include "../../ops/indexing.hpp"
#include "../../tensor.hpp"
#include "padding.hpp"

namespace dl::nn::functional {

namespace detail {

/// The sliding blocks of F::unfold / F::fold on an H x W image: the padded plane's size, the number
/// of blocks (rows x cols) and, kernel element by kernel element, the flat position in the padded
/// plane of each block's element: index[(ki * kw + kj) * L + l].
struct FoldPlan {
  int64_t padded_h = 0, padded_w = 0, blocks_h = 0, blocks_w = 0;
  std::vector<int64_t> index;
};

/// PyTorch's checks (im2col_shape_check for F::unfold, col2im_shape_check for F::fold) and the
/// plan. `input` is unfold's image ([N, C, H, W] or [C, H, W]) or fold's columns ([N, C*kh*kw, L]
/// or [C*kh*kw, L]); `output_size` is fold's (ignored by unfold).
DL_API FoldPlan fold_plan(bool fold, const Shape& input, Size2 output_size, Size2 kernel_size, Size2 dilation,
                          Size2 padding, Size2 stride);
/// The plan's positions as an int64 tensor on `device` (index_select's / index_add's index).
DL_API Tensor<int64_t> plan_index(const FoldPlan& plan, Device device);

}  // namespace detail

/// F.unfold: the kh x kw blocks of `input` ([N, C, H, W], or [C, H, W] unbatched) at the given
/// dilation, zero padding and stride, each flattened into a column: [N, C*kh*kw, L] with L the
/// number of blocks (rows ordered channel, kernel row, kernel column, as PyTorch's).
/// Errors (PyTorch's messages): not 3-D/4-D or empty, kernel size, stride or dilation < 1,
/// negative padding, no block fits.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> unfold(const E& input, Size2 kernel_size, Size2 dilation = 1, Size2 padding = 0, Size2 stride = 1) {
  const Tensor<T> x0 = dl::detail::materialize(input);
  const detail::FoldPlan plan = detail::fold_plan(false, x0.shape(), 0, kernel_size, dilation, padding, stride);
  const Tensor<T> x = x0.dim() == 4 ? x0 : x0.unsqueeze(0);
  const int64_t N = x.shape()[0], C = x.shape()[1], K = kernel_size.h * kernel_size.w;
  const int64_t L = plan.blocks_h * plan.blocks_w;
  const Tensor<T> padded = padding == Size2(0) ? x : pad(x, {padding.w, padding.w, padding.h, padding.h});
  const Tensor<T> cols =
      index_select(padded.reshape({N, C, plan.padded_h * plan.padded_w}), 2, detail::plan_index(plan, x.device()))
          .reshape({N, C * K, L});
  return x0.dim() == 4 ? cols : cols.squeeze(0);
}

/// F.fold: the adjoint of F::unfold. Sums the columns of `input` ([N, C*kh*kw, L], or
/// [C*kh*kw, L] unbatched) into an image of `output_size`: [N, C, H, W]. Overlapping blocks add
/// up; the padding is cut off. Errors (PyTorch's messages): not 2-D/3-D or empty, a row count not
/// divisible by kh*kw, L not the number of blocks that fit, and unfold's.
template <expression E, class T = expr::value_type_t<E>>
Tensor<T> fold(const E& input, Size2 output_size, Size2 kernel_size, Size2 dilation = 1, Size2 padding = 0,
               Size2 stride = 1) {
  const Tensor<T> x0 = dl::detail::materialize(input);
  const detail::FoldPlan plan = detail::fold_plan(true, x0.shape(), output_size, kernel_size, dilation, padding, stride);
  const Tensor<T> x = x0.dim() == 3 ? x0 : x0.unsqueeze(0);
  const int64_t N = x.shape()[0], K = kernel_size.h * kernel_size.w, C = x.shape()[1] / K;
  const int64_t L = plan.blocks_h * plan.blocks_w;
  Tensor<T> image = index_add(zeros<T>({N, C, plan.padded_h * plan.padded_w}, x.device()), 2,
                              detail::plan_index(plan, x.device()), x.reshape({N, C, K * L}))
                        .reshape({N, C, plan.padded_h, plan.padded_w});
  if (!(padding == Size2(0)))
    image = image.narrow(2, padding.h, output_size.h).narrow(3, padding.w, output_size.w).contiguous();
  return x0.dim() == 3 ? image : image.squeeze(0);
}

}  // namespace dl::nn::functional

// Compiled mode: the float instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::unfold(const dl::Tensor<float>&, dl::Size2, dl::Size2, dl::Size2,
                                                                     dl::Size2))
DL_EXTERN_TEMPLATE(nn, dl::Tensor<float> dl::nn::functional::fold(const dl::Tensor<float>&, dl::Size2, dl::Size2, dl::Size2,
                                                                   dl::Size2, dl::Size2))

#if DL_HEADER_ONLY
#include "fold-inl.hpp"
#endif
