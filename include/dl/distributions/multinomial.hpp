// dl/distributions/multinomial.hpp — Multinomial(total_count, probs | logits),
// torch.distributions.Multinomial.
#pragma once

#include <cmath>

#include "binomial.hpp"
#include "categorical.hpp"

namespace dl::distributions {

/// Counts (as T) of total_count draws from a Categorical over the last dim of probs or logits;
/// event_shape is [K]. Validation of probs/logits is the Categorical's (its messages name it, as
/// PyTorch's). Errors: total_count < 0. No rsample.
template <scalar_type T = float>
class Multinomial : public Distribution<T> {
 public:
  Multinomial(int64_t total_count, Tensor<T> probs, std::optional<bool> validate_args = std::nullopt)
      : Multinomial(total_count, ProbsOrLogits<T>{.probs = std::move(probs)}, validate_args) {}
  Multinomial(int64_t total_count, ProbsOrLogits<T> p, std::optional<bool> validate_args = std::nullopt)
      : total_count_(total_count), categorical_(std::move(p), validate_args) {
    DL_CHECK(total_count >= 0, "Multinomial: total_count must be non-negative, got ", total_count);
    const Shape& s = categorical_.probs().shape();
    this->init(categorical_.batch_shape(), {s.back()}, validate_args);
  }
  int64_t total_count() const { return total_count_; }
  const Tensor<T>& probs() const { return categorical_.probs(); }
  const Tensor<T>& logits() const { return categorical_.logits(); }

  std::string name() const override { return "Multinomial"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return categorical_.params(); }
  Tensor<T> sample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    const Shape s = this->extended_shape(sample_shape);
    const int64_t k = s.back();
    const Tensor<int64_t> picks = categorical_.sample(detail::cat_shapes({total_count_}, sample_shape), gen);  // [n, ..., batch]
    Tensor<T> out = zeros<T>(s);
    const int64_t rows = out.numel() / std::max<int64_t>(k, 1);
    const int64_t* pp = picks.data();
    T* po = out.data();
    for (int64_t t = 0; t < total_count_; ++t)
      for (int64_t r = 0; r < rows; ++r) po[r * k + pp[t * rows + r]] += T(1);
    return out;
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    const T n = T(total_count_);
    this->validate_sample(value, "Multinomial()", [n](const Tensor<T>& x) {
      return Tensor<bool>((x >= T(0)).all(-1) & (x.sum(-1) <= n));
    });
    const Tensor<T> logits = dl::clamp_min(logits_expanded(value), std::numeric_limits<T>::lowest());
    const Tensor<T> log_powers = dl::where((value == T(0)) & (logits == -std::numeric_limits<T>::infinity()), T(0), logits * value).sum(-1);
    const Tensor<T> total = value.sum(-1);
    return Tensor<T>(dl::lgamma(total + T(1)) - dl::lgamma(value + T(1)).sum(-1) + log_powers);
  }
  /// PyTorch's formula: n H(Categorical(p)) - log n! + sum_k E[log x_k!] with x_k ~ Binomial(n, p_k),
  /// the expectation summed over x = 0..n (n + 1 fused passes over probs).
  Tensor<T> entropy() const override {
    const int64_t n = total_count_;
    const Tensor<T>& p = probs();
    const Tensor<T> log_p = dl::log(p), log_1mp = dl::log1p(-p);
    Tensor<T> expected = zeros<T>(p.shape());
    for (int64_t x = 1; x <= n; ++x) {  // x = 0 adds log 0! = 0
      const double log_choose = std::lgamma(double(n) + 1) - std::lgamma(double(x) + 1) - std::lgamma(double(n - x) + 1);
      // (n - x) log(1 - p) is left out at x = n, so that p = 1 gives pmf 1 there, not 0 * -inf.
      const Tensor<T> log_pmf = x < n ? Tensor<T>(log_p * T(x) + log_1mp * T(n - x) + T(log_choose)) : Tensor<T>(log_p * T(x));
      expected = expected + dl::exp(log_pmf) * T(std::lgamma(double(x) + 1));
    }
    return Tensor<T>(categorical_.entropy() * T(n) - T(std::lgamma(double(n) + 1)) + expected.sum(-1));
  }
  Tensor<T> mean() const override { return probs() * T(total_count_); }
  Tensor<T> variance() const override { return probs() * (T(1) - probs()) * T(total_count_); }

 private:
  Tensor<T> logits_expanded(const Tensor<T>& value) const {
    return logits().expand(broadcast_shapes(value.shape(), logits().shape()));
  }
  int64_t total_count_;
  Categorical<T> categorical_;
};

template <scalar_type T>
Multinomial(int64_t, Tensor<T>, std::optional<bool> = {}) -> Multinomial<T>;

}  // namespace dl::distributions
