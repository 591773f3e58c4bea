// dl/distributions/uniform.hpp — Uniform(low, high), torch.distributions.Uniform.
#pragma once

#include "distribution.hpp"

namespace dl::distributions {

/// The uniform distribution on [low, high); rsample is low + u * (high - low), differentiable in
/// both bounds. Errors: low >= high anywhere (when validating).
template <scalar_type T = float>
class Uniform : public Distribution<T> {
 public:
  Uniform(Param<T> low, Param<T> high, std::optional<bool> validate_args = std::nullopt)
      : low_(std::move(low.value)), high_(std::move(high.value)) {
    this->init(detail::broadcast_all<T>({&low_, &high_}), {}, validate_args);
    DL_CHECK(!this->validate_ || detail::all_true(Tensor<bool>(low_ < high_)), "Uniform is not defined when low>= high");
  }
  const Tensor<T>& low() const { return low_; }
  const Tensor<T>& high() const { return high_; }
  Uniform expand(const Shape& batch_shape) const { return Uniform(low_.expand(batch_shape), high_.expand(batch_shape), false); }

  std::string name() const override { return "Uniform"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return {{"low", low_}, {"high", high_}}; }
  bool has_rsample() const override { return true; }
  Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    return low_ + rand<T>(this->extended_shape(sample_shape), gen) * (high_ - low_);
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    validate(value);
    const Tensor<T> inside = dl::cast<T>((low_ <= value) & (high_ > value));
    return dl::log(inside) - dl::log(high_ - low_);
  }
  Tensor<T> cdf(const Tensor<T>& value) const override {
    validate(value);
    return dl::clamp((value - low_) / (high_ - low_), T(0), T(1));
  }
  Tensor<T> icdf(const Tensor<T>& value) const override { return value * (high_ - low_) + low_; }
  Tensor<T> entropy() const override { return dl::log(high_ - low_); }
  Tensor<T> mean() const override { return (high_ + low_) / T(2); }
  Tensor<T> mode() const override { return full<T>(this->batch_shape_, std::numeric_limits<T>::quiet_NaN()); }
  Tensor<T> stddev() const override { return (high_ - low_) / T(3.46410161513775458705); }  // sqrt(12)
  Tensor<T> variance() const override { return (high_ - low_).square() / T(12); }
  /// Repr of the support, Interval(lower_bound=0.0, upper_bound=1.0).
  std::string support() const {
    return "Interval(lower_bound=" + detail::value_text(low_) + ", upper_bound=" + detail::value_text(high_) + ")";
  }

 private:
  void validate(const Tensor<T>& v) const {
    this->validate_sample(v, support(), [&](const Tensor<T>& x) { return Tensor<bool>((low_ <= x) & (x <= high_)); });
  }
  Tensor<T> low_, high_;
};

template <scalar_type T, class S>
Uniform(Tensor<T>, S, std::optional<bool> = {}) -> Uniform<T>;

}  // namespace dl::distributions
