// dl/distributions/categorical.hpp — Categorical(probs | logits), torch.distributions.Categorical.
#pragma once

#include "distribution.hpp"

namespace dl::distributions {

/// A distribution over the indices 0 .. K-1 of the last dim of probs (normalised to sum to 1) or
/// logits (normalised by logsumexp). Values are int64 tensors; batch_shape is the parameter's
/// shape without its last dim. Categorical(p) takes probs; Categorical<T>({.logits = l}) logits.
/// Errors: both or neither given, a 0-d parameter, probs not on the simplex after normalisation.
template <scalar_type T = float>
class Categorical : public Distribution<T, int64_t> {
 public:
  Categorical(Tensor<T> probs, std::optional<bool> validate_args = std::nullopt)  // NOLINT
      : Categorical(ProbsOrLogits<T>{.probs = std::move(probs)}, validate_args) {}
  Categorical(ProbsOrLogits<T> p, std::optional<bool> validate_args = std::nullopt) {
    DL_CHECK(p.probs.defined() != p.logits.defined(), "Either `probs` or `logits` must be specified, but not both.");
    from_probs_ = p.probs.defined();
    if (from_probs_) {
      DL_CHECK(p.probs.dim() >= 1, "`probs` parameter must be at least one-dimensional.");
      probs_ = p.probs / p.probs.sum(-1, true);
      logits_ = dl::log(detail::clamp_probs(probs_));
    } else {
      DL_CHECK(p.logits.dim() >= 1, "`logits` parameter must be at least one-dimensional.");
      logits_ = p.logits - p.logits.logsumexp(-1, true);
      probs_ = dl::exp(logits_);
    }
    const Shape& s = probs_.shape();
    this->init(detail::drop_last(s, 1), {}, validate_args);
    if (from_probs_) {
      const Tensor<bool> ok = Tensor<bool>((probs_ >= T(0)).all(-1) & (dl::abs(probs_.sum(-1) - T(1)) < T(1e-6)));
      this->check_param("probs", probs_, "Simplex()", ok);
    } else {
      this->check_param("logits", logits_, "IndependentConstraint(Real(), 1)", Tensor<bool>(logits_ == logits_));
    }
  }
  const Tensor<T>& probs() const { return probs_; }
  const Tensor<T>& logits() const { return logits_; }
  int64_t num_events() const { return probs_.size(-1); }

  std::string name() const override { return "Categorical"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override {
    if (from_probs_) return {{"probs", probs_}};
    return {{"logits", logits_}};
  }
  /// Indices drawn by inversion of each row's cumulative probabilities.
  Tensor<int64_t> sample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override;
  Tensor<T> log_prob(const Tensor<int64_t>& value) const override {
    const int64_t k = num_events();
    this->validate_sample(value, dl::detail::cat("IntegerInterval(lower_bound=0, upper_bound=", k - 1, ")"),
                          [k](const Tensor<int64_t>& x) { return Tensor<bool>((x >= int64_t(0)) & (x <= k - 1)); });
    const Shape b = broadcast_shapes(value.shape(), this->batch_shape_);
    const Tensor<int64_t> idx = value.expand(b).unsqueeze(-1).contiguous();
    return logits_.expand(detail::cat_shapes(b, {k})).gather(-1, idx).squeeze(-1);
  }
  Tensor<T> entropy() const override {
    return Tensor<T>(-(dl::clamp_min(logits_, std::numeric_limits<T>::lowest()) * probs_).sum(-1));
  }
  Tensor<T> mean() const override { return full<T>(this->batch_shape_, std::numeric_limits<T>::quiet_NaN()); }
  Tensor<int64_t> mode() const override { return probs_.argmax(-1); }
  Tensor<T> variance() const override { return full<T>(this->batch_shape_, std::numeric_limits<T>::quiet_NaN()); }

 private:
  Tensor<T> probs_, logits_;
  bool from_probs_ = true;
};

template <scalar_type T>
Categorical(Tensor<T>, std::optional<bool> = {}) -> Categorical<T>;

template <scalar_type T>
Tensor<int64_t> Categorical<T>::sample(const Shape& sample_shape, Generator* gen) const {
  const int64_t k = num_events();
  const Shape out_shape = this->extended_shape(sample_shape);
  const std::vector<double> p = detail::doubles(probs_, detail::cat_shapes(out_shape, {k}));
  Tensor<int64_t> out = empty<int64_t>(out_shape);
  int64_t* po = out.data();
  detail::for_each_stream(gen, out.numel(), [&](int64_t i, detail::ElementStream& s) {
    const double* row = p.data() + i * k;
    double total = 0;
    for (int64_t j = 0; j < k; ++j) total += row[j];
    const double u = s.uniform() * total;
    double c = 0;
    int64_t pick = k - 1;
    while (pick > 0 && row[pick] == 0) --pick;  // rounding never lands on a zero-probability tail
    for (int64_t j = 0; j < k; ++j) {
      c += row[j];
      if (u < c && row[j] > 0) {
        pick = j;
        break;
      }
    }
    po[i] = pick;
  });
  return out;
}

}  // namespace dl::distributions
