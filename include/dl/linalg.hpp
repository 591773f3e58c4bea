// dl/linalg.hpp — dl::linalg, PyTorch's torch.linalg on LAPACK (Debian's liblapacke): inverses,
// determinants, solvers, Cholesky, QR, SVD, symmetric eigendecomposition, pseudo-inverse, least
// squares, norms, plus the matrix helpers PyTorch keeps at top level (cross, outer, kron, trace,
// diag, diagonal, tril, triu; also in namespace dl). Every function is batched over leading dims,
// takes float or double, and records PyTorch's backward formula, written with differentiable dl
// ops (second derivatives work where the formula's own pieces are differentiable).
//
//   dl::Tensor<double> A = ..., B = ...;            // [..., n, n] and [..., n, k]
//   auto X = dl::linalg::solve(A, B);              // A X = B
//   auto [U, S, Vh] = dl::linalg::svd(A, false);   // reduced SVD
//
// Without LAPACKE (built without liblapacke-dev, DL_HAVE_LAPACKE undefined) the decompositions
// throw dl::Error saying so; the compositional helpers (cross, kron, tril, norms of vectors...)
// work everywhere.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/indexing.hpp"
#include "ops/kernel_backward.hpp"
#include "ops/matmul.hpp"
#include "tensor.hpp"

#if DL_HAVE_LAPACKE
#include <lapacke.h>
#endif

namespace dl::linalg {

// ------------------------------------------------------------------------------ declarations

/// The element types LAPACK serves: float and double.
template <class T>
concept lapack_scalar = std::same_as<T, float> || std::same_as<T, double>;  // requires a float or double tensor (LAPACK's types); convert others with .to<float>() or .to<double>()

template <class T>
struct SlogdetResult {
  Tensor<T> sign, logabsdet;  ///< det = sign * exp(logabsdet); sign 0 and logabsdet -inf when singular
};
template <class T>
struct QRResult {
  Tensor<T> Q, R;
};
template <class T>
struct SVDResult {
  Tensor<T> U, S, Vh;  ///< A = U diag(S) Vh, S descending
};
template <class T>
struct EighResult {
  Tensor<T> eigenvalues, eigenvectors;  ///< ascending eigenvalues; eigenvectors are the columns
};
template <class T>
struct LstsqResult {
  Tensor<T> solution;         ///< [..., n, k]
  Tensor<T> residuals;        ///< [..., k] squared residuals when m > n, every A has full rank and the driver is not gelsy; else [0]
  Tensor<int64_t> rank;       ///< [...] (drivers gelsy, gelsd, gelss; else [0])
  Tensor<T> singular_values;  ///< [..., min(m, n)] (drivers gelsd, gelss; else [0])
};

/// Inverse of square matrices [..., n, n]. Throws PyTorch's "linalg.inv: The diagonal element 2 is
/// zero, ..." for singular input ("(Batch element 1): " after the name in a batch).
template <lapack_scalar T> Tensor<T> inv(const Tensor<T>& A);
/// Determinant [...] of [..., n, n] (LU). Differentiable also at singular matrices (through the SVD).
template <lapack_scalar T> Tensor<T> det(const Tensor<T>& A);
/// sign and log|det|; logabsdet is differentiable (not at singular matrices, where it is -inf).
template <lapack_scalar T> SlogdetResult<T> slogdet(const Tensor<T>& A);
/// torch.logdet: log(det A), NaN where det < 0 and -inf where det == 0.
template <lapack_scalar T> Tensor<T> logdet(const Tensor<T>& A);
/// Solves A X = B (left) or X A = B (left = false). A [..., n, n]; B [..., n, k] or a vector [n] /
/// [..., n] (PyTorch's rule: B.dim() == 1, or B.shape == A.shape[:-1]); batch dims broadcast.
template <lapack_scalar T> Tensor<T> solve(const Tensor<T>& A, const Tensor<T>& B, bool left = true);
/// Cholesky factor L (A = L L^T) or, with upper, U (A = U^T U) of symmetric positive-definite
/// [..., n, n]; reads only the lower triangle of A. Non-positive-definite input throws PyTorch's
/// "linalg.cholesky: The factorization could not be completed because the input is not
/// positive-definite (the leading minor of order 3 is not positive-definite)."
template <lapack_scalar T> Tensor<T> cholesky(const Tensor<T>& A, bool upper = false);
/// torch.cholesky_solve(B, L, upper): solves (L L^T) X = B from the Cholesky factor L [..., n, n]
/// (or U with upper); B [..., n, k]; batch dims broadcast.
template <lapack_scalar T> Tensor<T> cholesky_solve(const Tensor<T>& B, const Tensor<T>& L, bool upper = false);
/// QR of [..., m, n], k = min(m, n). mode "reduced": Q [..., m, k], R [..., k, n]; "complete":
/// Q [..., m, m], R [..., m, n]; "r": R only (Q is an empty tensor; not differentiable).
template <lapack_scalar T> QRResult<T> qr(const Tensor<T>& A, std::string_view mode = "reduced");
/// SVD of [..., m, n] (LAPACK gesdd): full_matrices gives U [..., m, m], Vh [..., n, n], else
/// U [..., m, k], Vh [..., k, n]; S [..., k] descending. The gradient through U or Vh needs
/// distinct (and, for m != n, nonzero) singular values; otherwise backward throws.
template <lapack_scalar T> SVDResult<T> svd(const Tensor<T>& A, bool full_matrices = true);
/// Singular values [..., k] only (computes U and V as well when A requires grad).
template <lapack_scalar T> Tensor<T> svdvals(const Tensor<T>& A);
/// Eigenvalues (ascending) and orthonormal eigenvectors of symmetric [..., n, n], reading the
/// triangle UPLO ("L" or "U"). The gradient through the eigenvectors needs distinct eigenvalues.
template <lapack_scalar T> EighResult<T> eigh(const Tensor<T>& A, std::string_view UPLO = "L");
/// Eigenvalues only.
template <lapack_scalar T> Tensor<T> eigvalsh(const Tensor<T>& A, std::string_view UPLO = "L");
/// Moore-Penrose pseudo-inverse [..., n, m] of [..., m, n]: singular values <= max(atol, rtol * S_max)
/// are treated as zero; rtol defaults to eps * max(m, n) when atol is not given (else 0). With
/// hermitian, A is taken as symmetric (its lower triangle is read; the gradient is PyTorch's
/// general pinv gradient, not symmetrised).
template <lapack_scalar T>
Tensor<T> pinv(const Tensor<T>& A, std::optional<double> atol = {}, std::optional<double> rtol = {}, bool hermitian = false);
/// Least squares min ||A X - B|| for A [..., m, n], B [..., m, k]; driver "gelsy" (default),
/// "gelsd", "gelss" or "gels" (full-rank A only); rcond defaults to eps * max(m, n).
template <lapack_scalar T>
LstsqResult<T> lstsq(const Tensor<T>& A, const Tensor<T>& B, std::optional<double> rcond = {}, std::string_view driver = "gelsy");
/// Solves the triangular system A X = B (left) or X A = B, reading only the upper or lower
/// triangle of A; unitriangular takes its diagonal as ones. Batch dims broadcast.
template <lapack_scalar T>
Tensor<T> solve_triangular(const Tensor<T>& A, const Tensor<T>& B, bool upper, bool left = true, bool unitriangular = false);
/// Matrix norms over the two dims `dim`: ord "fro" or "nuc".
template <lapack_scalar T>
Tensor<T> matrix_norm(const Tensor<T>& A, std::string_view ord = "fro", Dims dim = {-2, -1}, bool keepdim = false);
/// ord 1, -1 (max/min column abs sum), inf, -inf (rows), 2, -2 (largest/smallest singular value).
template <lapack_scalar T>
Tensor<T> matrix_norm(const Tensor<T>& A, double ord, Dims dim = {-2, -1}, bool keepdim = false);
/// Vector norm over `dim` (all elements when empty): sum(|x|^ord)^(1/ord); inf/-inf max/min |x|,
/// 0 the count of nonzeros.
template <scalar_type T>
Tensor<T> vector_norm(const Tensor<T>& x, double ord = 2, Dims dim = {}, bool keepdim = false);
/// Number of singular values (|eigenvalues| with hermitian) above max(atol, rtol * largest).
template <lapack_scalar T>
Tensor<int64_t> matrix_rank(const Tensor<T>& A, std::optional<double> atol = {}, std::optional<double> rtol = {}, bool hermitian = false);
/// A^n for integer n; n < 0 inverts first; n == 0 gives identities.
template <lapack_scalar T> Tensor<T> matrix_power(const Tensor<T>& A, int64_t n);

/// Cross product of 3-vectors along dim (a and b broadcast).
template <scalar_type T> Tensor<T> cross(const Tensor<T>& a, const Tensor<T>& b, int64_t dim = -1);
/// outer(a, b)[i, j] = a[i] * b[j] for 1-D a, b.
template <scalar_type T> Tensor<T> outer(const Tensor<T>& a, const Tensor<T>& b);
/// Kronecker product; the shorter shape is padded with leading ones, result size a.size(d) * b.size(d).
template <scalar_type T> Tensor<T> kron(const Tensor<T>& a, const Tensor<T>& b);
/// Sum of the diagonal of a 2-D tensor (0-d result).
template <scalar_type T> Tensor<T> trace(const Tensor<T>& A);
/// 1-D x: the square matrix with x on diagonal `offset`; 2-D x: that diagonal, copied.
template <scalar_type T> Tensor<T> diag(const Tensor<T>& x, int64_t offset = 0);
/// torch.linalg.diagonal: the view of diagonal `offset` of the matrices in dims (dim1, dim2),
/// appended as the last dim (dl::diagonal has PyTorch's defaults dim1 = 0, dim2 = 1).
template <scalar_type T> Tensor<T> diagonal(const Tensor<T>& A, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
/// Lower (upper) triangle of the matrices [..., m, n]: elements with j - i <= diagonal (>=).
template <scalar_type T> Tensor<T> tril(const Tensor<T>& A, int64_t diagonal = 0);
template <scalar_type T> Tensor<T> triu(const Tensor<T>& A, int64_t diagonal = 0);

// ------------------------------------------------------------------------------ implementation

namespace impl {

template <class T>
Tensor<T> mT(const Tensor<T>& x) {
  return x.transpose(-2, -1);
}

/// Rejects anything that is not a batch of matrices (square ones when `square`).
template <class T>
void check_matrix(const char* fn, const Tensor<T>& A, bool square, const char* name = "A") {
  DL_CHECK(A.dim() >= 2, fn, ": The input tensor ", name, " must have at least 2 dimensions.");
  if (square)
    DL_CHECK(A.size(-1) == A.size(-2), fn, ": ", name, " must be batches of square matrices, but they are ", A.size(-2), " by ",
             A.size(-1), " matrices");
}

/// The leading (batch) dims of a batch of matrices.
inline Shape batch_of(const Shape& s, int matrix_dims = 2) {
  Shape b;
  for (int i = 0; i + matrix_dims < s.size(); ++i) b.push_back(s[i]);
  return b;
}
inline Shape with_matrix(Shape batch, int64_t m, int64_t n) {
  batch.push_back(m);
  batch.push_back(n);
  return batch;
}
inline Shape with_last(Shape batch, int64_t n) {
  batch.push_back(n);
  return batch;
}
inline int64_t batch_count(const Shape& s) { return numel(batch_of(s)); }

/// "(Batch element 1): " in batched calls, as PyTorch prefixes its LAPACK errors.
inline std::string batch_prefix(int64_t b, bool batched) { return batched ? detail::cat("(Batch element ", b, "): ") : std::string(); }

/// A contiguous copy of x [..., m, n] with the last two dims swapped, [..., n, m]: x's matrices in
/// column-major (LAPACK) order, and back. A serial blocked loop: LAPACK (OpenBLAS) runs its own
/// threads next, and waking dl's OpenMP workers here would leave them spinning against those.
template <class T>
Tensor<T> transposed_copy(const Tensor<T>& x_) {
  const Tensor<T> x = x_.detach().contiguous();
  const int64_t m = x.size(-2), n = x.size(-1), nb = batch_count(x.shape());
  Shape s = x.shape();
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  Tensor<T> out = empty<T>(s);
  constexpr int64_t kTile = 32;
  for (int64_t b = 0; b < nb; ++b) {
    const T* src = x.data() + b * m * n;
    T* dst = out.data() + b * m * n;
    for (int64_t i0 = 0; i0 < m; i0 += kTile)
      for (int64_t j0 = 0; j0 < n; j0 += kTile)
        for (int64_t i = i0; i < std::min(m, i0 + kTile); ++i)
          for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j) dst[j * m + i] = src[i * n + j];
  }
  return out;
}
/// A copy of the contiguous x, serial for the reason above.
template <class T>
Tensor<T> serial_copy(const Tensor<T>& x) {
  Tensor<T> out = empty<T>(x.shape());
  if (x.numel() > 0) std::memcpy(out.data(), x.data(), size_t(x.numel()) * sizeof(T));
  return out;
}
template <class T>
Tensor<T> col_major(const Tensor<T>& x) {
  return transposed_copy(x);
}
template <class T>
Tensor<T> from_col_major(const Tensor<T>& buf) {
  return transposed_copy(buf);
}

/// A boolean [m, n] mask of j - i <= k (lower) or j - i >= k (upper).
inline Tensor<bool> triangle_mask(int64_t m, int64_t n, int64_t k, bool upper) {
  Tensor<bool> mask = empty<bool>({m, n});
  bool* p = mask.data();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) p[i * n + j] = upper ? j - i >= k : j - i <= k;
  return mask;
}

/// v [..., n] -> [..., n, n] with v on the diagonal (differentiable).
template <class T>
Tensor<T> diag_embed(const Tensor<T>& v) {
  const int64_t n = v.size(-1);
  return where(triangle_mask(n, n, 0, false) & triangle_mask(n, n, 0, true), v.unsqueeze(-1), T(0));
}

/// Gradient of a broadcast operand: summed back to its shape.
template <class T>
Tensor<T> reduce_to(const Tensor<T>& g, const Shape& shape) {
  return g.defined() ? dl::detail::sum_to(g, shape) : g;
}

template <class T>
struct Saved {
  std::vector<Tensor<T>> g, in, out;  ///< output gradients (undefined where none arrived), inputs, outputs
  std::vector<bool> needs;             ///< needs[i]: input i wants a gradient
};
template <class T>
using Rule = std::function<std::vector<Tensor<T>>(const Saved<T>&)>;

/// The backward node of a linalg op: saved inputs and outputs (outputs saved detached and, under
/// create_graph, re-attached to this node so that second derivatives flow through them, as
/// PyTorch's saved results do) and a rule of differentiable ops.
template <class T>
class LinalgBackward : public autograd::Node {
 public:
  LinalgBackward(std::string name, const std::vector<Tensor<T>>& in, const std::vector<Tensor<T>>& out, Rule<T> rule)
      : name_(std::move(name)), rule_(std::move(rule)) {
    for (const auto& t : in) in_.emplace_back(t.impl(), name_);
    for (const auto& t : out) out_.emplace_back(t.detach().impl(), name_);
  }
  std::string name() const override { return name_; }
  void release_variables() override {
    for (auto& s : in_) s.release();
    for (auto& s : out_) s.release();
  }
  std::vector<TensorImplPtr> apply(std::vector<TensorImplPtr> grads) override {
    const size_t n = next_edges().size();
    Saved<T> s;
    bool any = false;
    for (const auto& g : grads) {
      s.g.push_back(g ? Tensor<T>(g) : Tensor<T>());
      any = any || bool(g);
    }
    s.g.resize(out_.size());
    if (!any) return std::vector<TensorImplPtr>(n);
    for (const auto& t : in_) s.in.emplace_back(t.unpack());
    for (uint32_t i = 0; i < out_.size(); ++i) {
      const Tensor<T> y(out_[i].unpack());
      if (!is_grad_enabled()) {
        s.out.push_back(y);
        continue;
      }
      auto impl = dl::detail::view_impl(y.impl(), y.shape(), y.strides(), y.storage_offset());
      impl->is_view = false;
      auto& m = autograd::detail::meta(impl);
      m.grad_fn = shared_from_this();
      m.output_nr = i;
      s.out.emplace_back(impl);
    }
    for (size_t i = 0; i < n; ++i) s.needs.push_back(next_edges()[i].valid());
    std::vector<Tensor<T>> r = rule_(s);
    std::vector<TensorImplPtr> out(n);
    for (size_t i = 0; i < n && i < r.size(); ++i)
      if (s.needs[i] && r[i].defined()) out[i] = r[i].impl();
    return out;
  }

