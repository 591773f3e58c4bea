// dl/distributions/multivariate_normal.hpp — MultivariateNormal(loc, covariance_matrix |
// precision_matrix | scale_tril), torch.distributions.MultivariateNormal.
#pragma once

#include "../ops/matmul.hpp"
#include "distribution.hpp"

namespace dl::distributions {

/// The matrix parameter of a MultivariateNormal: exactly one of the three.
template <scalar_type T>
struct MvnMatrix {
  Tensor<T> covariance_matrix;
  Tensor<T> precision_matrix;
  Tensor<T> scale_tril;
};

/// The multivariate normal over the last dim of loc ([..., d]) with covariance L L^T, where L
/// (scale_tril, [..., d, d]) is given or is the Cholesky factor of the covariance (or of the
/// inverse of the precision). The factorisation is written with tensor ops, so log_prob, entropy
/// and rsample are differentiable in every parameter; it is meant for small d (O(d^3) small ops).
/// Errors: not exactly one matrix, loc 0-d, a matrix under 2 dims or not d x d, a matrix that is not
/// symmetric positive definite (covariance, precision) or not lower triangular with a positive
/// diagonal (scale_tril) when validating.
template <scalar_type T = float>
class MultivariateNormal : public Distribution<T> {
 public:
  MultivariateNormal(Tensor<T> loc, MvnMatrix<T> m, std::optional<bool> validate_args = std::nullopt);
  MultivariateNormal(Tensor<T> loc, Tensor<T> covariance_matrix, std::optional<bool> validate_args = std::nullopt)
      : MultivariateNormal(std::move(loc), MvnMatrix<T>{.covariance_matrix = std::move(covariance_matrix)}, validate_args) {}

  const Tensor<T>& loc() const { return loc_; }
  /// The lower Cholesky factor (not broadcast to batch_shape).
  const Tensor<T>& scale_tril() const { return scale_tril_; }
  Tensor<T> covariance_matrix() const { return matmul(scale_tril_, scale_tril_.transpose(-1, -2)); }

  std::string name() const override { return "MultivariateNormal"; }
  std::vector<std::pair<std::string, Tensor<T>>> params() const override { return {{"loc", loc_}, {given_name_, given_}}; }
  bool has_rsample() const override { return true; }
  Tensor<T> rsample(const Shape& sample_shape = {}, Generator* gen = nullptr) const override {
    const Tensor<T> eps = randn<T>(this->extended_shape(sample_shape), gen);
    return loc_ + matmul(scale_tril_, eps.unsqueeze(-1)).squeeze(-1);
  }
  Tensor<T> log_prob(const Tensor<T>& value) const override {
    this->validate_sample(value, "IndependentConstraint(Real(), 1)", [](const Tensor<T>& x) { return Tensor<bool>((x == x).all(-1)); });
    const Tensor<T> m = mahalanobis(scale_tril_, Tensor<T>(value - loc_));
    return m * T(-0.5) - T(0.91893853320467274178 * double(d())) - half_log_det();
  }
  Tensor<T> entropy() const override {
    const Tensor<T> h = T(0.5 * double(d()) * 2.83787706640934548356) + half_log_det();
    return h.expand(this->batch_shape_).contiguous();
  }
  Tensor<T> mean() const override { return loc_; }
  Tensor<T> mode() const override { return loc_; }
  Tensor<T> variance() const override {
    return Tensor<T>(scale_tril_.square().sum(-1)).expand(this->extended_shape()).contiguous();
  }
  int64_t d() const { return loc_.size(-1); }
  /// sum_i log L_ii, of L's batch shape.
  Tensor<T> half_log_det() const {
    Tensor<T> s = dl::log(entry(scale_tril_, 0, 0));
    for (int64_t i = 1; i < d(); ++i) s = s + dl::log(entry(scale_tril_, i, i));
    return s;
  }

  /// |L^-1 x|^2 over the last dim, L [..., d, d] lower triangular, x [..., d] (broadcasting).
  static Tensor<T> mahalanobis(const Tensor<T>& L, const Tensor<T>& x) {
    const std::vector<Tensor<T>> z = tri_solve(L, x);
    Tensor<T> m = z[0].square();
    for (size_t i = 1; i < z.size(); ++i) m = m + z[i].square();
    return m;
  }
  /// Forward substitution: the entries z_i of L^-1 x, each of the broadcast batch shape.
  static std::vector<Tensor<T>> tri_solve(const Tensor<T>& L, const Tensor<T>& x) {
    const int64_t n = L.size(-1);
    std::vector<Tensor<T>> z;
    for (int64_t i = 0; i < n; ++i) {
      Tensor<T> s = x.select(-1, i);
      for (int64_t k = 0; k < i; ++k) s = s - entry(L, i, k) * z[size_t(k)];
      z.push_back(s / entry(L, i, i));
    }
    return z;
  }
  /// The lower Cholesky factor of symmetric positive definite A [..., d, d], with tensor ops.
  static Tensor<T> cholesky(const Tensor<T>& A) {
    const int64_t n = A.size(-1);
    std::vector<std::vector<Tensor<T>>> L(static_cast<size_t>(n), std::vector<Tensor<T>>(static_cast<size_t>(n)));
    for (int64_t j = 0; j < n; ++j) {
      Tensor<T> s = entry(A, j, j);
      for (int64_t k = 0; k < j; ++k) s = s - L[j][k].square();
      L[j][j] = dl::sqrt(s);
      for (int64_t i = j + 1; i < n; ++i) {
        Tensor<T> t = entry(A, i, j);
        for (int64_t k = 0; k < j; ++k) t = t - L[i][k] * L[j][k];
        L[i][j] = t / L[j][j];
      }
    }
    std::vector<Tensor<T>> rows;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) L[i][j] = zeros_like(L[i][i]);
      rows.push_back(stack(L[size_t(i)], -1));
    }
    return stack(rows, -2);
  }

 private:
  static Tensor<T> entry(const Tensor<T>& m, int64_t i, int64_t j) { return m.select(-2, i).select(-1, j); }
  /// Whether every matrix of A is symmetric positive definite (double-precision Cholesky).
  static bool positive_definite(const Tensor<T>& A);

  Tensor<T> loc_, scale_tril_, given_;
  std::string given_name_;
};

