// dl/nn/dropout.hpp — Dropout, Dropout1d, Dropout2d: zero elements (or whole channels) with
// probability p in training and scale the rest by 1 / (1 - p); the identity in eval().
#pragma once

#include <string>

#include "container.hpp"
#include "functional/dropout.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

namespace detail {
/// What the dropout modules share: p, inplace, the checks and the printout.
class DropoutBase : public Module {
 public:
  static constexpr bool keeps_axis(Axis) { return true; }
  double p;
  bool inplace;  ///< also overwrite a tensor input with the result (in dl this saves no memory)
  std::string extra_repr() const override { return "p=" + py_float(p) + ", inplace=" + py_bool(inplace); }

 protected:
  DropoutBase(double p, bool inplace) : p(p), inplace(inplace) {
    DL_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  }
  template <expression E, class F>
  Tensor<float> apply_(const E& x, F&& f) {
    Tensor<float> y = f();
    if constexpr (expr::is_tensor_v<E>) {
      if (inplace && is_training()) {
        E dst = x;
        dst.copy_(y);
        return dst;
      }
    }
    return y;
  }
};
}  // namespace detail

/// Zeroes each element with probability p (training only).
class Dropout : public detail::DropoutBase {
 public:
  static constexpr bool elementwise = true;
  explicit Dropout(double p = 0.5, bool inplace = false) : DropoutBase(p, inplace) {}
  template <expression E>
  Tensor<float> forward(const E& x) {
    return apply_(x, [&] { return functional::dropout(x, p, is_training()); });
  }
  DL_MODULE(Dropout)
};

/// Zeroes whole channels of [N, C, H, W] (or [C, H, W]) with probability p.
class Dropout2d : public detail::DropoutBase {
 public:
  explicit Dropout2d(double p = 0.5, bool inplace = false) : DropoutBase(p, inplace) {}
  template <expression E>
  Tensor<float> forward(const E& x) {
    return apply_(x, [&] { return functional::dropout2d(x, p, is_training()); });
  }
  DL_MODULE(Dropout2d)
};

/// Zeroes whole channels of [N, C, L] (or [C, L]) with probability p.
class Dropout1d : public detail::DropoutBase {
 public:
  explicit Dropout1d(double p = 0.5, bool inplace = false) : DropoutBase(p, inplace) {}
  template <expression E>
  Tensor<float> forward(const E& x) {
    return apply_(x, [&] { return functional::dropout1d(x, p, is_training()); });
  }
  DL_MODULE(Dropout1d)
};

}  // namespace dl::nn