 private:
  std::string name_;
  Rule<T> rule_;
  std::vector<autograd::SavedTensor> in_, out_;
};

/// Makes a LinalgBackward node the history of *outs when grad mode is on and an input requires grad.
template <class T>
void record(const char* name, const std::vector<Tensor<T>>& in, const std::vector<Tensor<T>*>& outs, Rule<T> rule) {
  bool any = false;
  for (const auto& t : in) any = any || autograd::any_requires_grad(t);
  if (!any) return;
  std::vector<Tensor<T>> out;
  for (auto* o : outs) out.push_back(*o);
  auto node = std::make_shared<LinalgBackward<T>>(name, in, out, std::move(rule));
  for (const auto& t : in) node->mutable_next_edges().push_back(t.defined() ? autograd::gradient_edge(t.impl()) : autograd::Edge{});
  for (uint32_t i = 0; i < outs.size(); ++i) autograd::set_history(*outs[i], node, i);
}

[[noreturn]] inline void no_lapacke(const char* fn) {
  throw Error(detail::cat(fn, ": dl was built without LAPACKE; install liblapacke-dev (Debian) and reconfigure to use dl::linalg"));
}

#if DL_HAVE_LAPACKE
extern "C" {
void strsm_(const char*, const char*, const char*, const char*, const lapack_int*, const lapack_int*, const float*, const float*,
            const lapack_int*, float*, const lapack_int*, size_t, size_t, size_t, size_t);
void dtrsm_(const char*, const char*, const char*, const char*, const lapack_int*, const lapack_int*, const double*, const double*,
            const lapack_int*, double*, const lapack_int*, size_t, size_t, size_t, size_t);
}

/// LAPACK in column-major order, one set of names for float and double (the _work forms: no NaN
/// scans, workspace from the caller).
template <class T>
struct Lapack;
#define DL_LAPACK_ROUTINES(T, p)                                                                                               \
  template <>                                                                                                                  \
  struct Lapack<T> {                                                                                                           \
    static lapack_int getrf(lapack_int m, lapack_int n, T* a, lapack_int* ipiv) {                                             \
      return LAPACKE_##p##getrf_work(LAPACK_COL_MAJOR, m, n, a, m, ipiv);                                                      \
    }                                                                                                                          \
    static lapack_int getrs(lapack_int n, lapack_int k, const T* a, const lapack_int* ipiv, T* b, char trans = 'N') {        \
      return LAPACKE_##p##getrs_work(LAPACK_COL_MAJOR, trans, n, k, a, n, ipiv, b, n);                                          \
    }                                                                                                                          \
    static lapack_int potrf(char uplo, lapack_int n, T* a) { return LAPACKE_##p##potrf_work(LAPACK_COL_MAJOR, uplo, n, a, n); } \
    static lapack_int potrs(char uplo, lapack_int n, lapack_int k, const T* a, T* b) {                                         \
      return LAPACKE_##p##potrs_work(LAPACK_COL_MAJOR, uplo, n, k, a, n, b, n);                                                 \
    }                                                                                                                          \
    static lapack_int geqrf(lapack_int m, lapack_int n, T* a, T* tau, T* work, lapack_int lwork) {                           \
      return LAPACKE_##p##geqrf_work(LAPACK_COL_MAJOR, m, n, a, m, tau, work, lwork);                                          \
    }                                                                                                                          \
    static lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, const T* tau, T* work, lapack_int lwork) {       \
      return LAPACKE_##p##orgqr_work(LAPACK_COL_MAJOR, m, n, k, a, m, tau, work, lwork);                                       \
    }                                                                                                                          \
    static lapack_int gesdd(char jobz, lapack_int m, lapack_int n, T* a, T* s, T* u, lapack_int ldu, T* vt, lapack_int ldvt,   \
                            T* work, lapack_int lwork, lapack_int* iwork) {                                                    \
      return LAPACKE_##p##gesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, m, s, u, ldu, vt, ldvt, work, lwork, iwork);              \
    }                                                                                                                          \
    static lapack_int syevd(char jobz, char uplo, lapack_int n, T* a, T* w, T* work, lapack_int lwork, lapack_int* iwork,      \
                            lapack_int liwork) {                                                                               \
      return LAPACKE_##p##syevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, n, w, work, lwork, iwork, liwork);                     \
    }                                                                                                                          \
    static lapack_int gelsy(lapack_int m, lapack_int n, lapack_int k, T* a, T* b, lapack_int ldb, lapack_int* jpvt, T rcond,  \
                            lapack_int* rank, T* work, lapack_int lwork) {                                                     \
      return LAPACKE_##p##gelsy_work(LAPACK_COL_MAJOR, m, n, k, a, m, b, ldb, jpvt, rcond, rank, work, lwork);                  \
    }                                                                                                                          \
    static lapack_int gelsd(lapack_int m, lapack_int n, lapack_int k, T* a, T* b, lapack_int ldb, T* s, T rcond,              \
                            lapack_int* rank, T* work, lapack_int lwork, lapack_int* iwork) {                                  \
      return LAPACKE_##p##gelsd_work(LAPACK_COL_MAJOR, m, n, k, a, m, b, ldb, s, rcond, rank, work, lwork, iwork);              \
    }                                                                                                                          \
    static lapack_int gelss(lapack_int m, lapack_int n, lapack_int k, T* a, T* b, lapack_int ldb, T* s, T rcond,              \
                            lapack_int* rank, T* work, lapack_int lwork) {                                                     \
      return LAPACKE_##p##gelss_work(LAPACK_COL_MAJOR, m, n, k, a, m, b, ldb, s, rcond, rank, work, lwork);                     \
    }                                                                                                                          \
    static lapack_int gels(lapack_int m, lapack_int n, lapack_int k, T* a, T* b, lapack_int ldb, T* work, lapack_int lwork) { \
      return LAPACKE_##p##gels_work(LAPACK_COL_MAJOR, 'N', m, n, k, a, m, b, ldb, work, lwork);                                 \
    }                                                                                                                          \
    static void trsm(char side, char uplo, char diag, lapack_int m, lapack_int n, const T* a, lapack_int lda, T* b) {         \
      const T one = 1;                                                                                                         \
      const char trans = 'N';                                                                                                  \
      p##trsm_(&side, &uplo, &trans, &diag, &m, &n, &one, a, &lda, b, &m, 1, 1, 1, 1);                                        \
    }                                                                                                                          \
  };
DL_LAPACK_ROUTINES(float, s)
DL_LAPACK_ROUTINES(double, d)
#undef DL_LAPACK_ROUTINES

/// LAPACK's preferred workspace size from a query (lwork = -1) result.
template <class T>
lapack_int lwork_of(T query) {
  return std::max<lapack_int>(1, lapack_int(query));
}
#endif

/// X = A^-1 B for A [..., n, n] and B [..., n, k] with equal batch shapes (raw, no autograd).
/// `singular(b, diag)` makes the error for batch b.
template <class T, class Err>
Tensor<T> lu_solve_raw(const Tensor<T>& A, const Tensor<T>& B, [[maybe_unused]] const char* fn, Err singular) {
#if DL_HAVE_LAPACKE
  const int64_t n = A.size(-1), k = B.size(-1), nb = batch_count(A.shape());
  // LAPACK factors a plain copy of A: a row-major A is A^T in column-major order, so its factors
  // solve A X = B with getrs's transposed form (PyTorch's trick); a transposed view of a row-major
  // matrix is A itself in column-major order. Only other layouts pay for a transposing copy.
  char trans = 'N';
  Tensor<T> a;
  if (A.is_contiguous()) {
    a = serial_copy(A.detach());
    trans = 'T';
  } else if (A.transpose(-2, -1).is_contiguous()) {
    a = serial_copy(A.transpose(-2, -1).detach());
  } else {
    a = col_major(A);
  }
  Tensor<T> b = col_major(B);
  std::vector<lapack_int> ipiv(size_t(std::max<int64_t>(n, 1)));
  for (int64_t i = 0; i < nb && n > 0; ++i) {
    const lapack_int info = Lapack<T>::getrf(n, n, a.data() + i * n * n, ipiv.data());
    if (info > 0) throw Error(singular(i, info));
    if (k > 0) Lapack<T>::getrs(n, k, a.data() + i * n * n, ipiv.data(), b.data() + i * n * k, trans);
  }
  return b.transpose(-2, -1);  // X in column-major order, as PyTorch returns it (no copy back)
#else
  (void)A, (void)B, (void)singular;
  no_lapacke(fn);
#endif
}

/// LU-based sign and log|det| (and det) of [..., n, n], raw.
template <class T>
void lu_det_raw(const Tensor<T>& A, Tensor<T>* det, Tensor<T>* sign, Tensor<T>* logabs, [[maybe_unused]] const char* fn) {
#if DL_HAVE_LAPACKE
  const int64_t n = A.size(-1), nb = batch_count(A.shape());
  const Shape bs = batch_of(A.shape());
  Tensor<T> a = col_major(A);
  if (det) *det = empty<T>(bs);
  if (sign) *sign = empty<T>(bs);
  if (logabs) *logabs = empty<T>(bs);
  std::vector<lapack_int> ipiv(size_t(std::max<int64_t>(n, 1)));
  for (int64_t i = 0; i < nb; ++i) {
    T* p = a.data() + i * n * n;
    if (n > 0) Lapack<T>::getrf(n, n, p, ipiv.data());
    T d = 1, s = 1, l = 0;
    for (int64_t j = 0; j < n; ++j) {
      const T u = p[j * n + j];
      d *= ipiv[size_t(j)] != j + 1 ? -u : u;
      s *= (u > 0 ? T(1) : u < 0 ? T(-1) : T(0)) * (ipiv[size_t(j)] != j + 1 ? T(-1) : T(1));
      l += std::log(std::abs(u));
    }
    if (det) det->data()[i] = d;
    if (sign) sign->data()[i] = s;
    if (logabs) logabs->data()[i] = s == 0 ? -std::numeric_limits<T>::infinity() : l;
  }
#else
  (void)A, (void)det, (void)sign, (void)logabs;
  no_lapacke(fn);
#endif
}

/// Raw SVD: jobz 'A' (full), 'S' (reduced) or 'N' (values only).
template <class T>
SVDResult<T> svd_raw(const Tensor<T>& A, char jobz, const char* fn) {
#if DL_HAVE_LAPACKE
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), nb = batch_count(A.shape());
  const Shape bs = batch_of(A.shape());
  {
    const Tensor<T> c = A.detach().contiguous();
    for (int64_t i = 0; i < c.numel(); ++i)
      DL_CHECK(std::isfinite(c.data()[i]), fn, ": The algorithm failed to converge because the input matrix contained non-finite values.");
  }
  Tensor<T> a = col_major(A);
  const int64_t ucols = jobz == 'A' ? m : k, vrows = jobz == 'A' ? n : k;
  Tensor<T> S = empty<T>(with_last(bs, k));
  Tensor<T> u = jobz == 'N' ? Tensor<T>() : empty<T>(with_matrix(bs, ucols, m));  // column-major m x ucols
  Tensor<T> vt = jobz == 'N' ? Tensor<T>() : empty<T>(with_matrix(bs, n, vrows));  // column-major vrows x n
  if (m == 0 || n == 0) {
    SVDResult<T> r{Tensor<T>(), S, Tensor<T>()};
    if (jobz != 'N') {
      r.U = eye<T>(m, ucols).expand(with_matrix(bs, m, ucols)).contiguous();
      r.Vh = eye<T>(vrows, n).expand(with_matrix(bs, vrows, n)).contiguous();
    }
    return r;
  }
  std::vector<lapack_int> iwork(size_t(8 * k));
  T q = 0;
  T dummy = 0;
  Lapack<T>::gesdd(jobz, m, n, a.data(), S.data(), jobz == 'N' ? &dummy : u.data(), m, jobz == 'N' ? &dummy : vt.data(),
                   std::max<int64_t>(vrows, 1), &q, -1, iwork.data());
  std::vector<T> work(size_t(lwork_of(q)));
  for (int64_t i = 0; i < nb; ++i) {
    const lapack_int info = Lapack<T>::gesdd(jobz, m, n, a.data() + i * m * n, S.data() + i * k, jobz == 'N' ? &dummy : u.data() + i * m * ucols,
                                             m, jobz == 'N' ? &dummy : vt.data() + i * vrows * n, std::max<int64_t>(vrows, 1), work.data(),
                                             lapack_int(work.size()), iwork.data());
    DL_CHECK(info <= 0, fn, ": ", batch_prefix(i, bs.size() > 0),
             "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values (error code: ",
             info, ").");
  }
  if (jobz == 'N') return {Tensor<T>(), S, Tensor<T>()};
  return {from_col_major(u), S, from_col_major(vt)};
#else
  (void)A, (void)jobz;
  no_lapacke(fn);
#endif
}

