// dl/distributions/gamma.hpp — Gamma(concentration, rate), torch.distributions.Gamma, and the
// standard-gamma sampler with its implicit reparameterisation gradient (shared with Beta).
#pragma once

#include "distribution.hpp"

namespace dl::distributions {

/// The gamma distribution with density rate^a x^(a-1) exp(-rate x) / Gamma(a), a = concentration.
/// rsample is differentiable in both parameters: the gradient of a standard-gamma draw x with
/// respect to a is the implicit reparameterisation gradient -(dF/da) / (dF/dx) of its cdf F
/// (exact up to a finite difference in a; PyTorch uses a series approximation of the same value).
/// Errors: concentration <= 0 or rate <= 0 (when validating).
template <scalar_type T = float>
class Gamma : public Distribution<T> {
 public:
  Gamma(Param<T> concentration, Param<T> rate, std::optional<bool> validate_args = std::nullopt)
      : concentration_(std::move(concentration.value)), rate_(std::move(rate.value)) {
    this->init(detail::broadcast_all<T>({&concentration_, &rate_}), {}, validate_args);
    this->check_param("concentration", concentration_, "GreaterThan(lower_bound=0.0)", Tensor<bool>(concentration_ > T(0)));
    this->check_param("rate", rate_, "GreaterThan(lower_bound=0.0)", Tensor<bool>(rate_ > T(0)));
  }
  const Tensor<T>& concentration() const { return concentration_; }
  const Tensor<T>& rate() const { return rate_; }
  Gamma expand(const Shape& batch_shape) const {
    return Gamma(concentration_.expand(batch_shape), rate_.expand(batch_shape), false);
  }

  std::string name() const override { return "Gamma"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override {
    return {{"concentration", concentration_}, {"rate", rate_}};
  }
  bool has_rsample() const override { return true; }
  Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override;
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    this->validate_sample(value, "GreaterThanEq(lower_bound=0.0)", [](const Tensor<T>& x) { return Tensor<bool>(x >= T(0)); });
    return dl::xlogy(concentration_, rate_) + dl::xlogy(concentration_ - T(1), value) - rate_ * value - dl::lgamma(concentration_);
  }
  Tensor<T> entropy() const override {
    return concentration_ - dl::log(rate_) + dl::lgamma(concentration_) + (T(1) - concentration_) * dl::digamma(concentration_);
  }
  Tensor<T> mean() const override { return concentration_ / rate_; }
  Tensor<T> mode() const override { return dl::clamp_min((concentration_ - T(1)) / rate_, T(0)); }
  Tensor<T> variance() const override { return concentration_ / rate_.square(); }

 private:
  Tensor<T> concentration_, rate_;
};

template <scalar_type T, class S>
Gamma(Tensor<T>, S, std::optional<bool> = {}) -> Gamma<T>;

/// Standard-gamma draws of shape `shape` with concentration alpha (broadcast to it), clamped below
/// at the smallest normal number as PyTorch does; differentiable in alpha (implicit gradient).
template <scalar_type T>
Tensor<T> standard_gamma(const Tensor<T>& alpha, const Shape& shape, Generator* gen = nullptr);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// One standard-gamma draw (Marsaglia and Tsang; alpha < 1 through alpha + 1 and u^(1/alpha)).
inline double sample_standard_gamma(double alpha, ElementStream& s) {
  double boost = 1;
  if (alpha < 1) {
    boost = std::pow(1 - s.uniform(), 1 / alpha);
    alpha += 1;
  }
  const double d = alpha - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  while (true) {
    double x, v;
    do {
      x = s.normal();
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1 - s.uniform();
    if (u < 1 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v * boost;
  }
}

/// Regularised lower incomplete gamma P(a, x) (series below a + 1, continued fraction above).
inline double gammainc(double a, double x) {
  if (!(x > 0)) return 0;
  if (std::isinf(x)) return 1;
  const double log_front = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1) {
    double ap = a, term = 1 / a, sum = term;
    for (int n = 0; n < 100000 && std::abs(term) > std::abs(sum) * 1e-17; ++n) {
      ap += 1;
      term *= x / ap;
      sum += term;
    }
    return sum * std::exp(log_front);
  }
  constexpr double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::abs(del - 1) < 1e-16) break;
  }
  return 1 - std::exp(log_front) * h;
}

/// dx/dalpha of a standard-gamma draw x: -(dP/dalpha) / (dP/dx) at (alpha, x).
inline double standard_gamma_grad(double x, double alpha) {
  const double h = std::min(1e-6 * std::max(1.0, alpha), 0.5 * alpha);
  const double dp_da = (gammainc(alpha + h, x) - gammainc(alpha - h, x)) / (2 * h);
  const double density = std::exp((alpha - 1) * std::log(x) - x - std::lgamma(alpha));
  return density > 0 ? -dp_da / density : 0.0;
}

/// Attaches the implicit gradient: forward returns x, backward g * dx/dalpha.
template <class T>
struct StandardGammaReparam : autograd::Function<StandardGammaReparam<T>> {
  static Tensor<T> forward(autograd::Context& ctx, const Tensor<T>& alpha, const Tensor<T>& x) {
    ctx.save_for_backward(alpha, x);
    return x.clone();
  }
  static std::vector<Tensor<T>> backward(autograd::Context& ctx, const Tensor<T>& g) {
    const Tensor<T> alpha = ctx.saved<T>(0).contiguous(), x = ctx.saved<T>(1).contiguous();
    Tensor<T> grad = empty<T>(x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) grad.data()[i] = T(standard_gamma_grad(double(x.data()[i]), double(alpha.data()[i])));
    return {Tensor<T>(g * grad), Tensor<T>()};
  }
};

}  // namespace detail

template <scalar_type T>
Tensor<T> standard_gamma(const Tensor<T>& alpha, const Shape& shape, Generator* gen) {
  const std::vector<double> a = detail::doubles(alpha, shape);
  Tensor<T> x = empty<T>(shape);
  T* px = x.data();
  detail::for_each_stream(gen, x.numel(), [&](int64_t i, detail::ElementStream& s) {
    px[i] = std::max(T(detail::sample_standard_gamma(a[size_t(i)], s)), std::numeric_limits<T>::min());
  });
  if (!(alpha.requires_grad() && autograd::is_grad_enabled())) return x;
  return detail::StandardGammaReparam<T>::apply(alpha.expand(shape), x);
}

template <scalar_type T>
Tensor<T> Gamma<T>::rsample(const Shape& sample_shape, Generator* gen) const {
  const Tensor<T> x = standard_gamma(concentration_, this->extended_shape(sample_shape), gen);
  return dl::clamp_min(x / rate_, std::numeric_limits<T>::min());
}

}  // namespace dl::distributions
