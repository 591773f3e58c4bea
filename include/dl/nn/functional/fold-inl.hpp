// dl/nn/functional/fold-inl.hpp — the bodies of dl/nn/functional/fold.hpp's non-template functions
// (DL_API): compiled into each program in header-only mode, once into libdl_kernels in compiled
// mode (see DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include <algorithm>
#include <string>

#include "fold.hpp"

namespace dl::nn::functional::detail {

DL_API FoldPlan fold_plan(bool fold, const Shape& input, Size2 output_size, Size2 k, Size2 d, Size2 p, Size2 s) {
  using dl::detail::cat;
  const auto pair = [](Size2 v) { return cat("(", v.h, ", ", v.w, ")"); };
  if (k.h <= 0 || k.w <= 0)
    throw Error(cat("kernel size should be greater than zero, but got kernel_height: ", k.h, " kernel_width: ", k.w));
  if (s.h <= 0 || s.w <= 0)
    throw Error(cat("stride should be greater than zero, but got stride_height: ", s.h, " stride_width: ", s.w));
  if (d.h <= 0 || d.w <= 0)
    throw Error(cat("dilation should be greater than zero, but got dilation_height: ", d.h, " dilation_width: ", d.w));
  if (p.h < 0 || p.w < 0) throw Error(cat("padding should be non-negative, but got pad_height: ", p.h, " pad_width: ", p.w));
  // Blocks along one dim: floor((size + 2 pad - dilation (kernel - 1) - 1) / stride) + 1.
  const auto blocks = [](int64_t size, int64_t kk, int64_t dd, int64_t pp, int64_t ss) {
    const int64_t span = size + 2 * pp - dd * (kk - 1) - 1;
    return (span >= 0 ? span / ss : -((-span + ss - 1) / ss)) + 1;
  };
  const int nd = input.size();
  FoldPlan plan;
  int64_t H = 0, W = 0;
  if (!fold) {
    bool ok = nd == 3 || nd == 4;
    for (int i = nd - 3; ok && i < nd; ++i) ok = input[i] > 0;
    if (!ok)
      throw Error(cat("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
                      input));
    H = input[nd - 2], W = input[nd - 1];
    plan.blocks_h = blocks(H, k.h, d.h, p.h, s.h);
    plan.blocks_w = blocks(W, k.w, d.w, p.w, s.w);
    if (plan.blocks_h < 1 || plan.blocks_w < 1)
      throw Error(cat("Given input with spatial size ", pair({H, W}), ", kernel_size=", pair(k), ", dilation=", pair(d),
                      ", padding=", pair(p), ", calculated shape of the array of sliding blocks as ",
                      pair({plan.blocks_h, plan.blocks_w}), ", but its components must be at least one."));
  } else {
    bool ok = nd == 2 || nd == 3;
    for (int i = nd - 2; ok && i < nd; ++i) ok = input[i] > 0;
    if (!ok)
      throw Error(cat("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: ",
                      input));
    const int64_t rows = input[nd - 2], length = input[nd - 1];
    if (rows % (k.h * k.w) != 0)
      throw Error(cat("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=",
                      rows, " and kernel_size=", pair(k), "."));
    H = output_size.h, W = output_size.w;
    plan.blocks_h = blocks(H, k.h, d.h, p.h, s.h);
    plan.blocks_w = blocks(W, k.w, d.w, p.w, s.w);
    const std::string given = cat("Given output_size=", pair(output_size), ", kernel_size=", pair(k), ", dilation=", pair(d),
                                  ", padding=", pair(p), ", stride=", pair(s), ", ");
    if (plan.blocks_h * plan.blocks_w != length)
      throw Error(cat(given, "expected size of input's dimension 2 to match the calculated number of sliding blocks ",
                      plan.blocks_h, " * ", plan.blocks_w, " = ", plan.blocks_h * plan.blocks_w, ", but got input.size(2)=",
                      length, "."));
    if (plan.blocks_h < 1 || plan.blocks_w < 1)
      throw Error(cat(given, "calculated shape of the array of sliding blocks as ", pair({plan.blocks_h, plan.blocks_w}),
                      ", which is too small (non-positive)."));
  }
  plan.padded_h = H + 2 * p.h;
  plan.padded_w = W + 2 * p.w;
  const int64_t L = plan.blocks_h * plan.blocks_w;
  plan.index.resize(size_t(k.h * k.w * L));
  int64_t* out = plan.index.data();
  for (int64_t ki = 0; ki < k.h; ++ki)
    for (int64_t kj = 0; kj < k.w; ++kj)
      for (int64_t bi = 0; bi < plan.blocks_h; ++bi)
        for (int64_t bj = 0; bj < plan.blocks_w; ++bj)
          *out++ = (bi * s.h + ki * d.h) * plan.padded_w + bj * s.w + kj * d.w;
  return plan;
}

DL_API Tensor<int64_t> plan_index(const FoldPlan& plan, Device device) {
  Tensor<int64_t> index = empty<int64_t>({int64_t(plan.index.size())});
  std::copy(plan.index.begin(), plan.index.end(), index.data());
  return device.is_cpu() ? index : index.to(device);
}

}  // namespace dl::nn::functional::detail