/// Raw symmetric eigendecomposition; vectors when `vectors`.
template <class T>
EighResult<T> eigh_raw(const Tensor<T>& A, char uplo, bool vectors, const char* fn) {
#if DL_HAVE_LAPACKE
  const int64_t n = A.size(-1), nb = batch_count(A.shape());
  const Shape bs = batch_of(A.shape());
  Tensor<T> a = col_major(A);
  Tensor<T> w = empty<T>(with_last(bs, n));
  if (n == 0) return {w, vectors ? a : Tensor<T>()};
  const char jobz = vectors ? 'V' : 'N';
  T q = 0;
  lapack_int iq = 0;
  Lapack<T>::syevd(jobz, uplo, n, a.data(), w.data(), &q, -1, &iq, -1);
  std::vector<T> work(size_t(lwork_of(q)));
  std::vector<lapack_int> iwork(size_t(std::max<lapack_int>(1, iq)));
  for (int64_t i = 0; i < nb; ++i) {
    const lapack_int info = Lapack<T>::syevd(jobz, uplo, n, a.data() + i * n * n, w.data() + i * n, work.data(), lapack_int(work.size()),
                                             iwork.data(), lapack_int(iwork.size()));
    DL_CHECK(info <= 0, fn, ": ", batch_prefix(i, bs.size() > 0),
             "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: ",
             info, ").");
  }
  return {w, vectors ? from_col_major(a) : Tensor<T>()};
#else
  (void)A, (void)uplo, (void)vectors;
  no_lapacke(fn);
#endif
}

