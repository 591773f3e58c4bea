// dl/nn/linear.hpp — Linear, Bilinear, Identity, Flatten, Unflatten. Layers with feature counts
// follow std::span's convention: nn::Linear<784, 128> knows its sizes when compiled,
// nn::Linear(784, 128) (deduced) and nn::Linear<> fc{784, 128} (a member) at run time; the static
// form derives from the run-time one, so code taking a nn::Linear<>& takes any Linear.
#pragma once

#include "../config.hpp"
#include "container.hpp"
#include "functional/linear.hpp"
#include "init.hpp"

namespace dl::nn {

// ------------------------------------------------------------------------------ declarations

/// y = x W^T + b over the last dim: weight [out, in], bias [out] (bias = false: none).
template <int64_t In = dynamic, int64_t Out = dynamic>
class Linear;

template <>
class Linear<dynamic, dynamic> : public Module {
 public:
  static constexpr int64_t static_in_features = dynamic, static_out_features = dynamic;
  static constexpr detail::Axis feature_axis = detail::Axis::last;

  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor<float> weight, bias;
  int64_t in_features, out_features;

  template <expression E>
  Tensor<float> forward(const E& x) { return functional::linear(x, weight, bias); }
  /// forward with an elementwise activation (e.g. dl::expr::Relu{}) applied in the GEMM epilogue.
  template <expression E, class Act>
  Tensor<float> forward_with_activation(const E& x, Act act) { return functional::linear(x, weight, bias, act); }
  /// PyTorch's default: kaiming_uniform_(weight, a = sqrt(5)), bias U(-1/sqrt(in), 1/sqrt(in)).
  void reset_parameters();
  int64_t input_size() const { return in_features; }
  int64_t output_size() const { return out_features; }
  DL_API std::string extra_repr() const override;
  DL_MODULE(Linear, weight, bias)
};

template <int64_t In, int64_t Out>
class Linear : public Linear<> {
  static_assert(In > 0 && Out > 0, "nn::Linear<In, Out>: sizes must be positive (nn::Linear<> for run-time sizes)");

 public:
  static constexpr int64_t static_in_features = In, static_out_features = Out;
  explicit Linear(bool bias = true) : Linear<>(In, Out, bias) {}
};

Linear(int64_t, int64_t, bool = true) -> Linear<>;

/// y = x1^T A x2 + b over the last dims: weight [out, in1, in2], bias [out].
template <int64_t In1 = dynamic, int64_t In2 = dynamic, int64_t Out = dynamic>
class Bilinear;

template <>
class Bilinear<dynamic, dynamic, dynamic> : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  Tensor<float> weight, bias;
  int64_t in1_features, in2_features, out_features;

  template <expression E1, expression E2>
  Tensor<float> forward(const E1& x1, const E2& x2) {
    return functional::bilinear(detail_materialize(x1), detail_materialize(x2), weight, bias);
  }
  void reset_parameters();
  DL_API std::string extra_repr() const override;
  DL_MODULE(Bilinear, weight, bias)

 private:
  template <expression E>
  static Tensor<float> detail_materialize(const E& e) { return Tensor<float>(e); }
};

template <int64_t In1, int64_t In2, int64_t Out>
class Bilinear : public Bilinear<> {
  static_assert(In1 > 0 && In2 > 0 && Out > 0, "nn::Bilinear<In1, In2, Out>: sizes must be positive");

 public:
  explicit Bilinear(bool bias = true) : Bilinear<>(In1, In2, Out, bias) {}
};

Bilinear(int64_t, int64_t, int64_t, bool = true) -> Bilinear<>;

/// Returns its input.
class Identity : public Module {
 public:
  static constexpr bool elementwise = true;
  static constexpr bool keeps_axis(detail::Axis) { return true; }
  template <expression E>
  E forward(const E& x) { return x; }
  DL_MODULE(Identity)
};

/// Flattens dims start_dim..end_dim into one: (N, C, H, W) -> (N, C*H*W) by default.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  int64_t start_dim, end_dim;
  template <expression E>
  Tensor<float> forward(const E& x) { return Tensor<float>(x).flatten(start_dim, end_dim); }
  std::string extra_repr() const override {
    return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
  }
  DL_MODULE(Flatten)
};

/// Splits dim into sizes: Unflatten(1, {2, 5}) maps (N, 10) to (N, 2, 5).
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, Shape unflattened_size) : dim(dim), unflattened_size(unflattened_size) {}
  int64_t dim;
  Shape unflattened_size;
  template <expression E>
  Tensor<float> forward(const E& x) { return Tensor<float>(x).unflatten(dim, unflattened_size); }
  DL_API std::string extra_repr() const override;
  DL_MODULE(Unflatten)
};

// ------------------------------------------------------------------------------ implementation

namespace detail {
/// "(2, 5)", "(10,)": a Python tuple.
DL_API std::string py_tuple(const Shape& s);
}  // namespace detail

}  // namespace dl::nn

#if DL_HEADER_ONLY
#include "linear-inl.hpp"
#endif
