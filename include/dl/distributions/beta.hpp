// dl/distributions/beta.hpp — Beta(concentration1, concentration0), torch.distributions.Beta.
#pragma once

#include "gamma.hpp"

namespace dl::distributions {

/// The beta distribution on [0, 1] with density x^(c1-1) (1-x)^(c0-1) / B(c1, c0). rsample is
/// g1 / (g1 + g0) for standard-gamma draws g1, g0, differentiable in both concentrations through
/// the gammas' implicit gradients (PyTorch differentiates its Dirichlet draw directly; the two
/// pathwise gradients agree in expectation, not draw by draw). Validation errors name the
/// Dirichlet and its stacked `concentration`, as PyTorch's do.
template <scalar_type T = float>
class Beta : public Distribution<T> {
 public:
  Beta(Param<T> concentration1, Param<T> concentration0, std::optional<bool> validate_args = std::nullopt)
      : c1_(std::move(concentration1.value)), c0_(std::move(concentration0.value)) {
    this->init(detail::broadcast_all<T>({&c1_, &c0_}), {}, validate_args);
    if (this->validate_ && !detail::all_true(Tensor<bool>((c1_ > T(0)) & (c0_ > T(0))))) {
      const Tensor<T> both = stack(std::vector<Tensor<T>>{c1_, c0_}, -1);
      throw Error(dl::detail::cat("Expected parameter concentration (Tensor of shape ", detail::py_shape(both.shape()),
                                  ") of distribution Dirichlet(concentration: ", detail::torch_size(both.shape()),
                                  ") to satisfy the constraint IndependentConstraint(GreaterThan(lower_bound=0.0), 1), "
                                  "but found invalid values:\n",
                                  detail::value_text(both)));
    }
  }
  const Tensor<T>& concentration1() const { return c1_; }
  const Tensor<T>& concentration0() const { return c0_; }
  Beta expand(const Shape& batch_shape) const { return Beta(c1_.expand(batch_shape), c0_.expand(batch_shape), false); }

  std::string name() const override { return "Beta"; }
  /// Empty, as PyTorch's repr "Beta()" (its parameters live in an inner Dirichlet).
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return {}; }
  bool has_rsample() const override { return true; }
  Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    const Shape s = this->extended_shape(sample_shape);
    const Tensor<T> g1 = standard_gamma(c1_, s, gen), g0 = standard_gamma(c0_, s, gen);
    return dl::clamp(g1 / (g1 + g0), std::numeric_limits<T>::min(), T(1 - detail::eps_of<T>));
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    this->validate_sample(value, "Interval(lower_bound=0.0, upper_bound=1.0)",
                          [](const Tensor<T>& x) { return Tensor<bool>((x >= T(0)) & (x <= T(1))); });
    return dl::xlogy(c1_ - T(1), value) + dl::xlogy(c0_ - T(1), T(1) - value) + dl::lgamma(c1_ + c0_) -
           dl::lgamma(c1_) - dl::lgamma(c0_);
  }
  Tensor<T> entropy() const override {
    const auto total = c1_ + c0_;
    return dl::lgamma(c1_) + dl::lgamma(c0_) - dl::lgamma(total) - (c1_ - T(1)) * dl::digamma(c1_) -
           (c0_ - T(1)) * dl::digamma(c0_) + (total - T(2)) * dl::digamma(total);
  }
  Tensor<T> mean() const override { return c1_ / (c1_ + c0_); }
  Tensor<T> mode() const override { return (c1_ - T(1)) / (c1_ + c0_ - T(2)); }
  Tensor<T> variance() const override {
    const auto total = c1_ + c0_;
    return c1_ * c0_ / (total.square() * (total + T(1)));
  }

 private:
  Tensor<T> c1_, c0_;
};

template <scalar_type T, class S>
Beta(Tensor<T>, S, std::optional<bool> = {}) -> Beta<T>;

}  // namespace dl::distributions