/// Raw triangular solve of broadcast-equal batches: A [..., n, n], B [..., r, c].
template <class T>
Tensor<T> trsm_raw(const Tensor<T>& A, const Tensor<T>& B, bool upper, bool left, bool unit) {
#if DL_HAVE_LAPACKE
  const int64_t n = A.size(-1), r = B.size(-2), c = B.size(-1), nb = batch_count(B.shape());
  Tensor<T> a = col_major(A), b = col_major(B);
  if (r > 0 && c > 0)
    for (int64_t i = 0; i < nb; ++i)
      Lapack<T>::trsm(left ? 'L' : 'R', upper ? 'U' : 'L', unit ? 'U' : 'N', r, c, a.data() + i * n * n, std::max<int64_t>(n, 1),
                      b.data() + i * r * c);
  return from_col_major(b);
#else
  (void)A, (void)B, (void)upper, (void)left, (void)unit;
  no_lapacke("linalg.solve_triangular");
#endif
}

/// Throws when two eigen/singular values of a batch are equal (their vectors' gradient divides by
/// their difference), or, with `zero`, when one is zero.
template <class T>
void check_distinct(const Tensor<T>& v, bool zero, const char* what, const char* values) {
  const Tensor<T> c = v.detach().contiguous();
  const int64_t k = c.size(-1), nb = k ? c.numel() / k : 0;
  for (int64_t b = 0; b < nb; ++b) {
    const T* p = c.data() + b * k;
    for (int64_t i = 0; i < k; ++i) {
      DL_CHECK(!(zero && p[i] == 0), what, ": the gradient with respect to the singular vectors is undefined: ", values, "[", i,
               "] is zero in batch element ", b, " of a non-square input");
      for (int64_t j = i + 1; j < k; ++j)
        DL_CHECK(p[i] != p[j], what, ": the gradient with respect to the vectors is undefined because the ", values,
                 " are not distinct (", values, "[", i, "] == ", values, "[", j, "] == ", p[i], " in batch element ", b,
                 "); a loss of the values alone, or invariant to the choice of basis, has a gradient through the values");
    }
  }
}

/// Tolerance max(atol, rtol * S_max) per batch, PyTorch's defaults.
template <class T>
Tensor<T> tolerance(const Tensor<T>& S, int64_t m, int64_t n, std::optional<double> atol, std::optional<double> rtol) {
  const double r = rtol ? *rtol : (atol && *atol > 0 ? 0.0 : std::numeric_limits<T>::epsilon() * double(std::max(m, n)));
  const double a = atol ? *atol : 0.0;
  const Tensor<T> smax = S.size(-1) ? amax(S, Dims{-1}, true) : zeros<T>(with_last(batch_of(S.shape(), 1), 1));
  return Tensor<T>(maximum(smax * T(r), T(a)));
}

/// pinv's backward (PyTorch's pinv_backward), differentiable.
template <class T>
Tensor<T> pinv_backward(const Tensor<T>& g, const Tensor<T>& pinvA, const Tensor<T>& A) {
  const int64_t m = A.size(-2), n = A.size(-1);
  const Tensor<T> pinvAh = mT(pinvA), gh = mT(g);
  if (m <= n) {
    const Tensor<T> K = matmul(gh, pinvA);
    const Tensor<T> KpinvAh = matmul(K, pinvAh);
    return Tensor<T>(-mT(matmul(pinvA, K)) + KpinvAh - matmul(matmul(A, pinvA), KpinvAh) +
                     matmul(matmul(pinvAh, pinvA), Tensor<T>(gh - matmul(K, A))));
  }
  const Tensor<T> K = matmul(pinvA, gh);
  const Tensor<T> pinvAhK = matmul(pinvAh, K);
  return Tensor<T>(-mT(matmul(K, pinvA)) + matmul(matmul(Tensor<T>(gh - matmul(A, K)), pinvA), pinvAh) + pinvAhK -
                   matmul(matmul(pinvAhK, pinvA), A));
}

/// Solves A X = B for matrices B, batch dims broadcast; differentiable.
template <class T>
Tensor<T> solve_matrix(const Tensor<T>& A, const Tensor<T>& B) {
  const int64_t n = A.size(-1);
  DL_CHECK(B.size(-2) == n, "linalg.solve: Incompatible shapes of A and B for the equation AX = B (", A.size(-2), "x", n, " and ",
           B.size(-2), "x", B.size(-1), ")");
  const Shape bs = broadcast_shapes(batch_of(A.shape()), batch_of(B.shape()));
  const bool batched = bs.size() > 0;
  Tensor<T> X;
  {
    NoGradGuard no_grad;
    X = lu_solve_raw(A.expand(with_matrix(bs, n, n)), B.expand(with_matrix(bs, n, B.size(-1))), "torch.linalg.solve",
                     [&](int64_t b, int64_t) {
                       return detail::cat("torch.linalg.solve: ", batch_prefix(b, batched), "The solver failed because the input matrix is singular.");
                     });
  }
  record<T>("LinalgSolveBackward", {A, B}, {&X}, [](const Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T>& A = s.in[0];
    const Tensor<T> gB = solve_matrix(mT(A), s.g[0]);
    Tensor<T> gA;
    if (s.needs[0]) gA = reduce_to(Tensor<T>(-matmul(gB, mT(s.out[0]))), A.shape());
    return {gA, reduce_to(gB, s.in[1].shape())};
  });
  return X;
}

template <class T>
Tensor<T> matrix_norm_svd(const Tensor<T>& A, Dims dim, bool keepdim, int kind) {
  const int n = A.dim();
  const int d0 = wrap_dim(dim[0], n, "linalg.matrix_norm"), d1 = wrap_dim(dim[1], n, "linalg.matrix_norm");
  Dims perm;
  for (int i = 0; i < n; ++i)
    if (i != d0 && i != d1) perm.push_back(i);
  perm.push_back(d0);
  perm.push_back(d1);
  const Tensor<T> S = svdvals(A.permute(perm));
  Tensor<T> r = kind == 0 ? sum(S, -1) : kind > 0 ? amax(S, Dims{-1}) : amin(S, Dims{-1});
  if (keepdim) {
    r = r.unsqueeze(std::min(d0, d1));
    r = r.unsqueeze(std::max(d0, d1));
  }
  return r;
}

}  // namespace impl

