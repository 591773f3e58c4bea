// dl/nn/fold.hpp — Unfold and Fold (torch.nn's): the modules of F::unfold (an image's sliding blocks
// as columns) and F::fold (columns summed back into an image), for patch embeddings and
// hand-written convolutions.
//
//   nn::Unfold unfold({.kernel_size = {2, 3}, .stride = 2});            // [N, C, H, W] -> [N, C*6, L]
//   nn::Fold fold({.output_size = {28, 28}, .kernel_size = 4, .stride = 4});
#pragma once

#include <optional>
#include <sstream>
#include <string>

#include "container.hpp"
#include "functional/fold.hpp"

namespace dl::nn {

/// torch.nn.Unfold's arguments (one int means the same value for height and width).
struct UnfoldOptions {
  Size2 kernel_size;
  Size2 dilation = 1;
  Size2 padding = 0;
  Size2 stride = 1;
};
/// torch.nn.Fold's arguments: the image size, then Unfold's.
struct FoldOptions {
  Size2 output_size;
  Size2 kernel_size;
  Size2 dilation = 1;
  Size2 padding = 0;
  Size2 stride = 1;
};

namespace detail {
/// "[output_size=(4, 5), ]kernel_size=(2, 3), dilation=1, padding=0, stride=1": PyTorch's printout
/// of Fold's and Unfold's arguments (a pair of equal values as one number).
inline std::string blocks_repr(std::optional<Size2> output_size, Size2 kernel_size, Size2 dilation, Size2 padding,
                               Size2 stride) {
  std::ostringstream os;
  const auto put = [&](const char* name, Size2 v) {
    os << name << '=';
    if (v.h == v.w) os << v.h;
    else os << '(' << v.h << ", " << v.w << ')';
  };
  if (output_size) put("output_size", *output_size), os << ", ";
  put("kernel_size", kernel_size);
  put(", dilation", dilation);
  put(", padding", padding);
  put(", stride", stride);
  return os.str();
}
}  // namespace detail

/// [N, C, H, W] (or [C, H, W]) -> [N, C*kh*kw, L]: F::unfold with its options.
class Unfold : public Module {
 public:
  explicit Unfold(UnfoldOptions o) : options(o) {}
  UnfoldOptions options;
  template <expression E>
  Tensor<expr::value_type_t<E>> forward(const E& x) {
    return functional::unfold(x, options.kernel_size, options.dilation, options.padding, options.stride);
  }
  /// PyTorch's: "kernel_size=(2, 3), dilation=1, padding=0, stride=1" (a pair of equal values as one).
  std::string extra_repr() const override {
    return detail::blocks_repr(std::nullopt, options.kernel_size, options.dilation, options.padding, options.stride);
  }
  DL_MODULE(Unfold)
};

/// [N, C*kh*kw, L] (or [C*kh*kw, L]) -> [N, C, H, W]: F::fold with its options.
class Fold : public Module {
 public:
  explicit Fold(FoldOptions o) : options(o) {}
  FoldOptions options;
  template <expression E>
  Tensor<expr::value_type_t<E>> forward(const E& x) {
    return functional::fold(x, options.output_size, options.kernel_size, options.dilation, options.padding, options.stride);
  }
  /// PyTorch's: "output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1".
  std::string extra_repr() const override {
    return detail::blocks_repr(options.output_size, options.kernel_size, options.dilation, options.padding, options.stride);
  }
  DL_MODULE(Fold)
};

}  // namespace dl::nn
