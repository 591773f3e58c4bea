// dl/distributions/exponential.hpp — Exponential(rate), torch.distributions.Exponential.
#pragma once

#include "distribution.hpp"

namespace dl::distributions {

/// The exponential distribution with density rate * exp(-rate x) on x >= 0; rsample is
/// -log(1 - u) / rate, differentiable in rate. Errors: rate <= 0 (when validating).
template <scalar_type T = float>
class Exponential : public Distribution<T> {
 public:
  explicit Exponential(Param<T> rate, std::optional<bool> validate_args = std::nullopt) : rate_(std::move(rate.value)) {
    this->init(rate_.shape(), {}, validate_args);
    this->check_param("rate", rate_, "GreaterThan(lower_bound=0.0)", Tensor<bool>(rate_ > T(0)));
  }
  const Tensor<T>& rate() const { return rate_; }
  Exponential expand(const Shape& batch_shape) const { return Exponential(rate_.expand(batch_shape), false); }

  std::string name() const override { return "Exponential"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return {{"rate", rate_}}; }
  bool has_rsample() const override { return true; }
  Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    return -dl::log1p(-rand<T>(this->extended_shape(sample_shape), gen)) / rate_;
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    validate(value);
    return dl::log(rate_) - rate_ * value;
  }
  Tensor<T> cdf(const Tensor<T>& value) const override {
    validate(value);
    return T(1) - dl::exp(-rate_ * value);
  }
  Tensor<T> icdf(const Tensor<T>& value) const override { return -dl::log1p(-value) / rate_; }
  Tensor<T> entropy() const override { return T(1) - dl::log(rate_); }
  Tensor<T> mean() const override { return dl::reciprocal(rate_); }
  Tensor<T> mode() const override { return zeros<T>(rate_.shape()); }
  Tensor<T> stddev() const override { return dl::reciprocal(rate_); }
  Tensor<T> variance() const override { return dl::pow(rate_, -2); }

 private:
  void validate(const Tensor<T>& v) const {
    this->validate_sample(v, "GreaterThanEq(lower_bound=0.0)", [](const Tensor<T>& x) { return Tensor<bool>(x >= T(0)); });
  }
  Tensor<T> rate_;
};

template <scalar_type T>
Exponential(Tensor<T>, std::optional<bool> = {}) -> Exponential<T>;

}  // namespace dl::distributions