template <lapack_scalar T>
Tensor<T> inv(const Tensor<T>& A) {
  impl::check_matrix("linalg.inv", A, true);
  const int64_t n = A.size(-1);
  const bool batched = A.dim() > 2;
  Tensor<T> X;
  {
    NoGradGuard no_grad;
    X = impl::lu_solve_raw(A, eye<T>(n).expand(A.shape()), "linalg.inv", [&](int64_t b, int64_t info) {
      return detail::cat("linalg.inv: ", impl::batch_prefix(b, batched), "The diagonal element ", info,
                         " is zero, the inversion could not be completed because the input matrix is singular.");
    });
  }
  impl::record<T>("LinalgInvBackward", {A}, {&X}, [](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T> Xt = impl::mT(s.out[0]);
    return {Tensor<T>(-matmul(matmul(Xt, s.g[0]), Xt))};
  });
  return X;
}

template <lapack_scalar T>
Tensor<T> det(const Tensor<T>& A) {
  impl::check_matrix("linalg.det", A, true);
  Tensor<T> d;
  {
    NoGradGuard no_grad;
    impl::lu_det_raw<T>(A, &d, nullptr, nullptr, "linalg.det");
  }
  impl::record<T>("LinalgDetBackward", {A}, {&d}, [](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T>& A = s.in[0];
    const Tensor<T> gd = Tensor<T>(s.g[0] * s.out[0]).unsqueeze(-1).unsqueeze(-1);
    bool singular = false;
    {
      const Tensor<T> dc = s.out[0].detach().contiguous();
      for (int64_t i = 0; i < dc.numel(); ++i) singular = singular || dc.data()[i] == 0;
    }
    if (!singular) return {Tensor<T>(gd * impl::mT(inv(A)))};
    // Singular: the cofactor matrix through the SVD, det = det(U) det(Vh) prod(S), so
    // d det / dA = det(U) det(Vh) U diag(prod_{j != i} S_j) Vh (not differentiable again).
    NoGradGuard no_grad;
    const SVDResult<T> r = impl::svd_raw(A, 'A', "linalg.det");
    Tensor<T> su, sv;
    impl::lu_det_raw<T>(r.U, &su, nullptr, nullptr, "linalg.det");
    impl::lu_det_raw<T>(r.Vh, &sv, nullptr, nullptr, "linalg.det");
    const int64_t n = A.size(-1), nb = impl::batch_count(A.shape());
    Tensor<T> P = empty<T>(r.S.shape());
    const Tensor<T> g = s.g[0].detach().contiguous();
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t i = 0; i < n; ++i) {
        T p = g.data()[b] * su.data()[b] * sv.data()[b];
        for (int64_t j = 0; j < n; ++j)
          if (j != i) p *= r.S.data()[b * n + j];
        P.data()[b * n + i] = p;
      }
    return {matmul(Tensor<T>(r.U * P.unsqueeze(-2)), r.Vh)};
  });
  return d;
}

template <lapack_scalar T>
SlogdetResult<T> slogdet(const Tensor<T>& A) {
  impl::check_matrix("linalg.slogdet", A, true);
  SlogdetResult<T> r;
  {
    NoGradGuard no_grad;
    impl::lu_det_raw<T>(A, nullptr, &r.sign, &r.logabsdet, "linalg.slogdet");
  }
  impl::record<T>("LinalgSlogdetBackward", {A}, {&r.logabsdet}, [](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    {
      const Tensor<T> l = s.out[0].detach().contiguous();
      for (int64_t i = 0; i < l.numel(); ++i)
        DL_CHECK(!std::isinf(l.data()[i]), "linalg.slogdet: the gradient of logabsdet is undefined for a singular matrix (batch element ", i,
                 " has logabsdet = -inf)");
    }
    return {Tensor<T>(s.g[0].unsqueeze(-1).unsqueeze(-1) * impl::mT(inv(s.in[0])))};
  });
  return r;
}

template <lapack_scalar T>
Tensor<T> logdet(const Tensor<T>& A) {
  impl::check_matrix("logdet", A, true);
  const SlogdetResult<T> r = slogdet(A);
  return where(r.sign < T(0), std::numeric_limits<T>::quiet_NaN(), r.logabsdet);
}

template <lapack_scalar T>
Tensor<T> solve(const Tensor<T>& A, const Tensor<T>& B, bool left) {
  impl::check_matrix("linalg.solve", A, true);
  Shape vec_shape = A.shape();
  vec_shape.pop_back();
  const bool vector = B.dim() == 1 || (B.dim() == A.dim() - 1 && B.shape() == vec_shape);
  if (vector) {
    const Tensor<T> AA = left ? A : impl::mT(A);
    DL_CHECK(B.size(-1) == A.size(-1), "linalg.solve: Incompatible shapes of A and B for the equation ", left ? "Ax = b" : "xA = b", " (",
             A.size(-2), "x", A.size(-1), " and ", B.size(-1), ")");
    return impl::solve_matrix(AA, B.unsqueeze(-1)).squeeze(-1);
  }
  DL_CHECK(B.dim() >= 2, "linalg.solve: Expected B to have at least 1 dimension, but got ", B.dim());
  if (left) return impl::solve_matrix(A, B);
  DL_CHECK(B.size(-1) == A.size(-2), "linalg.solve: Incompatible shapes of A and B for the equation XA = B (", A.size(-2), "x", A.size(-1),
           " and ", B.size(-2), "x", B.size(-1), ")");
  return impl::mT(impl::solve_matrix(impl::mT(A), impl::mT(B))).contiguous();
}

template <lapack_scalar T>
Tensor<T> cholesky(const Tensor<T>& A, bool upper) {
  impl::check_matrix("linalg.cholesky", A, true);
  const int64_t n = A.size(-1), nb = impl::batch_count(A.shape());
  Tensor<T> L;
  {
    NoGradGuard no_grad;
#if DL_HAVE_LAPACKE
    // A row-major copy seen in column-major order is A^T: LAPACK's upper factor U of it (A = U^T U,
    // read from A's lower triangle, as before) is, seen row-major again, the lower factor L. No
    // transposing copies.
    Tensor<T> a = A.is_contiguous() ? impl::serial_copy(A.detach()) : impl::transposed_copy(impl::col_major(A));
    for (int64_t b = 0; b < nb && n > 0; ++b) {
      T* p = a.data() + b * n * n;
      const lapack_int info = impl::Lapack<T>::potrf('U', n, p);
      DL_CHECK(info <= 0, "linalg.cholesky: ", impl::batch_prefix(b, A.dim() > 2),
               "The factorization could not be completed because the input is not positive-definite (the leading minor of order ", info,
               " is not positive-definite).");
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) p[i * n + j] = 0;  // row-major (i, j), above the diagonal
    }
    L = a;
    if (upper) L = impl::mT(L).contiguous();
#else
    (void)nb, (void)n;
    impl::no_lapacke("linalg.cholesky");
#endif
  }
  impl::record<T>("LinalgCholeskyBackward", {A}, {&L}, [upper](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T> L = upper ? impl::mT(s.out[0]) : s.out[0];
    const Tensor<T> gL = upper ? impl::mT(s.g[0]) : s.g[0];
    // tril(L^T gL), symmetrised with its diagonal halved: phi; then L^-T phi L^-1.
    Tensor<T> gA = tril(matmul(impl::mT(L), gL));
    gA = Tensor<T>((gA + impl::mT(tril(gA, -1))) * T(0.5));
    gA = solve_triangular(impl::mT(L), gA, true, true);
    return {solve_triangular(L, gA, false, false)};
  });
  return L;
}

template <lapack_scalar T>
Tensor<T> cholesky_solve(const Tensor<T>& B, const Tensor<T>& L, bool upper) {
  impl::check_matrix("cholesky_solve", L, true, "A");
  DL_CHECK(B.dim() >= 2, "b should have at least 2 dimensions, but has ", B.dim(), " dimensions instead");
  const int64_t n = L.size(-1), k = B.size(-1);
  DL_CHECK(B.size(-2) == n, "Incompatible matrix sizes for cholesky_solve: each A matrix is ", n, " by ", n, " but each b matrix is ",
           B.size(-2), " by ", k);
  const Shape bs = broadcast_shapes(impl::batch_of(L.shape()), impl::batch_of(B.shape()));
  Tensor<T> X;
  {
    NoGradGuard no_grad;
#if DL_HAVE_LAPACKE
    Tensor<T> l = impl::col_major(L.expand(impl::with_matrix(bs, n, n)));
    Tensor<T> b = impl::col_major(B.expand(impl::with_matrix(bs, n, k)));
    const int64_t nb = numel(bs);
    for (int64_t i = 0; i < nb && n > 0 && k > 0; ++i)
      impl::Lapack<T>::potrs(upper ? 'U' : 'L', n, k, l.data() + i * n * n, b.data() + i * n * k);
    X = impl::from_col_major(b);
#else
    (void)bs;
    impl::no_lapacke("cholesky_solve");
#endif
  }
  impl::record<T>("CholeskySolveBackward", {B, L}, {&X}, [upper](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T>& L = s.in[1];
    const Tensor<T> gB = cholesky_solve(s.g[0], L, upper);
    Tensor<T> gL;
    if (s.needs[1]) {
      Tensor<T> common = matmul(gB, impl::mT(s.out[0]));
      common = Tensor<T>(common + impl::mT(common));
      gL = impl::reduce_to(Tensor<T>(-(upper ? matmul(L, common) : matmul(common, L))), L.shape());
    }
    return {impl::reduce_to(gB, s.in[0].shape()), gL};
  });
  return X;
}

