// dl/nn/activation.hpp — activation modules: ReLU, ReLU6, LeakyReLU, PReLU, ELU, CELU, SELU, GELU,
// SiLU, Mish, Sigmoid, Tanh, Softplus, Hardtanh, Hardsigmoid, Hardswish, LogSigmoid, Softsign,
// Tanhshrink, Threshold, Softmax, LogSoftmax. The elementwise ones are lazy inside a static
// Sequential (a run of them is one fused pass); called on their own they return a tensor.
#pragma once

#include <string>

#include "../config.hpp"
#include "container.hpp"
#include "functional/activation.hpp"
#include "functional/softmax.hpp"
#include "init.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

namespace detail {
/// Elementwise layers keep every size and compose lazily in a static Sequential.
struct Elementwise {
  static constexpr bool elementwise = true;
  static constexpr bool keeps_axis(Axis) { return true; }
};
}  // namespace detail

/// max(x, 0). inplace = true also overwrites a tensor input with the result, as PyTorch's does (in dl
/// that costs a pass and saves no memory: prefer the default).
class ReLU : public Module, public detail::Elementwise {
 public:
  explicit ReLU(bool inplace = false) : inplace(inplace) {}
  bool inplace;
  template <expression E>
  auto forward(const E& x) {
    if constexpr (expr::is_tensor_v<E>) {
      if (inplace) {
        E y = x;
        y.copy_(functional::relu(x));
        return functional::relu(y);  // relu is idempotent: the same lazy type as the default path
      }
    }
    return functional::relu(x);
  }
  /// The functor a preceding Linear applies in its GEMM epilogue (nn::Sequential fuses the pair).
  expr::Relu epilogue() const { return {}; }
  std::string extra_repr() const override { return inplace ? "inplace=True" : ""; }
  DL_MODULE(ReLU)
};

#define DL_ACTIVATION(Name, Call)                         \
  class Name : public Module, public detail::Elementwise { \
   public:                                                \
    template <expression E>                               \
    auto forward(const E& x) {                            \
      return Call;                                        \
    }                                                     \
    DL_MODULE(Name)                                       \
  };
DL_ACTIVATION(ReLU6, functional::relu6(x))
DL_ACTIVATION(SELU, functional::selu(x))
DL_ACTIVATION(SiLU, functional::silu(x))
DL_ACTIVATION(Mish, functional::mish(x))
DL_ACTIVATION(Sigmoid, functional::sigmoid(x))
DL_ACTIVATION(Tanh, functional::tanh(x))
DL_ACTIVATION(Hardsigmoid, functional::hardsigmoid(x))
DL_ACTIVATION(Hardswish, functional::hardswish(x))
DL_ACTIVATION(LogSigmoid, functional::logsigmoid(x))
DL_ACTIVATION(Softsign, functional::softsign(x))
DL_ACTIVATION(Tanhshrink, functional::tanhshrink(x))
#undef DL_ACTIVATION

class LeakyReLU : public Module, public detail::Elementwise {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  double negative_slope;
  template <expression E>
  auto forward(const E& x) { return functional::leaky_relu(x, negative_slope); }
  std::string extra_repr() const override { return "negative_slope=" + detail::py_float(negative_slope); }
  DL_MODULE(LeakyReLU)
};

class ELU : public Module, public detail::Elementwise {
 public:
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  double alpha;
  template <expression E>
  auto forward(const E& x) { return functional::elu(x, alpha); }
  std::string extra_repr() const override { return "alpha=" + detail::py_float(alpha); }
  DL_MODULE(ELU)
};

class CELU : public Module, public detail::Elementwise {
 public:
  explicit CELU(double alpha = 1.0) : alpha(alpha) {}
  double alpha;
  template <expression E>
  auto forward(const E& x) { return functional::celu(x, alpha); }
  std::string extra_repr() const override { return "alpha=" + detail::py_float(alpha); }
  DL_MODULE(CELU)
};

/// GELU, exact ("none") or with the tanh approximation ("tanh").
class GELU : public Module, public detail::Elementwise {
 public:
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {
    DL_CHECK(this->approximate == "none" || this->approximate == "tanh", "approximate argument must be either none or tanh, got '",
             this->approximate, "'");
  }
  std::string approximate;
  template <expression E>
  auto forward(const E& x) { return functional::gelu(x, approximate); }
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
  DL_MODULE(GELU)
};

/// log(1 + exp(beta x)) / beta, linear above threshold.
class Softplus : public Module, public detail::Elementwise {
 public:
  explicit Softplus(double beta = 1, double threshold = 20) : beta(beta), threshold(threshold) {}
  double beta, threshold;
  template <expression E>
  auto forward(const E& x) { return functional::softplus(x, beta, threshold); }
  DL_API std::string extra_repr() const override;
  DL_MODULE(Softplus)
};

class Hardtanh : public Module, public detail::Elementwise {
 public:
  explicit Hardtanh(double min_val = -1, double max_val = 1) : min_val(min_val), max_val(max_val) {
    DL_CHECK(max_val > min_val, "Hardtanh: max_val (", max_val, ") must be greater than min_val (", min_val, ")");
  }
  double min_val, max_val;
  template <expression E>
  auto forward(const E& x) { return functional::hardtanh(x, min_val, max_val); }
  std::string extra_repr() const override { return "min_val=" + detail::py_float(min_val) + ", max_val=" + detail::py_float(max_val); }
  DL_MODULE(Hardtanh)
};

/// value where x <= threshold, else x.
class Threshold : public Module, public detail::Elementwise {
 public:
  Threshold(double threshold, double value) : threshold(threshold), value(value) {}
  double threshold, value;
  template <expression E>
  auto forward(const E& x) { return functional::threshold(x, threshold, value); }
  DL_API std::string extra_repr() const override;
  DL_MODULE(Threshold)
};

/// max(0, x) + weight * min(0, x) with a learned weight (one, or one per channel: dim 1).
class PReLU : public Module, public detail::Elementwise {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  Tensor<float> weight;
  int64_t num_parameters;
  template <expression E>
  auto forward(const E& x) { return functional::prelu(x, weight); }
  std::string extra_repr() const override { return "num_parameters=" + std::to_string(num_parameters); }
  DL_MODULE(PReLU, weight)
};

/// softmax along dim.
class Softmax : public Module {
 public:
  static constexpr bool keeps_axis(detail::Axis) { return true; }
  explicit Softmax(int64_t dim) : dim(dim) {}
  int64_t dim;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::softmax(x, dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  DL_MODULE(Softmax)
};

class LogSoftmax : public Module {
 public:
  static constexpr bool keeps_axis(detail::Axis) { return true; }
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  int64_t dim;
  template <expression E>
  Tensor<float> forward(const E& x) { return functional::log_softmax(x, dim); }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  DL_MODULE(LogSoftmax)
};

// ------------------------------------------------------------------------------ implementation


}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "activation-inl.hpp"
#endif
