// dl/distributions/laplace.hpp — Laplace(loc, scale), torch.distributions.Laplace.
#pragma once

#include "distribution.hpp"

namespace dl::distributions {

/// The Laplace distribution with density exp(-|x - loc| / scale) / (2 scale); rsample is the
/// inverse cdf of a uniform draw, differentiable in loc and scale. Errors: scale <= 0.
template <scalar_type T = float>
class Laplace : public Distribution<T> {
 public:
  Laplace(Param<T> loc, Param<T> scale, std::optional<bool> validate_args = std::nullopt)
      : loc_(std::move(loc.value)), scale_(std::move(scale.value)) {
    this->init(detail::broadcast_all<T>({&loc_, &scale_}), {}, validate_args);
    this->check_param("loc", loc_, "Real()", Tensor<bool>(loc_ == loc_));
    this->check_param("scale", scale_, "GreaterThan(lower_bound=0.0)", Tensor<bool>(scale_ > T(0)));
  }
  const Tensor<T>& loc() const { return loc_; }
  const Tensor<T>& scale() const { return scale_; }
  Laplace expand(const Shape& batch_shape) const { return Laplace(loc_.expand(batch_shape), scale_.expand(batch_shape), false); }

  std::string name() const override { return "Laplace"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return {{"loc", loc_}, {"scale", scale_}}; }
  bool has_rsample() const override { return true; }
  Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    // u uniform on (-1, 1): PyTorch's open interval (eps - 1, 1) keeps log1p(-|u|) finite.
    const Tensor<T> u = rand<T>(this->extended_shape(sample_shape), gen) * T(2 - detail::eps_of<T>) - T(1 - detail::eps_of<T>);
    return loc_ - scale_ * dl::sign(u) * dl::log1p(-dl::abs(u));
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    validate(value);
    return -dl::log(scale_ * T(2)) - dl::abs(value - loc_) / scale_;
  }
  Tensor<T> cdf(const Tensor<T>& value) const override {
    validate(value);
    return T(0.5) - T(0.5) * dl::sign(value - loc_) * dl::expm1(-dl::abs(value - loc_) / scale_);
  }
  Tensor<T> icdf(const Tensor<T>& value) const override {
    const auto term = value - T(0.5);
    return loc_ - scale_ * dl::sign(term) * dl::log1p(dl::abs(term) * T(-2));
  }
  Tensor<T> entropy() const override { return T(1) + dl::log(scale_ * T(2)); }
  Tensor<T> mean() const override { return loc_; }
  Tensor<T> mode() const override { return loc_; }
  Tensor<T> stddev() const override { return scale_ * T(std::numbers::sqrt2); }
  Tensor<T> variance() const override { return scale_.square() * T(2); }

 private:
  void validate(const Tensor<T>& v) const {
    this->validate_sample(v, "Real()", [](const Tensor<T>& x) { return Tensor<bool>(x == x); });
  }
  Tensor<T> loc_, scale_;
};

template <scalar_type T, class S>
Laplace(Tensor<T>, S, std::optional<bool> = {}) -> Laplace<T>;

}  // namespace dl::distributions
