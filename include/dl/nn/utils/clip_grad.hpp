// dl/nn/utils/clip_grad.hpp — gradient clipping: clip_grad_norm_ and clip_grad_value_
// (torch.nn.utils), called between backward() and the optimizer's step.
//
//   loss.backward();
//   double norm = nn::utils::clip_grad_norm_(net.parameters(), /*max_norm=*/1.0);
//   opt.step();
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "../../error.hpp"
#include "../../grad_mode.hpp"
#include "../../tensor.hpp"

namespace dl::nn::utils {

/// Scales the gradients of `parameters` together so that their total norm — the norm of all of
/// them as one vector, of order norm_type (2, 1, any p > 0, or infinity) — is at most max_norm:
/// each gradient is multiplied by min(1, max_norm / (total + 1e-6)), as PyTorch does. Parameters
/// without a gradient are skipped. Returns the total norm before clipping (libtorch returns it as
/// a double too). A non-finite total is an error with error_if_nonfinite, else it scales by it.
template <scalar_type T>
double clip_grad_norm_(const std::vector<Tensor<T>>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false) {
  static_assert(floating_scalar<T>, "clip_grad_norm_: gradients are floating-point; pass the parameters of a float model");
  DL_CHECK(norm_type > 0 || std::isinf(norm_type), "clip_grad_norm_: norm_type must be positive or infinity, got ", norm_type);
  std::vector<Tensor<T>> grads;
  for (const auto& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  NoGradGuard no_grad;
  double total = 0;
  const bool inf = std::isinf(norm_type);
  for (const auto& g : grads) {
    if (inf) {
      total = std::max(total, double(dl::abs(g).max().item()));
    } else if (norm_type == 2) {
      total += double(dl::sum(g * g).item());
    } else if (norm_type == 1) {
      total += double(dl::sum(dl::abs(g)).item());
    } else {
      total += double(dl::sum(dl::pow(dl::abs(g), T(norm_type))).item());
    }
  }
  if (!inf) total = norm_type == 2 ? std::sqrt(total) : norm_type == 1 ? total : std::pow(total, 1.0 / norm_type);
  if (error_if_nonfinite && !std::isfinite(total))
    throw Error(dl::detail::cat("The total norm of order ", norm_type, " for gradients from `parameters` is non-finite, so it cannot be ",
                            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set ",
                            "`error_if_nonfinite=false`"));
  const double raw = max_norm / (total + 1e-6);
  const double coef = std::isnan(raw) ? raw : std::min(1.0, raw);  // PyTorch's clamp(max=1) keeps a NaN
  if (!(coef >= 1.0))
    for (auto& g : grads) g.mul_(T(coef));
  return total;
}

/// clip_grad_norm_ of one tensor's gradient.
template <scalar_type T>
double clip_grad_norm_(const Tensor<T>& parameter, double max_norm, double norm_type = 2.0, bool error_if_nonfinite = false) {
  return clip_grad_norm_(std::vector<Tensor<T>>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

/// Clamps every gradient of `parameters` into [-clip_value, clip_value] in place.
template <scalar_type T>
void clip_grad_value_(const std::vector<Tensor<T>>& parameters, double clip_value) {
  static_assert(floating_scalar<T>, "clip_grad_value_: gradients are floating-point; pass the parameters of a float model");
  DL_CHECK(clip_value >= 0, "clip_grad_value_: clip_value must be non-negative, got ", clip_value);
  NoGradGuard no_grad;
  for (const auto& p : parameters)
    if (p.defined() && p.grad().defined()) {
      Tensor<T> g = p.grad();
      g.clamp_(T(-clip_value), T(clip_value));
    }
}

/// clip_grad_value_ of one tensor's gradient.
template <scalar_type T>
void clip_grad_value_(const Tensor<T>& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor<T>>{parameter}, clip_value);
}

}  // namespace dl::nn::utils
