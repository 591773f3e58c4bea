// dl/distributions/independent.hpp — Independent(base, reinterpreted_batch_ndims),
// torch.distributions.Independent.
#pragma once

#include <memory>

#include "distribution.hpp"

namespace dl::distributions {

/// Reinterprets the rightmost n batch dims of a distribution as event dims: log_prob and entropy
/// sum over them. Holds a copy of the base. Errors: n > base.batch_shape().size().
template <scalar_type T = float, scalar_type V = T>
class Independent : public Distribution<T, V> {
 public:
  template <class D>
    requires std::derived_from<D, Distribution<T, V>>
  Independent(const D& base, int64_t reinterpreted_batch_ndims, std::optional<bool> validate_args = std::nullopt)
      : base_(std::make_shared<D>(base)), n_(reinterpreted_batch_ndims) {
    const Shape& b = base.batch_shape();
    DL_CHECK(n_ >= 0 && n_ <= int64_t(b.size()), "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual ",
             n_, " vs ", b.size());
    const int split = b.size() - int(n_);
    Shape batch, event;
    for (int i = 0; i < b.size(); ++i) (i < split ? batch : event).push_back(b[i]);
    this->init(batch, detail::cat_shapes(event, base.event_shape()), validate_args.value_or(base.validate_args()));
  }
  const Distribution<T, V>& base_dist() const { return *base_; }
  int64_t reinterpreted_batch_ndims() const { return n_; }

  std::string name() const override { return "Independent"; }
  std::string repr() const override { return dl::detail::cat("Independent(", base_->repr(), ", ", n_, ")"); }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return {}; }
  bool has_rsample() const override { return base_->has_rsample(); }
  Tensor<V> sample(const Shape& s = {}, Generator* gen = nullptr) const override { return base_->sample(s, gen); }
  Tensor<T> rsample(const Shape& s = {}, Generator* gen = nullptr) const override { return base_->rsample(s, gen); }
  Tensor<T> log_prob(const Tensor<V>& value) const override {
    return detail::sum_rightmost(base_->log_prob(value), int(n_));
  }
  Tensor<T> entropy() const override { return detail::sum_rightmost(base_->entropy(), int(n_)); }
  Tensor<T> mean() const override { return base_->mean(); }
  Tensor<V> mode() const override { return base_->mode(); }
  Tensor<T> variance() const override { return base_->variance(); }

 private:
  std::shared_ptr<const Distribution<T, V>> base_;
  int64_t n_;
};

template <class D>
Independent(const D&, int64_t, std::optional<bool> = {}) -> Independent<typename D::param_type, typename D::value_type>;

}  // namespace dl::distributions
