// dl/distributions/normal.hpp — Normal(loc, scale), torch.distributions.Normal.
#pragma once

#include "distribution.hpp"

namespace dl::distributions {

/// The normal distribution N(loc, scale^2); loc and scale broadcast to batch_shape. rsample is
/// loc + scale * eps (differentiable in both). Errors: scale <= 0 (when validating).
template <scalar_type T = float>
class Normal : public Distribution<T> {
 public:
  Normal(Param<T> loc, Param<T> scale, std::optional<bool> validate_args = std::nullopt)
      : loc_(std::move(loc.value)), scale_(std::move(scale.value)) {
    this->init(detail::broadcast_all<T>({&loc_, &scale_}), {}, validate_args);
    this->check_param("loc", loc_, "Real()", Tensor<bool>(loc_ == loc_));
    this->check_param("scale", scale_, "GreaterThan(lower_bound=0.0)", Tensor<bool>(scale_ > T(0)));
  }
  const Tensor<T>& loc() const { return loc_; }
  const Tensor<T>& scale() const { return scale_; }
  /// The same distribution with parameters expanded to batch_shape.
  Normal expand(const Shape& batch_shape) const { return Normal(loc_.expand(batch_shape), scale_.expand(batch_shape), false); }

  std::string name() const override { return "Normal"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return {{"loc", loc_}, {"scale", scale_}}; }
  bool has_rsample() const override { return true; }
  Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    return loc_ + randn<T>(this->extended_shape(sample_shape), gen) * scale_;
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    validate(value);
    return -((value - loc_).square() / (scale_.square() * T(2))) - dl::log(scale_) - T(0.91893853320467274178);
  }
  Tensor<T> cdf(const Tensor<T>& value) const override {
    validate(value);
    return T(0.5) * (T(1) + dl::erf((value - loc_) / (scale_ * T(std::numbers::sqrt2))));
  }
  Tensor<T> icdf(const Tensor<T>& value) const override {
    return loc_ + scale_ * dl::erfinv(value * T(2) - T(1)) * T(std::numbers::sqrt2);
  }
  Tensor<T> entropy() const override { return T(1.41893853320467274178) + dl::log(scale_); }
  Tensor<T> mean() const override { return loc_; }
  Tensor<T> mode() const override { return loc_; }
  Tensor<T> stddev() const override { return scale_; }
  Tensor<T> variance() const override { return scale_.square(); }

 private:
  void validate(const Tensor<T>& v) const {
    this->validate_sample(v, "Real()", [](const Tensor<T>& x) { return Tensor<bool>(x == x); });
  }
  Tensor<T> loc_, scale_;
};

template <scalar_type T, class S>
Normal(Tensor<T>, S, std::optional<bool> = {}) -> Normal<T>;

}  // namespace dl::distributions
