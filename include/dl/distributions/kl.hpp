// dl/distributions/kl.hpp — kl_divergence(p, q) for the pairs torch.distributions.kl registers
// among dl's distributions: overloads on the concrete types, and a run-time dispatch for
// references to the base class (Independent's inner distributions, user code holding bases).
#pragma once

#include "bernoulli.hpp"
#include "beta.hpp"
#include "binomial.hpp"
#include "categorical.hpp"
#include "exponential.hpp"
#include "gamma.hpp"
#include "independent.hpp"
#include "laplace.hpp"
#include "multivariate_normal.hpp"
#include "normal.hpp"
#include "uniform.hpp"

namespace dl::distributions {

namespace detail {
template <class T>
constexpr T kInf = std::numeric_limits<T>::infinity();
constexpr double kEulerGamma = 0.57721566490153286061;
}  // namespace detail

// ------------------------------------------------------------------------------ same family

template <scalar_type T>
Tensor<T> kl_divergence(const Normal<T>& p, const Normal<T>& q) {
  const Tensor<T> var_ratio = (p.scale() / q.scale()).square();
  const auto t1 = ((p.loc() - q.loc()) / q.scale()).square();
  return (var_ratio + t1 - T(1) - dl::log(var_ratio)) * T(0.5);
}
template <scalar_type T>
Tensor<T> kl_divergence(const Bernoulli<T>& p, const Bernoulli<T>& q) {
  auto softplus = [](const auto& x) { return dl::relu(x) + dl::log1p(dl::exp(-dl::abs(x))); };
  const auto t1 = dl::where(p.probs() == T(0), T(0),
                            dl::where(q.probs() == T(0), detail::kInf<T>, p.probs() * (softplus(-q.logits()) - softplus(-p.logits()))));
  const auto t2 = dl::where(p.probs() == T(1), T(0),
                            dl::where(q.probs() == T(1), detail::kInf<T>,
                                      (T(1) - p.probs()) * (softplus(q.logits()) - softplus(p.logits()))));
  return t1 + t2;
}
template <scalar_type T>
Tensor<T> kl_divergence(const Beta<T>& p, const Beta<T>& q) {
  const auto sp = p.concentration1() + p.concentration0(), sq = q.concentration1() + q.concentration0();
  const auto t1 = dl::lgamma(q.concentration1()) + dl::lgamma(q.concentration0()) + dl::lgamma(sp);
  const auto t2 = dl::lgamma(p.concentration1()) + dl::lgamma(p.concentration0()) + dl::lgamma(sq);
  const auto t3 = (p.concentration1() - q.concentration1()) * dl::digamma(p.concentration1());
  const auto t4 = (p.concentration0() - q.concentration0()) * dl::digamma(p.concentration0());
  const auto t5 = (sq - sp) * dl::digamma(sp);
  return t1 - t2 + t3 + t4 + t5;
}
template <scalar_type T>
Tensor<T> kl_divergence(const Binomial<T>& p, const Binomial<T>& q) {
  const Tensor<bool> less = Tensor<bool>(p.total_count() < q.total_count());
  const Tensor<bool> any_less = less.any();
  DL_CHECK(!any_less.item(), "KL between Binomials where q.total_count > p.total_count is not implemented");
  const auto kl = p.total_count() * (p.probs() * (p.logits() - q.logits()) + dl::log1p(-p.probs()) - dl::log1p(-q.probs()));
  return dl::where(p.total_count() > q.total_count(), detail::kInf<T>, kl);
}
template <scalar_type T>
Tensor<T> kl_divergence(const Categorical<T>& p, const Categorical<T>& q) {
  const Shape s = broadcast_shapes(p.probs().shape(), q.probs().shape());
  const auto t = dl::where(p.probs().expand(s) == T(0), T(0),
                           dl::where(q.probs().expand(s) == T(0), detail::kInf<T>, p.probs() * (p.logits() - q.logits())));
  return Tensor<T>(t).sum(-1);
}
template <scalar_type T>
Tensor<T> kl_divergence(const Exponential<T>& p, const Exponential<T>& q) {
  const Tensor<T> ratio = q.rate() / p.rate();
  return -dl::log(ratio) + ratio - T(1);
}
template <scalar_type T>
Tensor<T> kl_divergence(const Gamma<T>& p, const Gamma<T>& q) {
  const auto t1 = q.concentration() * dl::log(p.rate() / q.rate());
  const auto t2 = dl::lgamma(q.concentration()) - dl::lgamma(p.concentration());
  const auto t3 = (p.concentration() - q.concentration()) * dl::digamma(p.concentration());
  const auto t4 = (q.rate() - p.rate()) * (p.concentration() / p.rate());
  return t1 + t2 + t3 + t4;
}
template <scalar_type T>
Tensor<T> kl_divergence(const Laplace<T>& p, const Laplace<T>& q) {
  const Tensor<T> scale_ratio = p.scale() / q.scale(), diff = dl::abs(p.loc() - q.loc());
  return -dl::log(scale_ratio) + diff / q.scale() + scale_ratio * dl::exp(-diff / p.scale()) - T(1);
}
template <scalar_type T>
Tensor<T> kl_divergence(const Uniform<T>& p, const Uniform<T>& q) {
  return dl::where((q.low() > p.low()) | (q.high() < p.high()), detail::kInf<T>,
                   dl::log((q.high() - q.low()) / (p.high() - p.low())));
}
/// Errors: event shapes that differ.
template <scalar_type T>
Tensor<T> kl_divergence(const MultivariateNormal<T>& p, const MultivariateNormal<T>& q) {
  DL_CHECK(p.event_shape() == q.event_shape(),
           "KL-divergence between two Multivariate Normals with different event shapes cannot be computed");
  using M = MultivariateNormal<T>;
  const Tensor<T> half_term1 = q.half_log_det() - p.half_log_det();
  const int64_t n = p.d();
  Tensor<T> term2;
  for (int64_t c = 0; c < n; ++c) {
    const Tensor<T> col = M::mahalanobis(q.scale_tril(), p.scale_tril().select(-1, c));
    term2 = c == 0 ? col : Tensor<T>(term2 + col);
  }
  const Tensor<T> term3 = M::mahalanobis(q.scale_tril(), Tensor<T>(q.loc() - p.loc()));
  return half_term1 + (term2 + term3 - T(n)) * T(0.5);
}

// ------------------------------------------------------------------------------ across families

template <scalar_type T>
Tensor<T> kl_divergence(const Laplace<T>& p, const Normal<T>& q) {
  const Tensor<T> var_normal = q.scale().square();
  const Tensor<T> ratio = p.scale().square() / var_normal;
  const auto t1 = dl::log(ratio * T(2 / std::numbers::pi)) * T(0.5);
  const auto t2 = p.loc().square() * T(0.5), t3 = p.loc() * q.loc(), t4 = q.loc().square() * T(0.5);
  return -t1 + ratio + (t2 - t3 + t4) / var_normal - T(1);
}
template <scalar_type T>
Tensor<T> kl_divergence(const Normal<T>& p, const Laplace<T>& q) {
  const Tensor<T> loc_diff = p.loc() - q.loc();
  const auto scale_ratio = p.scale() / q.scale();
  const auto ldsr = loc_diff / p.scale();
  const auto t2 = p.scale() * dl::exp(ldsr.square() * T(-0.5)) * T(0.79788456080286535588);  // sqrt(2 / pi)
  const auto t3 = loc_diff * dl::erf(ldsr * T(0.70710678118654752440));
  return -dl::log(scale_ratio) + (t2 + t3) / q.scale() - T(0.5 * (1 + std::log(0.5 * std::numbers::pi)));
}
template <scalar_type T>
Tensor<T> kl_divergence(const Exponential<T>& p, const Gamma<T>& q) {
  const Tensor<T> ratio = q.rate() / p.rate();
  return -q.concentration() * dl::log(ratio) + ratio + dl::lgamma(q.concentration()) +
         q.concentration() * T(detail::kEulerGamma) - T(1 + detail::kEulerGamma);
}
template <scalar_type T>
Tensor<T> kl_divergence(const Gamma<T>& p, const Exponential<T>& q) {
  return -p.entropy() - dl::log(q.rate()) + q.rate() * p.concentration() / p.rate();
}
template <scalar_type T>
Tensor<T> kl_divergence(const Exponential<T>& p, const Normal<T>& q) {
  const Tensor<T> var_normal = q.scale().square(), rate_sqr = p.rate().square();
  const auto t1 = dl::log(rate_sqr * var_normal * T(2 * std::numbers::pi)) * T(0.5);
  return t1 - T(1) + (dl::reciprocal(rate_sqr) - q.loc() / p.rate() + q.loc().square() * T(0.5)) / var_normal;
}
template <scalar_type T>
Tensor<T> kl_divergence(const Gamma<T>& p, const Normal<T>& q) {
  const Tensor<T> var_normal = q.scale().square(), beta_sqr = p.rate().square();
  const auto& a = p.concentration();
  const auto t1 = dl::log(beta_sqr * var_normal * T(2 * std::numbers::pi)) * T(0.5) - a - dl::lgamma(a);
  const auto t2 = (a.square() + a) * T(0.5) / beta_sqr;
  const auto t3 = q.loc() * a / p.rate();
  const auto t4 = q.loc().square() * T(0.5);
  return t1 + (a - T(1)) * dl::digamma(a) + (t2 - t3 + t4) / var_normal;
}
template <scalar_type T>
Tensor<T> kl_divergence(const Beta<T>& p, const Normal<T>& q) {
  const Tensor<T> total = p.concentration1() + p.concentration0();
  const Tensor<T> e = p.concentration1() / total, var_normal = q.scale().square();
  const auto t2 = dl::log(var_normal * T(2 * std::numbers::pi)) * T(0.5);
  const auto t3 = (e * (T(1) - e) / (total + T(1)) + e.square()) * T(0.5);
  return -p.entropy() + t2 + (t3 - q.loc() * e + q.loc().square() * T(0.5)) / var_normal;
}
template <scalar_type T>
Tensor<T> kl_divergence(const Uniform<T>& p, const Normal<T>& q) {
  const Tensor<T> width = p.high() - p.low();
  const auto t1 = dl::log(q.scale() * T(2.50662827463100050242) / width);  // sqrt(2 pi)
  const auto t2 = width.square() / T(12);
  const auto t3 = ((p.high() + p.low() - q.loc() * T(2)) / T(2)).square();
  return t1 + (t2 + t3) * T(0.5) / q.scale().square();
}

/// Pairs whose KL is infinite everywhere (p's support is not inside q's): of p's batch shape.
#define DL_KL_INFINITE(P, Q, param)                                                \
  template <scalar_type T>                                                         \
  Tensor<T> kl_divergence(const P<T>& p, const Q<T>&) {                            \
    return full<T>(p.param().shape(), std::numeric_limits<T>::infinity());         \
  }
DL_KL_INFINITE(Normal, Beta, loc)
DL_KL_INFINITE(Normal, Exponential, loc)
DL_KL_INFINITE(Normal, Gamma, loc)
DL_KL_INFINITE(Normal, Uniform, loc)
DL_KL_INFINITE(Laplace, Beta, loc)
DL_KL_INFINITE(Laplace, Exponential, loc)
DL_KL_INFINITE(Laplace, Gamma, loc)
DL_KL_INFINITE(Laplace, Uniform, loc)
DL_KL_INFINITE(Exponential, Beta, rate)
DL_KL_INFINITE(Exponential, Uniform, rate)
DL_KL_INFINITE(Gamma, Beta, concentration)
DL_KL_INFINITE(Gamma, Uniform, concentration)
#undef DL_KL_INFINITE

/// Independent pairs: KL of the bases summed over the reinterpreted dims. Errors: different
/// numbers of reinterpreted dims.
template <scalar_type T, scalar_type V>
Tensor<T> kl_divergence(const Independent<T, V>& p, const Independent<T, V>& q);

// ------------------------------------------------------------------------------ run-time dispatch

/// kl_divergence of two distributions known by their base class: dispatches on their dynamic
/// types to the overloads above. Errors: a pair PyTorch does not register either.
template <scalar_type T, scalar_type V>
Tensor<T> kl_divergence(const Distribution<T, V>& p, const Distribution<T, V>& q) {
  if (auto* ip = dynamic_cast<const Independent<T, V>*>(&p))
    if (auto* iq = dynamic_cast<const Independent<T, V>*>(&q)) return kl_divergence(*ip, *iq);
  Tensor<T> out;
  auto try_pair = [&]<class P, class Q>(std::type_identity<P>, std::type_identity<Q>) {
    if (out.defined()) return;
    auto* a = dynamic_cast<const P*>(&p);
    auto* b = dynamic_cast<const Q*>(&q);
    if (a && b) out = kl_divergence(*a, *b);
  };
  auto pair = [&]<template <class> class P, template <class> class Q>() {
    if constexpr (std::is_base_of_v<Distribution<T, V>, P<T>> && std::is_base_of_v<Distribution<T, V>, Q<T>>)
      try_pair(std::type_identity<P<T>>{}, std::type_identity<Q<T>>{});
  };
  pair.template operator()<Normal, Normal>();
  pair.template operator()<Bernoulli, Bernoulli>();
  pair.template operator()<Beta, Beta>();
  pair.template operator()<Binomial, Binomial>();
  pair.template operator()<Categorical, Categorical>();
  pair.template operator()<Exponential, Exponential>();
  pair.template operator()<Gamma, Gamma>();
  pair.template operator()<Laplace, Laplace>();
  pair.template operator()<Uniform, Uniform>();
  pair.template operator()<MultivariateNormal, MultivariateNormal>();
  pair.template operator()<Laplace, Normal>();
  pair.template operator()<Normal, Laplace>();
  pair.template operator()<Exponential, Gamma>();
  pair.template operator()<Gamma, Exponential>();
  pair.template operator()<Exponential, Normal>();
  pair.template operator()<Gamma, Normal>();
  pair.template operator()<Beta, Normal>();
  pair.template operator()<Uniform, Normal>();
  pair.template operator()<Normal, Beta>();
  pair.template operator()<Normal, Exponential>();
  pair.template operator()<Normal, Gamma>();
  pair.template operator()<Normal, Uniform>();
  pair.template operator()<Laplace, Beta>();
  pair.template operator()<Laplace, Exponential>();
  pair.template operator()<Laplace, Gamma>();
  pair.template operator()<Laplace, Uniform>();
  pair.template operator()<Exponential, Beta>();
  pair.template operator()<Exponential, Uniform>();
  pair.template operator()<Gamma, Beta>();
  pair.template operator()<Gamma, Uniform>();
  DL_CHECK(out.defined(), "kl_divergence: no KL divergence is registered for ", p.name(), " and ", q.name(),
           " (PyTorch raises NotImplementedError)");
  return out;
}

template <scalar_type T, scalar_type V>
Tensor<T> kl_divergence(const Independent<T, V>& p, const Independent<T, V>& q) {
  DL_CHECK(p.reinterpreted_batch_ndims() == q.reinterpreted_batch_ndims(),
           "kl_divergence: Independent distributions reinterpret different numbers of dims (",
           p.reinterpreted_batch_ndims(), " vs ", q.reinterpreted_batch_ndims(), ")");
  return detail::sum_rightmost(kl_divergence(p.base_dist(), q.base_dist()), int(p.reinterpreted_batch_ndims()));
}

}  // namespace dl::distributions