template <lapack_scalar T>
Tensor<T> solve_triangular(const Tensor<T>& A, const Tensor<T>& B, bool upper, bool left, bool unitriangular) {
  impl::check_matrix("linalg.solve_triangular", A, true);
  DL_CHECK(B.dim() >= 2, "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.");
  const int64_t n = A.size(-1);
  DL_CHECK((left ? B.size(-2) : B.size(-1)) == n, "linalg.solve_triangular: Incompatible shapes of A and B for the equation ",
           left ? "AX = B" : "XA = B", " (", A.size(-2), "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  const Shape bs = broadcast_shapes(impl::batch_of(A.shape()), impl::batch_of(B.shape()));
  Tensor<T> X;
  {
    NoGradGuard no_grad;
    X = impl::trsm_raw(A.expand(impl::with_matrix(bs, n, n)), B.expand(impl::with_matrix(bs, B.size(-2), B.size(-1))), upper, left,
                       unitriangular);
  }
  impl::record<T>("LinalgSolveTriangularBackward", {A, B}, {&X},
                  [upper, left, unitriangular](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
                    const Tensor<T>& A = s.in[0];
                    const Tensor<T> gB = solve_triangular(impl::mT(A), s.g[0], !upper, left, unitriangular);
                    Tensor<T> gA;
                    if (s.needs[0]) {
                      const Tensor<T> Xt = impl::mT(s.out[0]);
                      gA = Tensor<T>(-(left ? matmul(gB, Xt) : matmul(Xt, gB)));
                      gA = upper ? triu(gA, unitriangular ? 1 : 0) : tril(gA, unitriangular ? -1 : 0);
                      gA = impl::reduce_to(gA, A.shape());
                    }
                    return {gA, impl::reduce_to(gB, s.in[1].shape())};
                  });
  return X;
}

template <lapack_scalar T>
QRResult<T> qr(const Tensor<T>& A, std::string_view mode) {
  DL_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "qr received unrecognized mode '", mode,
           "' but expected one of 'reduced' (default), 'r', or 'complete'");
  impl::check_matrix("linalg.qr", A, false);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), nb = impl::batch_count(A.shape());
  const Shape bs = impl::batch_of(A.shape());
  const bool complete = mode == "complete";
  QRResult<T> r;
  {
    NoGradGuard no_grad;
#if DL_HAVE_LAPACKE
    Tensor<T> a = impl::col_major(A);  // [..., n, m]: column j of matrix b at a + b*m*n + j*m
    Tensor<T> tau = empty<T>(impl::with_matrix(bs, 1, std::max<int64_t>(k, 1)));
    const int64_t qcols = complete ? m : k;
    Tensor<T> q = mode == "r" ? Tensor<T>() : zeros<T>(impl::with_matrix(bs, qcols, m));
    if (m > 0 && n > 0) {
      T w1 = 0, w2 = 0;
      impl::Lapack<T>::geqrf(m, n, a.data(), tau.data(), &w1, -1);
      if (q.defined() && k > 0) impl::Lapack<T>::orgqr(m, qcols, k, q.data(), tau.data(), &w2, -1);
      std::vector<T> work(size_t(std::max(impl::lwork_of(w1), impl::lwork_of(w2))));
      for (int64_t b = 0; b < nb; ++b) {
        T* pa = a.data() + b * m * n;
        T* pt = tau.data() + b * std::max<int64_t>(k, 1);
        impl::Lapack<T>::geqrf(m, n, pa, pt, work.data(), lapack_int(work.size()));
        if (!q.defined()) continue;
        T* pq = q.data() + b * m * qcols;
        std::copy(pa, pa + m * k, pq);  // the first k columns hold the reflectors
        impl::Lapack<T>::orgqr(m, qcols, k, pq, pt, work.data(), lapack_int(work.size()));
      }
    } else if (q.defined()) {
      q = eye<T>(qcols, m).expand(impl::with_matrix(bs, qcols, m)).contiguous();
    }
    const int64_t rrows = complete ? m : k;
    r.R = triu(impl::from_col_major(a).narrow(-2, 0, rrows));
    if (q.defined()) r.Q = impl::from_col_major(q);
    else r.Q = empty<T>({0});
#else
    (void)nb, (void)complete, (void)k, (void)bs;
    impl::no_lapacke("linalg.qr");
#endif
  }
  if (mode == "r") {
    impl::record<T>("LinalgQrBackward", {A}, {&r.R}, [](const impl::Saved<T>&) -> std::vector<Tensor<T>> {
      throw Error(
          "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
          "are going to differentiate through linalg.qr.");
    });
    return r;
  }
  impl::record<T>("LinalgQrBackward", {A}, {&r.Q, &r.R}, [complete](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T>& A = s.in[0];
    const Tensor<T>&Q = s.out[0], &R = s.out[1];
    const int64_t m = A.size(-2), n = A.size(-1);
    DL_CHECK(!complete || m <= n, "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
    const Tensor<T> gQ = s.g[0].defined() ? s.g[0] : zeros_like(Q);
    const Tensor<T> gR = s.g[1].defined() ? s.g[1] : zeros_like(R);
    // x R^-T for upper-triangular R.
    auto times_inv_rt = [](const Tensor<T>& x, const Tensor<T>& R) { return impl::mT(solve_triangular(R, impl::mT(x), true, true)); };
    // The square-or-tall case A = Q R with R [n, n] invertible (TensorFlow's derivation):
    // gA = Q (gR + tril(Q^T gQ - gQ^T Q + R gR^T - gR R^T) R^-T) + (gQ - Q Q^T gQ) R^-T.
    auto square = [&](const Tensor<T>& Q, const Tensor<T>& R, const Tensor<T>& gQ, const Tensor<T>& gR) {
      const Tensor<T> qdq = matmul(impl::mT(Q), gQ);
      const Tensor<T> rdr = matmul(R, impl::mT(gR));
      const Tensor<T> low = tril(Tensor<T>(qdq - impl::mT(qdq) + rdr - impl::mT(rdr)));
      const Tensor<T> ga = matmul(Q, Tensor<T>(gR + times_inv_rt(low, R)));
      const Tensor<T> gb = times_inv_rt(Tensor<T>(gQ - matmul(Q, qdq)), R);
      return Tensor<T>(ga + gb);
    };
    if (m >= n) return {square(Q, R, gQ, gR)};
    const Tensor<T> Y = A.narrow(-1, m, n - m), U = R.narrow(-1, 0, m), gU = gR.narrow(-1, 0, m), gV = gR.narrow(-1, m, n - m);
    const Tensor<T> gX = square(Q, U, Tensor<T>(gQ + matmul(Y, impl::mT(gV))), gU);
    return {cat(std::vector<Tensor<T>>{gX, matmul(Q, gV)}, -1)};
  });
  return r;
}

template <lapack_scalar T>
SVDResult<T> svd(const Tensor<T>& A, bool full_matrices) {
  impl::check_matrix("linalg.svd", A, false);
  SVDResult<T> r;
  {
    NoGradGuard no_grad;
    r = impl::svd_raw(A, full_matrices ? 'A' : 'S', "linalg.svd");
  }
  impl::record<T>("LinalgSvdBackward", {A}, {&r.U, &r.S, &r.Vh}, [full_matrices](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T>& S = s.out[1];
    const int64_t k = S.size(-1);
    Tensor<T> U = s.out[0], Vh = s.out[2], gU = s.g[0], gS = s.g[1], gVh = s.g[2];
    if (full_matrices) {  // the extra columns of U (rows of Vh) do not depend on A
      U = U.narrow(-1, 0, k);
      Vh = Vh.narrow(-2, 0, k);
      if (gU.defined()) gU = gU.narrow(-1, 0, k);
      if (gVh.defined()) gVh = gVh.narrow(-2, 0, k);
    }
    const int64_t m = U.size(-2), n = Vh.size(-1);
    if (!gU.defined() && !gVh.defined()) {
      if (!gS.defined()) return {Tensor<T>()};
      return {m >= n ? matmul(U, Tensor<T>(gS.unsqueeze(-1) * Vh)) : matmul(Tensor<T>(U * gS.unsqueeze(-2)), Vh)};
    }
    impl::check_distinct(S, (m > n && gU.defined()) || (m < n && gVh.defined()), "linalg.svd", "singular values");
    auto skew = [](const Tensor<T>& X) { return Tensor<T>(X - impl::mT(X)); };
    const Tensor<T> S2 = S * S;
    const Tensor<T> E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye<T>(k);  // E_ij = S_j^2 - S_i^2, ones on the diagonal
    Tensor<T> gA;
    if (gU.defined() && gVh.defined())
      gA = (skew(matmul(impl::mT(U), gU)) * S.unsqueeze(-2) + S.unsqueeze(-1) * skew(matmul(Vh, impl::mT(gVh)))) / E;
    else if (gU.defined())
      gA = skew(matmul(impl::mT(U), gU)) * S.unsqueeze(-2) / E;
    else
      gA = S.unsqueeze(-1) * skew(matmul(Vh, impl::mT(gVh))) / E;
    if (gS.defined()) gA = Tensor<T>(gA + impl::diag_embed(gS));
    if (m > n && gU.defined()) {
      gA = matmul(U, gA);
      const Tensor<T> gUSinv = gU / S.unsqueeze(-2);
      gA = Tensor<T>(gA + gUSinv - matmul(U, matmul(impl::mT(U), gUSinv)));
      return {matmul(gA, Vh)};
    }
    if (m < n && gVh.defined()) {
      gA = matmul(gA, Vh);
      const Tensor<T> SinvgVh = gVh / S.unsqueeze(-1);
      gA = Tensor<T>(gA + SinvgVh - matmul(matmul(SinvgVh, impl::mT(Vh)), Vh));
      return {matmul(U, gA)};
    }
    return {m >= n ? matmul(U, matmul(gA, Vh)) : matmul(matmul(U, gA), Vh)};
  });
  return r;
}

