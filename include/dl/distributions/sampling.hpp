// dl/distributions/sampling.hpp — random sampling functions of torch: dl::bernoulli(p),
// dl::multinomial(probs, num_samples, replacement) and dl::poisson(rates), each with an optional
// Generator (the default generator otherwise; see dl/random.hpp), and the scalar samplers the
// discrete distributions share.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "distribution.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// 0 or 1 (as T) with probability p, elementwise; p's shape. Errors: p outside [0, 1].
template <scalar_type T>
Tensor<T> bernoulli(const Tensor<T>& p, Generator* gen = nullptr);
/// num_samples category indices per row of the 1-d or 2-d non-negative weights `probs` (rows
/// need not sum to 1), drawn with or without replacement; shape [num_samples] or [rows,
/// num_samples]. Errors as torch.multinomial: 0 or 3+ dims, negative/inf/NaN weights, a row
/// summing to 0, num_samples <= 0, more samples than categories without replacement.
template <scalar_type T>
Tensor<int64_t> multinomial(const Tensor<T>& probs, int64_t num_samples, bool replacement = false, Generator* gen = nullptr);
/// Poisson counts (as T) with the given rates, elementwise. Errors: a negative rate.
template <scalar_type T>
Tensor<T> poisson(const Tensor<T>& rates, Generator* gen = nullptr);

namespace distributions::detail {
/// One Binomial(n, p) draw and one Poisson(rate) draw: inversion of the distribution function
/// visiting the support outward from the mode (exact; O(sqrt(variance)) steps).
inline double sample_binomial(double n, double p, ElementStream& s);
inline double sample_poisson(double rate, ElementStream& s);
}  // namespace distributions::detail

// ------------------------------------------------------------------------------ implementation

namespace distributions::detail {

/// Inversion from the mode m (pmf pm): u is spent on m, then alternately on the next value above
/// (ratio up(k) = pmf(k+1)/pmf(k)) and below (down(k) = pmf(k-1)/pmf(k)), within [0, hi_max].
template <class Up, class Down>
double invert_from_mode(double m, double pm, double hi_max, Up up, Down down, ElementStream& s) {
  double u = s.uniform() - pm;
  if (u < 0) return m;
  double lo = m, hi = m, plo = pm, phi = pm;
  while (true) {
    const bool can_up = hi < hi_max && phi > 0, can_down = lo > 0 && plo > 0;
    if (!can_up && !can_down) return m;  // u beyond the rounded total mass
    if (can_up) {
      phi *= up(hi);
      hi += 1;
      u -= phi;
      if (u < 0) return hi;
    }
    if (can_down) {
      plo *= down(lo);
      lo -= 1;
      u -= plo;
      if (u < 0) return lo;
    }
  }
}

inline double sample_binomial(double n, double p, ElementStream& s) {
  if (n == 0 || p <= 0) return 0;
  if (p >= 1) return n;
  const double q = 1 - p, m = std::min(n, std::floor((n + 1) * p));
  const double log_pm = std::lgamma(n + 1) - std::lgamma(m + 1) - std::lgamma(n - m + 1) + m * std::log(p) + (n - m) * std::log1p(-p);
  return invert_from_mode(
      m, std::exp(log_pm), n, [&](double k) { return (n - k) / (k + 1) * (p / q); },
      [&](double k) { return k / (n - k + 1) * (q / p); }, s);
}

inline double sample_poisson(double rate, ElementStream& s) {
  if (rate <= 0) return 0;
  const double m = std::floor(rate);
  const double log_pm = m * std::log(rate) - rate - std::lgamma(m + 1);
  return invert_from_mode(
      m, std::exp(log_pm), std::numeric_limits<double>::infinity(), [&](double k) { return rate / (k + 1); },
      [&](double k) { return k / rate; }, s);
}

}  // namespace distributions::detail

template <scalar_type T>
Tensor<T> bernoulli(const Tensor<T>& p, Generator* gen) {
  const Tensor<T> pc = p.detach().contiguous();
  const T* pp = pc.data();
  for (int64_t i = 0; i < pc.numel(); ++i)
    DL_CHECK(pp[i] >= T(0) && pp[i] <= T(1), "bernoulli: expected every probability in [0, 1], but got ", double(pp[i]),
             " (PyTorch: Expected p_in >= 0 && p_in <= 1 to be true, but got false.)");
  Tensor<T> out = empty<T>(pc.shape());
  T* po = out.data();
  distributions::detail::for_each_stream(gen, out.numel(), [&](int64_t i, distributions::detail::ElementStream& s) {
    po[i] = s.uniform() < double(pp[i]) ? T(1) : T(0);
  });
  return out;
}

template <scalar_type T>
Tensor<int64_t> multinomial(const Tensor<T>& probs, int64_t num_samples, bool replacement, Generator* gen) {
  DL_CHECK(probs.dim() == 1 || probs.dim() == 2, "prob_dist must be 1 or 2 dim");
  DL_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
  const int64_t k = probs.size(-1), rows = probs.dim() == 2 ? probs.size(0) : 1;
  DL_CHECK(replacement || num_samples <= k, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  const Tensor<double> pd = cast<double>(probs.detach().contiguous());
  const double* p = pd.data();
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double v = p[r * k + j];
      DL_CHECK(std::isfinite(v) && v >= 0, "probability tensor contains either `inf`, `nan` or element < 0");
      total += v;
    }
    DL_CHECK(total > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  Tensor<int64_t> out = empty<int64_t>(probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples});
  int64_t* po = out.data();
  distributions::detail::for_each_stream(gen, rows, [&](int64_t r, distributions::detail::ElementStream& s) {
    const double* row = p + r * k;
    if (replacement) {
      std::vector<double> cdf(static_cast<size_t>(k));
      double c = 0;
      for (int64_t j = 0; j < k; ++j) cdf[size_t(j)] = c += row[j];
      for (int64_t n = 0; n < num_samples; ++n) {
        const double u = s.uniform() * c;
        int64_t j = int64_t(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
        j = std::min(j, k - 1);
        while (row[j] == 0) --j;  // u == c after rounding: the last category with weight
        po[r * num_samples + n] = j;
      }
    } else {
      // Exponential races: category j finishes at E_j / p_j; the first num_samples to finish, in
      // order, are a draw without replacement. Zero weights never finish (they come last).
      std::vector<std::pair<double, int64_t>> keys(static_cast<size_t>(k));
      for (int64_t j = 0; j < k; ++j) {
        const double e = -std::log1p(-s.uniform());
        keys[size_t(j)] = {row[j] > 0 ? e / row[j] : std::numeric_limits<double>::infinity(), j};
      }
      std::partial_sort(keys.begin(), keys.begin() + num_samples, keys.end());
      for (int64_t n = 0; n < num_samples; ++n) po[r * num_samples + n] = keys[size_t(n)].second;
    }
  });
  return out;
}

template <scalar_type T>
Tensor<T> poisson(const Tensor<T>& rates, Generator* gen) {
  const Tensor<T> rc = rates.detach().contiguous();
  const T* pr = rc.data();
  for (int64_t i = 0; i < rc.numel(); ++i) DL_CHECK(pr[i] >= T(0), "invalid Poisson rate, expected rate to be non-negative");
  Tensor<T> out = empty<T>(rc.shape());
  T* po = out.data();
  distributions::detail::for_each_stream(gen, out.numel(), [&](int64_t i, distributions::detail::ElementStream& s) {
    po[i] = T(distributions::detail::sample_poisson(double(pr[i]), s));
  });
  return out;
}

}  // namespace dl