// ------------------------------------------------------------------------------ implementation

template <scalar_type T>
bool MultivariateNormal<T>::positive_definite(const Tensor<T>& A) {
  const int64_t n = A.size(-1);
  const Tensor<double> a = cast<double>(A.detach().contiguous());
  const int64_t count = a.numel() / std::max<int64_t>(n * n, 1);
  for (int64_t b = 0; b < count; ++b) {
    const double* m = a.data() + b * n * n;
    std::vector<double> L(size_t(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (!(std::abs(m[i * n + j] - m[j * n + i]) <= 1e-6 + 1e-5 * std::abs(m[j * n + i]))) return false;
    for (int64_t j = 0; j < n; ++j) {
      double s = m[j * n + j];
      for (int64_t k = 0; k < j; ++k) s -= L[size_t(j * n + k)] * L[size_t(j * n + k)];
      if (!(s > 0)) return false;
      L[size_t(j * n + j)] = std::sqrt(s);
      for (int64_t i = j + 1; i < n; ++i) {
        double t = m[i * n + j];
        for (int64_t k = 0; k < j; ++k) t -= L[size_t(i * n + k)] * L[size_t(j * n + k)];
        L[size_t(i * n + j)] = t / L[size_t(j * n + j)];
      }
    }
  }
  return true;
}

template <scalar_type T>
MultivariateNormal<T>::MultivariateNormal(Tensor<T> loc, MvnMatrix<T> m, std::optional<bool> validate_args) : loc_(std::move(loc)) {
  const int given = int(m.covariance_matrix.defined()) + int(m.precision_matrix.defined()) + int(m.scale_tril.defined());
  DL_CHECK(given == 1, "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.");
  DL_CHECK(loc_.dim() >= 1, "loc must be at least one-dimensional.");
  given_name_ = m.scale_tril.defined() ? "scale_tril" : m.covariance_matrix.defined() ? "covariance_matrix" : "precision_matrix";
  given_ = m.scale_tril.defined() ? m.scale_tril : m.covariance_matrix.defined() ? m.covariance_matrix : m.precision_matrix;
  DL_CHECK(given_.dim() >= 2, given_name_, " matrix must be at least two-dimensional, with optional leading batch dimensions");
  const int64_t n = loc_.size(-1);
  DL_CHECK(given_.size(-1) == n && given_.size(-2) == n, "MultivariateNormal: loc has ", n, " elements in its last dimension but ",
           given_name_, " has shape ", given_.shape(), " (expected [..., ", n, ", ", n, "])");
  const Shape mb = detail::drop_last(given_.shape(), 2), lb = detail::drop_last(loc_.shape(), 1);
  const Shape batch = broadcast_shapes(mb, lb);
  loc_ = loc_.expand(detail::cat_shapes(batch, {n}));
  this->init(batch, {n}, validate_args);
  this->check_param("loc", loc_, "IndependentConstraint(Real(), 1)", Tensor<bool>((loc_ == loc_).all(-1)));
  if (m.scale_tril.defined()) {
    bool ok = true;
    const Tensor<double> s = cast<double>(given_.detach().contiguous());
    for (int64_t b = 0; b < s.numel() / (n * n) && ok; ++b)
      for (int64_t i = 0; i < n && ok; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const double v = s.data()[b * n * n + i * n + j];
          if ((j > i && v != 0) || (j == i && !(v > 0))) ok = false;
        }
    this->check_param(given_name_, given_, "LowerCholesky()", scalar_tensor<bool>(ok));
    scale_tril_ = given_;
  } else {
    this->check_param(given_name_, given_, "PositiveDefinite()", scalar_tensor<bool>(!this->validate_ || positive_definite(given_)));
    if (m.covariance_matrix.defined()) {
      scale_tril_ = cholesky(given_);
    } else {
      // scale_tril = cholesky(P^-1), with P^-1 = Lp^-T Lp^-1 from the Cholesky factor Lp of P.
      const Tensor<T> lp = cholesky(given_);
      std::vector<Tensor<T>> cols;
      for (int64_t c = 0; c < n; ++c) {
        Tensor<T> e = zeros<T>({n});
        e.data()[c] = T(1);
        cols.push_back(stack(tri_solve(lp, e.expand(detail::cat_shapes(mb, {n}))), -1));
      }
      const Tensor<T> lp_inv = stack(cols, -1);  // column c is Lp^-1 e_c
      scale_tril_ = cholesky(matmul(lp_inv.transpose(-1, -2), lp_inv));
    }
  }
}

template <scalar_type T>
MultivariateNormal(Tensor<T>, Tensor<T>, std::optional<bool> = {}) -> MultivariateNormal<T>;

}  // namespace dl::distributions