template <lapack_scalar T>
Tensor<T> svdvals(const Tensor<T>& A) {
  impl::check_matrix("linalg.svdvals", A, false);
  if (autograd::any_requires_grad(A)) return svd(A, false).S;
  NoGradGuard no_grad;
  return impl::svd_raw(A, 'N', "linalg.svdvals").S;
}

template <lapack_scalar T>
EighResult<T> eigh(const Tensor<T>& A, std::string_view UPLO) {
  DL_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", "Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  impl::check_matrix("linalg.eigh", A, true);
  EighResult<T> r;
  {
    NoGradGuard no_grad;
    r = impl::eigh_raw(A, char(std::toupper(UPLO[0])), true, "linalg.eigh");
  }
  impl::record<T>("LinalgEighBackward", {A}, {&r.eigenvalues, &r.eigenvectors}, [](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T>&L = s.out[0], &V = s.out[1];
    const Tensor<T>&gL = s.g[0], &gV = s.g[1];
    if (!gV.defined()) return {matmul(Tensor<T>(V * gL.unsqueeze(-2)), impl::mT(V))};
    impl::check_distinct(L, false, "linalg.eigh", "eigenvalues");
    const Tensor<T> VhgV = matmul(impl::mT(V), gV);
    const int64_t n = L.size(-1);
    const Tensor<T> E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye<T>(n);  // E_ij = L_j - L_i, ones on the diagonal
    Tensor<T> gA = (VhgV - impl::mT(VhgV)) * T(0.5) / E;
    if (gL.defined()) gA = Tensor<T>(gA + impl::diag_embed(gL));
    return {matmul(V, matmul(gA, impl::mT(V)))};
  });
  return r;
}

template <lapack_scalar T>
Tensor<T> eigvalsh(const Tensor<T>& A, std::string_view UPLO) {
  DL_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", "Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  impl::check_matrix("linalg.eigvalsh", A, true);
  if (autograd::any_requires_grad(A)) return eigh(A, UPLO).eigenvalues;
  NoGradGuard no_grad;
  return impl::eigh_raw(A, char(std::toupper(UPLO[0])), false, "linalg.eigvalsh").eigenvalues;
}

template <lapack_scalar T>
Tensor<T> pinv(const Tensor<T>& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  impl::check_matrix("linalg.pinv", A, hermitian);
  const int64_t m = A.size(-2), n = A.size(-1);
  Tensor<T> P;
  {
    NoGradGuard no_grad;
    if (hermitian) {
      const EighResult<T> e = impl::eigh_raw(A, 'L', true, "linalg.pinv");
      const Tensor<T> absl = abs(e.eigenvalues);
      const Tensor<T> tol = impl::tolerance(absl, m, n, atol, rtol);
      const Tensor<T> linv = where(absl > tol, T(1) / e.eigenvalues, T(0));
      P = matmul(Tensor<T>(e.eigenvectors * linv.unsqueeze(-2)), impl::mT(e.eigenvectors));
    } else {
      const SVDResult<T> r = impl::svd_raw(A, 'S', "linalg.pinv");
      const Tensor<T> tol = impl::tolerance(r.S, m, n, atol, rtol);
      const Tensor<T> sinv = where(r.S > tol, T(1) / r.S, T(0));
      P = matmul(Tensor<T>(impl::mT(r.Vh) * sinv.unsqueeze(-2)), impl::mT(r.U));
    }
  }
  // PyTorch's rule for both forms: the general pinv_backward (with hermitian, not symmetrised).
  impl::record<T>("LinalgPinvBackward", {A}, {&P}, [](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    return {impl::pinv_backward(s.g[0], s.out[0], s.in[0])};
  });
  return P;
}

template <lapack_scalar T>
Tensor<int64_t> matrix_rank(const Tensor<T>& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  impl::check_matrix("linalg.matrix_rank", A, hermitian);
  NoGradGuard no_grad;
  const Tensor<T> S = hermitian ? Tensor<T>(abs(impl::eigh_raw(A, 'L', false, "linalg.matrix_rank").eigenvalues))
                                : impl::svd_raw(A, 'N', "linalg.matrix_rank").S;
  const Tensor<T> tol = impl::tolerance(S, A.size(-2), A.size(-1), atol, rtol);
  return sum(cast<int64_t>(S > tol), -1);
}

