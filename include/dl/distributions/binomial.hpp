// dl/distributions/binomial.hpp — Binomial(total_count, probs | logits), torch.distributions.Binomial.
#pragma once

#include "sampling.hpp"

namespace dl::distributions {

/// Number of successes in total_count Bernoulli trials (as T). Binomial(n, p) takes probs,
/// Binomial<T>(n, {.logits = l}) logits; total_count broadcasts with the parameter. No rsample.
/// Errors: total_count not a non-negative integer, probs outside [0, 1] (when validating); entropy
/// with unequal total counts (as PyTorch).
template <scalar_type T = float>
class Binomial : public Distribution<T> {
 public:
  Binomial(Param<T> total_count, Param<T> probs, std::optional<bool> validate_args = std::nullopt)
      : Binomial(std::move(total_count), ProbsOrLogits<T>{.probs = std::move(probs.value)}, validate_args) {}
  Binomial(Param<T> total_count, ProbsOrLogits<T> p, std::optional<bool> validate_args = std::nullopt)
      : total_count_(std::move(total_count.value)) {
    DL_CHECK(p.probs.defined() != p.logits.defined(), "Either `probs` or `logits` must be specified, but not both.");
    from_probs_ = p.probs.defined();
    Tensor<T>& given = from_probs_ ? p.probs : p.logits;
    this->init(detail::broadcast_all<T>({&total_count_, &given}), {}, validate_args);
    if (from_probs_) {
      probs_ = given;
      logits_ = dl::log(detail::clamp_probs(probs_)) - dl::log1p(-detail::clamp_probs(probs_));
    } else {
      logits_ = given;
      probs_ = dl::sigmoid(logits_);
    }
    this->check_param("total_count", total_count_, "IntegerGreaterThan(lower_bound=0)",
                      Tensor<bool>((total_count_ >= T(0)) & (dl::floor(total_count_) == total_count_)));
    if (from_probs_)
      this->check_param("probs", probs_, "Interval(lower_bound=0.0, upper_bound=1.0)", Tensor<bool>((probs_ >= T(0)) & (probs_ <= T(1))));
    else
      this->check_param("logits", logits_, "Real()", Tensor<bool>(logits_ == logits_));
  }
  const Tensor<T>& total_count() const { return total_count_; }
  const Tensor<T>& probs() const { return probs_; }
  const Tensor<T>& logits() const { return logits_; }

  std::string name() const override { return "Binomial"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override {
    if (from_probs_) return {{"total_count", total_count_}, {"probs", probs_}};
    return {{"total_count", total_count_}, {"logits", logits_}};
  }
  Tensor<T> sample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    const Shape s = this->extended_shape(sample_shape);
    const std::vector<double> n = detail::doubles(total_count_, s), p = detail::doubles(probs_, s);
    Tensor<T> out = empty<T>(s);
    T* po = out.data();
    detail::for_each_stream(gen, out.numel(), [&](int64_t i, detail::ElementStream& st) {
      po[i] = T(detail::sample_binomial(n[size_t(i)], p[size_t(i)], st));
    });
    return out;
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    this->validate_sample(value, "IntegerInterval(lower_bound=0, upper_bound=" + detail::value_text(total_count_) + ")",
                          [&](const Tensor<T>& x) {
                            return Tensor<bool>((x >= T(0)) & (x <= total_count_) & (dl::floor(x) == x));
                          });
    const auto& n = total_count_;
    // n * max(logits, 0) with PyTorch's subgradient 1/2 at 0 (its _clamp_by_zero).
    const auto clamp0 = (dl::clamp_min(logits_, T(0)) + logits_ - dl::clamp_max(logits_, T(0))) / T(2);
    const auto normalize = n * clamp0 + n * dl::log1p(dl::exp(-dl::abs(logits_))) - dl::lgamma(n + T(1));
    return value * logits_ - dl::lgamma(value + T(1)) - dl::lgamma(n - value + T(1)) - normalize;
  }
  Tensor<T> entropy() const override {
    const Tensor<T> tc = total_count_.detach().contiguous();
    const T n = tc.numel() ? tc.max().item() : T(0);
    DL_CHECK(tc.numel() == 0 || tc.min().item() == n, "Inhomogeneous total count not supported by `entropy`.");
    Shape s{int64_t(n) + 1};
    for (size_t d = 0; d < this->batch_shape_.size(); ++d) s.push_back(1);
    const Tensor<T> support = arange<T>(0, int64_t(n) + 1).view(s);
    const Tensor<T> lp = log_prob(support);
    return Tensor<T>(-(dl::exp(lp) * lp).sum(0));
  }
  Tensor<T> mean() const override { return total_count_ * probs_; }
  Tensor<T> mode() const override { return dl::minimum(dl::floor((total_count_ + T(1)) * probs_), total_count_); }
  Tensor<T> variance() const override { return total_count_ * probs_ * (T(1) - probs_); }

 private:
  Tensor<T> total_count_, probs_, logits_;
  bool from_probs_ = true;
};

template <scalar_type T, class N>
Binomial(N, Tensor<T>, std::optional<bool> = {}) -> Binomial<T>;

}  // namespace dl::distributions
