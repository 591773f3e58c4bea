// dl/distributions/bernoulli.hpp — Bernoulli(probs | logits), torch.distributions.Bernoulli.
#pragma once

#include "sampling.hpp"
#include "distribution.hpp"

namespace dl::distributions {

/// Bernoulli draws (0 or 1, as T) with probability probs = sigmoid(logits). Bernoulli(p) takes
/// probs; Bernoulli<T>({.logits = l}) takes logits. No rsample (as PyTorch). Errors: both or
/// neither given, probs outside [0, 1] (when validating).
template <scalar_type T = float>
class Bernoulli : public Distribution<T> {
 public:
  Bernoulli(Param<T> probs, std::optional<bool> validate_args = std::nullopt)  // NOLINT
      : Bernoulli(ProbsOrLogits<T>{.probs = std::move(probs.value)}, validate_args) {}
  Bernoulli(ProbsOrLogits<T> p, std::optional<bool> validate_args = std::nullopt) {
    DL_CHECK(p.probs.defined() != p.logits.defined(), "Either `probs` or `logits` must be specified, but not both.");
    from_probs_ = p.probs.defined();
    if (from_probs_) {
      probs_ = p.probs;
      logits_ = dl::log(detail::clamp_probs(probs_)) - dl::log1p(-detail::clamp_probs(probs_));
    } else {
      logits_ = p.logits;
      probs_ = dl::sigmoid(logits_);
    }
    this->init(probs_.shape(), {}, validate_args);
    if (from_probs_)
      this->check_param("probs", probs_, "Interval(lower_bound=0.0, upper_bound=1.0)", Tensor<bool>((probs_ >= T(0)) & (probs_ <= T(1))));
    else
      this->check_param("logits", logits_, "Real()", Tensor<bool>(logits_ == logits_));
  }
  const Tensor<T>& probs() const { return probs_; }
  const Tensor<T>& logits() const { return logits_; }

  std::string name() const override { return "Bernoulli"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override {
    if (from_probs_) return {{"probs", probs_}};
    return {{"logits", logits_}};
  }
  Tensor<T> sample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    return dl::bernoulli(probs_.detach().expand(this->extended_shape(sample_shape)), gen);
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    this->validate_sample(value, "Boolean()", [](const Tensor<T>& x) { return Tensor<bool>((x == T(0)) | (x == T(1))); });
    return -(dl::relu(logits_) - logits_ * value + dl::log1p(dl::exp(-dl::abs(logits_))));
  }
  Tensor<T> entropy() const override {
    return dl::relu(logits_) - logits_ * probs_ + dl::log1p(dl::exp(-dl::abs(logits_)));
  }
  Tensor<T> mean() const override { return probs_; }
  Tensor<T> mode() const override {
    return dl::where(probs_ == T(0.5), std::numeric_limits<T>::quiet_NaN(), dl::cast<T>(probs_ > T(0.5)));
  }
  Tensor<T> variance() const override { return probs_ * (T(1) - probs_); }

 private:
  Tensor<T> probs_, logits_;
  bool from_probs_ = true;
};

template <scalar_type T>
Bernoulli(Tensor<T>, std::optional<bool> = {}) -> Bernoulli<T>;

}  // namespace dl::distributions