template <lapack_scalar T>
LstsqResult<T> lstsq(const Tensor<T>& A, const Tensor<T>& B, std::optional<double> rcond, std::string_view driver) {
  DL_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
           "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  impl::check_matrix("torch.linalg.lstsq", A, false, "input");
  DL_CHECK(B.dim() >= 2, "torch.linalg.lstsq: other must have at least 2 dimensions.");
  DL_CHECK(A.size(-2) == B.size(-2), "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  const int64_t m = A.size(-2), n = A.size(-1), k = B.size(-1), ld = std::max<int64_t>({m, n, 1});
  const Shape bs = broadcast_shapes(impl::batch_of(A.shape()), impl::batch_of(B.shape()));
  const int64_t nb = numel(bs);
  const bool has_rank = driver != "gels", has_sv = driver == "gelsd" || driver == "gelss";
  LstsqResult<T> r;
  bool full_rank = true;
  {
    NoGradGuard no_grad;
#if DL_HAVE_LAPACKE
    Tensor<T> a = impl::col_major(A.expand(impl::with_matrix(bs, m, n)));
    Tensor<T> b = zeros<T>(impl::with_matrix(bs, k, ld));  // column-major ld x k
    b.narrow(-1, 0, m).copy_(impl::mT(B.expand(impl::with_matrix(bs, m, k))));
    r.rank = has_rank ? empty<int64_t>(bs) : empty<int64_t>({0});
    r.singular_values = has_sv ? empty<T>(impl::with_last(bs, std::min(m, n))) : empty<T>({0});
    const T rc = rcond ? T(*rcond) : std::numeric_limits<T>::epsilon() * T(std::max(m, n));
    std::vector<lapack_int> jpvt(size_t(std::max<int64_t>(n, 1)));
    const int64_t mn = std::max<int64_t>(std::min(m, n), 1);
    std::vector<T> sv(static_cast<size_t>(mn));
    T q = 0;
    lapack_int rank = 0, iq = 0;
    if (m > 0 && n > 0) {
      if (driver == "gelsy") impl::Lapack<T>::gelsy(m, n, k, a.data(), b.data(), ld, jpvt.data(), rc, &rank, &q, -1);
      else if (driver == "gelsd") impl::Lapack<T>::gelsd(m, n, k, a.data(), b.data(), ld, sv.data(), rc, &rank, &q, -1, &iq);
      else if (driver == "gelss") impl::Lapack<T>::gelss(m, n, k, a.data(), b.data(), ld, sv.data(), rc, &rank, &q, -1);
      else impl::Lapack<T>::gels(m, n, k, a.data(), b.data(), ld, &q, -1);
    }
    std::vector<T> work(size_t(impl::lwork_of(q)));
    std::vector<lapack_int> iwork(size_t(std::max<lapack_int>(iq, 1)));
    for (int64_t i = 0; i < nb; ++i) {
      T* pa = a.data() + i * m * n;
      T* pb = b.data() + i * ld * k;
      lapack_int info = 0;
      rank = lapack_int(std::min(m, n));
      if (m > 0 && n > 0) {
        std::fill(jpvt.begin(), jpvt.end(), 0);
        if (driver == "gelsy") info = impl::Lapack<T>::gelsy(m, n, k, pa, pb, ld, jpvt.data(), rc, &rank, work.data(), lapack_int(work.size()));
        else if (driver == "gelsd")
          info = impl::Lapack<T>::gelsd(m, n, k, pa, pb, ld, sv.data(), rc, &rank, work.data(), lapack_int(work.size()), iwork.data());
        else if (driver == "gelss") info = impl::Lapack<T>::gelss(m, n, k, pa, pb, ld, sv.data(), rc, &rank, work.data(), lapack_int(work.size()));
        else info = impl::Lapack<T>::gels(m, n, k, pa, pb, ld, work.data(), lapack_int(work.size()));
      }
      DL_CHECK(info <= 0, "torch.linalg.lstsq: ", impl::batch_prefix(i, bs.size() > 0),
               driver == "gels" ? "The least squares solution could not be computed because the input matrix does not have full rank (error code: "
                                : "The algorithm failed to converge (error code: ",
               info, ").");
      if (has_rank) r.rank.data()[i] = rank;
      full_rank = full_rank && rank == std::min(m, n);
      if (has_sv) std::copy(sv.begin(), sv.begin() + std::min(m, n), r.singular_values.data() + i * std::min(m, n));
    }
    r.solution = impl::mT(b.narrow(-1, 0, n)).contiguous();
#else
    (void)nb, (void)has_rank, (void)has_sv, (void)ld, (void)k, (void)rcond;
    impl::no_lapacke("torch.linalg.lstsq");
#endif
  }
  impl::record<T>("LinalgLstsqBackward", {A, B}, {&r.solution}, [](const impl::Saved<T>& s) -> std::vector<Tensor<T>> {
    const Tensor<T>&A = s.in[0], &B = s.in[1], &gX = s.g[0];
    const Tensor<T> pinvA = pinv(A);
    Tensor<T> gA, gB;
    if (s.needs[0]) gA = impl::reduce_to(impl::pinv_backward(matmul(gX, impl::mT(B)), pinvA, A), A.shape());
    if (s.needs[1]) gB = impl::reduce_to(matmul(impl::mT(pinvA), gX), B.shape());
    return {gA, gB};
  });
  if (m > n && driver != "gelsy" && full_rank)
    r.residuals = sum(square(Tensor<T>(matmul(A, r.solution) - B)), -2);
  else
    r.residuals = empty<T>({0});
  return r;
}

template <lapack_scalar T>
Tensor<T> matrix_norm(const Tensor<T>& A, std::string_view ord, Dims dim, bool keepdim) {
  DL_CHECK(A.dim() >= 2, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  DL_CHECK(dim.size() == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got ", dim);
  if (ord == "fro") return norm(A, 2, dim, keepdim);
  DL_CHECK(ord == "nuc", "linalg.matrix_norm: Order ", ord, " not supported.");
  return impl::matrix_norm_svd(A, dim, keepdim, 0);
}

template <lapack_scalar T>
Tensor<T> matrix_norm(const Tensor<T>& A, double ord, Dims dim, bool keepdim) {
  DL_CHECK(A.dim() >= 2, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  DL_CHECK(dim.size() == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got ", dim);
  const double a = std::abs(ord);
  DL_CHECK(a == 1 || a == 2 || std::isinf(ord), "linalg.matrix_norm: Order ", ord, " not supported.");
  if (a == 2) return impl::matrix_norm_svd(A, dim, keepdim, ord > 0 ? 1 : -1);
  int d0 = wrap_dim(dim[0], A.dim(), "linalg.matrix_norm"), d1 = wrap_dim(dim[1], A.dim(), "linalg.matrix_norm");
  DL_CHECK(d0 != d1, "linalg.matrix_norm: dims must be different. Got (", dim[0], ", ", dim[1], ")");
  if (std::isinf(ord)) std::swap(d0, d1);  // inf: sum along the rows (dim[1]), then the extreme over dim[0]
  // |A| summed over d0, then the max (min) over d1.
  Tensor<T> s = sum(abs(A), d0, true);
  Tensor<T> r = ord > 0 ? amax(s, Dims{d1}, true) : amin(s, Dims{d1}, true);
  if (!keepdim) r = r.squeeze(std::max(d0, d1)).squeeze(std::min(d0, d1));
  return r;
}

template <scalar_type T>
Tensor<T> vector_norm(const Tensor<T>& x, double ord, Dims dim, bool keepdim) {
  return norm(x, ord, dim, keepdim);
}

template <lapack_scalar T>
Tensor<T> matrix_power(const Tensor<T>& A, int64_t n) {
  impl::check_matrix("linalg.matrix_power", A, true);
  if (n == 0) return eye<T>(A.size(-1)).expand(A.shape()).contiguous();
  Tensor<T> base = n < 0 ? inv(A) : A;
  uint64_t e = n < 0 ? uint64_t(-(n + 1)) + 1 : uint64_t(n);
  if (e == 1) return base.clone();
  Tensor<T> result;
  while (true) {  // binary powering: O(log n) products
    if (e & 1) result = result.defined() ? matmul(result, base) : base;
    e >>= 1;
    if (!e) break;
    base = matmul(base, base);
  }
  return result;
}

template <scalar_type T>
Tensor<T> cross(const Tensor<T>& a_, const Tensor<T>& b_, int64_t dim) {
  DL_CHECK(a_.dim() == b_.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  const Shape shape = broadcast_shapes(a_.shape(), b_.shape());
  const int d = wrap_dim(dim, shape.size(), "linalg.cross");
  DL_CHECK(a_.size(d) == 3 && b_.size(d) == 3, "linalg.cross: inputs dimension ", dim, " must have length 3. Got ", a_.size(d), " and ",
           b_.size(d));
  const Tensor<T> a = a_.expand(shape), b = b_.expand(shape);
  auto c = [&](const Tensor<T>& x, int i) { return x.select(d, i); };
  return stack(std::vector<Tensor<T>>{Tensor<T>(c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1)), Tensor<T>(c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2)),
                                      Tensor<T>(c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0))},
               d);
}

template <scalar_type T>
Tensor<T> outer(const Tensor<T>& a, const Tensor<T>& b) {
  DL_CHECK(a.dim() == 1, "outer: Expected 1-D argument self, but got ", a.dim(), "-D");
  DL_CHECK(b.dim() == 1, "outer: Expected 1-D argument vec2, but got ", b.dim(), "-D");
  return a.unsqueeze(1) * b.unsqueeze(0);
}

template <scalar_type T>
Tensor<T> kron(const Tensor<T>& a, const Tensor<T>& b) {
  const int nd = std::max(a.dim(), b.dim());
  Shape ia, ib, out;  // a as [a0, 1, a1, 1, ...], b as [1, b0, 1, b1, ...]
  for (int d = 0; d < nd; ++d) {
    const int64_t sa = d - (nd - a.dim()) >= 0 ? a.size(d - (nd - a.dim())) : 1;
    const int64_t sb = d - (nd - b.dim()) >= 0 ? b.size(d - (nd - b.dim())) : 1;
    ia.push_back(sa);
    ia.push_back(1);
    ib.push_back(1);
    ib.push_back(sb);
    out.push_back(sa * sb);
  }
  return Tensor<T>(a.reshape(ia) * b.reshape(ib)).reshape(out);
}

template <scalar_type T>
Tensor<T> trace(const Tensor<T>& A) {
  DL_CHECK(A.dim() == 2, "trace: expected a matrix, but got tensor with dim ", A.dim());
  return sum(linalg::diagonal(A, 0, 0, 1));
}

template <scalar_type T>
Tensor<T> diagonal(const Tensor<T>& A, int64_t offset, int64_t dim1, int64_t dim2) {
  const int d1 = wrap_dim(dim1, A.dim(), "diagonal"), d2 = wrap_dim(dim2, A.dim(), "diagonal");
  DL_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  const int64_t len = std::max<int64_t>(
      0, offset >= 0 ? std::min(A.size(d1), A.size(d2) - offset) : std::min(A.size(d1) + offset, A.size(d2)));
  int64_t start = A.storage_offset();
  if (len > 0) start += offset >= 0 ? offset * A.stride(d2) : -offset * A.stride(d1);
  Shape shape;
  Strides strides;
  for (int d = 0; d < A.dim(); ++d)
    if (d != d1 && d != d2) {
      shape.push_back(A.size(d));
      strides.push_back(A.stride(d));
    }
  shape.push_back(len);
  strides.push_back(A.stride(d1) + A.stride(d2));
  return A.as_strided(shape, strides, start);
}

template <scalar_type T>
Tensor<T> diag(const Tensor<T>& x, int64_t offset) {
  DL_CHECK(x.dim() == 1 || x.dim() == 2, "matrix or a vector expected");
  if (x.dim() == 2) return linalg::diagonal(x, offset, 0, 1).clone();
  const int64_t n = x.size(0), N = n + std::abs(offset);
  Tensor<T> out = zeros<T>({N, N});
  const Tensor<T> xc = x.detach().contiguous();
  for (int64_t i = 0; i < n; ++i) out.data()[offset >= 0 ? i * N + i + offset : (i - offset) * N + i] = xc.data()[i];
  if constexpr (floating_scalar<T>)
    return dl::detail::record_kernel(out, "DiagEmbedBackward", {},
                                     [offset](const Tensor<T>& g, const std::vector<Tensor<T>>&, const std::vector<bool>&) {
                                       return std::vector<TensorImplPtr>{linalg::diagonal(g, offset, 0, 1).contiguous().impl()};
                                     },
                                     x);
  else
    return out;
}

template <scalar_type T>
Tensor<T> tril(const Tensor<T>& A, int64_t diagonal) {
  DL_CHECK(A.dim() >= 2, "tril: input tensor must have at least 2 dimensions");
  return where(impl::triangle_mask(A.size(-2), A.size(-1), diagonal, false), A, T(0));
}

template <scalar_type T>
Tensor<T> triu(const Tensor<T>& A, int64_t diagonal) {
  DL_CHECK(A.dim() >= 2, "triu: input tensor must have at least 2 dimensions");
  return where(impl::triangle_mask(A.size(-2), A.size(-1), diagonal, true), A, T(0));
}

}  // namespace dl::linalg

namespace dl {
// PyTorch keeps these at top level (torch.tril, torch.cholesky_solve...).
using linalg::cholesky_solve, linalg::cross, linalg::diag, linalg::kron, linalg::logdet, linalg::outer, linalg::trace, linalg::tril,
    linalg::triu;
/// torch.diagonal(A, offset = 0, dim1 = 0, dim2 = 1): a view (see dl::linalg::diagonal).
template <scalar_type T>
Tensor<T> diagonal(const Tensor<T>& A, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) {
  return linalg::diagonal(A, offset, dim1, dim2);
}
}  // namespace dl
