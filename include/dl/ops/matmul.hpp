// dl/ops/matmul.hpp — matrix products with PyTorch's semantics and shape rules: dot, mv, mm, matmul
// (batch broadcasting), bmm, addmm, addmv, addr, addbmm, baddbmm. Each is an evaluation boundary:
// expression operands are materialised first; strided and transposed operands are read in place.
// Every product records a backward rule made of differentiable products (second derivatives work).
#pragma once

#include <concepts>
#include <type_traits>
#include <vector>

#include "../tensor.hpp"
#include "gemm.hpp"
#include "gemm_bf16.hpp"
#include "kernel_backward.hpp"
#include "../expr/boundaries.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// Inner product of two 1-D tensors of the same size (a 0-d tensor).
template <expression A, expression B>
Tensor<expr::value_type_t<A>> dot(const A& a, const B& b);

/// Matrix-vector product: [n, m] x [m] -> [n].
template <expression A, expression B>
Tensor<expr::value_type_t<A>> mv(const A& mat, const B& vec);

/// Batched matrix product of 3-D tensors: [b, n, m] x [b, m, p] -> [b, n, p].
template <expression A, expression B>
Tensor<expr::value_type_t<A>> bmm(const A& batch1, const B& batch2);

/// beta * self + alpha * (mat1 @ mat2); self broadcasts to [n, p]. With beta == 0, self is
/// ignored (NaN in it does not propagate). self is added while each output tile is in cache.
template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addmm(const S& self, const A& mat1, const B& mat2, double beta = 1, double alpha = 1);

/// beta * self + alpha * (mat @ vec); self broadcasts to [n].
template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addmv(const S& self, const A& mat, const B& vec, double beta = 1, double alpha = 1);

/// beta * self + alpha * outer(vec1, vec2); self broadcasts to [n, m].
template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addr(const S& self, const A& vec1, const B& vec2, double beta = 1, double alpha = 1);

/// beta * self + alpha * sum_i batch1[i] @ batch2[i]; self broadcasts to [n, p].
template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addbmm(const S& self, const A& batch1, const B& batch2, double beta = 1, double alpha = 1);

/// beta * self + alpha * bmm(batch1, batch2); self broadcasts to [b, n, p].
template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> baddbmm(const S& self, const A& batch1, const B& batch2, double beta = 1, double alpha = 1);

// ------------------------------------------------------------------------------ implementation

namespace detail {

/// A Half/BFloat16 operand of a matrix product, widened to float: dl::Half and dl::BFloat16
/// products run in float and are rounded once at the end (PyTorch's kernels accumulate them in
/// float too). Differentiable: the gradient flows back through the conversions.
template <class E>
Tensor<float> widened(const E& e) {
  return materialize(e).template to<float>();
}

/// A product of dl::Half / dl::BFloat16 operands: `product` (one of the float products, e.g.
/// [](const auto&... x) { return mm(x...); }) on the operands widened, its result rounded to T
/// once. Differentiable, as widened.
template <class T, class Product, class... Es>
Tensor<T> in_float(const Product& product, const Es&... operands) {
  return product(widened(operands)...).template to<T>();
}

template <class A, class B>
constexpr void check_product_types(const char* /*what*/) {
  using TA = expr::value_type_t<A>;
  static_assert(std::is_same_v<TA, expr::value_type_t<B>>,
                "matrix products need operands of the same element type: convert one with .to<float>() or .to<double>()");
  static_assert(floating_scalar<TA>, "matrix products are defined for float and double tensors: convert with .to<float>()");
}

/// The last two dims of t as a strided matrix.
template <class T>
MatrixRef<T> matrix_ref(const Tensor<T>& t) {
  return {t.data(), t.stride(-2), t.stride(-1)};
}

/// Throws PyTorch's message unless `shape` can be expanded to `target`.
inline void check_expandable(const Shape& shape, const Shape& target) {
  bool ok = shape.size() <= target.size();
  for (int i = 0; ok && i < shape.size(); ++i) {
    const int64_t s = shape[shape.size() - 1 - i], t = target[target.size() - 1 - i];
    DL_CHECK(s == t || s == 1, "The expanded size of the tensor (", t, ") must match the existing size (", s,
             ") at non-singleton dimension ", target.size() - 1 - i, ".  Target sizes: ", target, ".  Tensor sizes: ", shape);
  }
  DL_CHECK(ok, "expand: the number of sizes provided (", target.size(), ") must be greater or equal to the number of dimensions in the tensor (",
           shape.size(), ")");
}

/// Sum of x[i * incx] * y[i * incy], vectorised for unit strides.
template <class T>
T dot_kernel(int64_t n, const T* x, int64_t incx, const T* y, int64_t incy) {
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  int64_t i = 0;
  T s = 0;
  if (incx == 1 && incy == 1) {
    V a0(T(0)), a1(T(0)), a2(T(0)), a3(T(0));
    for (; i + 4 * W <= n; i += 4 * W) {
      a0 = xsimd::fma(V::load_unaligned(x + i), V::load_unaligned(y + i), a0);
      a1 = xsimd::fma(V::load_unaligned(x + i + W), V::load_unaligned(y + i + W), a1);
      a2 = xsimd::fma(V::load_unaligned(x + i + 2 * W), V::load_unaligned(y + i + 2 * W), a2);
      a3 = xsimd::fma(V::load_unaligned(x + i + 3 * W), V::load_unaligned(y + i + 3 * W), a3);
    }
    for (; i + W <= n; i += W) a0 = xsimd::fma(V::load_unaligned(x + i), V::load_unaligned(y + i), a0);
    s = xsimd::hadd((a0 + a1) + (a2 + a3));
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
  }
  for (; i < n; ++i) s += x[i * incx] * y[i * incy];
  return s;
}

/// y = alpha * A @ x + beta * y (y contiguous, x any stride). beta == 0 never reads y.
template <class T>
void gemv(int64_t M, int64_t K, T alpha, MatrixRef<T> A, const T* x, int64_t incx, T beta, T* y) {
  if (M <= 0) return;
  if (A.cs == 1 || K == 1 || A.rs != 1) {
    Tensor<T> dense;
    if (A.cs != 1 && K > 1) {  // neither layout: one contiguous copy
      dense = empty<T>({M, K});
      for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) dense.data()[i * K + k] = A(i, k);
      A = {dense.data(), K, 1};
    }
    parallel_for(0, M, std::max<int64_t>(1, 32768 / std::max<int64_t>(K, 1)), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const T s = alpha * dot_kernel(K, A.data + i * A.rs, 1, x, incx);
        y[i] = beta == T(0) ? s : s + beta * y[i];
      }
    });
    return;
  }
  // Column-major A: y += (alpha x[k]) A[:, k], each thread on its own rows.
  using V = xsimd::batch<T>;
  constexpr int64_t W = V::size;
  parallel_for(0, M, std::max<int64_t>(W, 1 << 20 / std::max<int64_t>(K, 1)), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) y[i] = beta == T(0) ? T(0) : beta * y[i];
    for (int64_t k = 0; k < K; ++k) {
      const T s = alpha * x[k * incx];
      const V vs(s);
      const T* a = A.data + k * A.cs;
      int64_t i = i0;
      for (; i + W <= i1; i += W) xsimd::fma(vs, V::load_unaligned(a + i), V::load_unaligned(y + i)).store_unaligned(y + i);
      for (; i < i1; ++i) y[i] += s * a[i];
    }
  });
}

/// Offset of batch element `index` (row-major over `batch`) in a tensor with batch strides `st`.
inline int64_t batch_offset(int64_t index, const Shape& batch, const Strides& st) {
  int64_t off = 0;
  for (int d = batch.size() - 1; d >= 0; --d) {
    off += (index % batch[d]) * st[d];
    index /= batch[d];
  }
  return off;
}

/// out (contiguous, batch + [M, N]) = epilogue(alpha * a @ b + beta * out) for every batch
/// element; a and b are (batch + [M, K]) and (batch + [K, N]) views, broadcast dims of stride 0.
/// Small products run one per thread, large ones one at a time on all threads.
/// The batch dims of a batched product (out's leading dims) and a's and b's strides over them.
struct BatchGeometry {
  Shape batch;
  Strides sa, sb;
};
template <class T>
BatchGeometry batch_geometry(const Tensor<T>& a, const Tensor<T>& b, const Tensor<T>& out) {
  BatchGeometry g;
  for (int d = 0; d < out.dim() - 2; ++d) {
    g.batch.push_back(out.shape()[d]);
    g.sa.push_back(a.strides()[d]);
    g.sb.push_back(b.strides()[d]);
  }
  return g;
}

/// True when a (rows x cols) operand with strides (rs, cs) has a layout cuBLAS takes as it is
/// (row-major or column-major, leading dimension large enough); rs/cs are normalised for size-1 dims.
inline bool cublas_layout(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs) {
  if (cols <= 1) cs = 1;
  if (rows <= 1) rs = std::max<int64_t>(cols, 1) * cs;
  if (cs == 1 && rs >= std::max<int64_t>(cols, 1)) return true;
  if (rows <= 1 || cols <= 1) return false;
  return rs == 1 && cs >= rows;
}

/// batched_gemm on a CUDA device: one cuBLAS call per batch element (no epilogue).
template <class T>
void batched_gemm_cuda(Tensor<T> a, Tensor<T> b, const Tensor<T>& out, T alpha, T beta) {
  auto& hooks = cuda_backend();
  if (!hooks.gemm) no_cuda_runtime(out.device());
  const int64_t M = out.size(-2), N = out.size(-1), K = a.size(-1);
  auto layout_ok = [&](const Tensor<T>& t, int64_t r, int64_t c) {
    int64_t rs = t.stride(-2), cs = t.stride(-1);
    return cublas_layout(r, c, rs, cs);
  };
  if (!layout_ok(a, M, K)) a = a.contiguous();
  if (!layout_ok(b, K, N)) b = b.contiguous();
  const auto [batch, sa, sb] = batch_geometry(a, b, out);
  const int64_t nb = numel(batch);
  if (nb == 0 || M == 0 || N == 0) return;
  int64_t ars = a.stride(-2), acs = a.stride(-1), brs = b.stride(-2), bcs = b.stride(-1);
  cublas_layout(M, K, ars, acs);
  cublas_layout(K, N, brs, bcs);
  for (int64_t i = 0; i < nb; ++i)
    hooks.gemm(dtype_of<T>, out.device().index, M, N, K, double(alpha), a.data_ptr() + batch_offset(i, batch, sa), ars, acs,
               b.data_ptr() + batch_offset(i, batch, sb), brs, bcs, double(beta), out.data_ptr() + i * M * N, N);
}

template <class T, class Ep = Epilogue<T>>
void batched_gemm(const Tensor<T>& a, const Tensor<T>& b, const Tensor<T>& out, T alpha, T beta, const Ep& ep = {}) {
  if (out.device().is_cuda()) {
    DL_CHECK(!ep.active(), "internal: a GEMM epilogue on the GPU");
    DL_CHECK(a.device() == out.device() && b.device() == out.device(),
             "Expected all tensors to be on the same device, but found at least two devices, ", out.device(), " and ",
             a.device() == out.device() ? b.device() : a.device(), "!");
    batched_gemm_cuda(a, b, out, alpha, beta);
    return;
  }
  const int64_t M = out.size(-2), N = out.size(-1), K = a.size(-1);
  // Not a structured binding: clang before 16 cannot capture one in a lambda.
  const BatchGeometry geo = batch_geometry(a, b, out);
  const Shape& batch = geo.batch;
  const Strides &sa = geo.sa, &sb = geo.sb;
  const int64_t nb = numel(batch);
  if (nb == 0 || M == 0 || N == 0) return;
  const MatrixRef<T> A = matrix_ref(a), B = matrix_ref(b);
  auto one = [&](int64_t i, int threads) {
    const MatrixRef<T> Ai{A.data + batch_offset(i, batch, sa), A.rs, A.cs};
    const MatrixRef<T> Bi{B.data + batch_offset(i, batch, sb), B.rs, B.cs};
    T* C = out.data() + i * M * N;
    if (N == 1 && !ep.active())
      gemv(M, K, alpha, Ai, Bi.data, Bi.rs, beta, C);
    else if (M == 1 && !ep.active())
      gemv(N, K, alpha, Bi.t(), Ai.data, Ai.cs, beta, C);
    else
      gemm(M, N, K, alpha, Ai, Bi, beta, C, N, ep, threads);
  };
  if (nb > 1 && M * N * std::max<int64_t>(K, 1) < (int64_t(1) << 21)) {
    parallel_for(0, nb, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) one(i, 1);
    });
  } else {
    for (int64_t i = 0; i < nb; ++i) one(i, 0);
  }
}

/// Whether a product of these bfloat16 operands runs natively (gemm_bf16, dl/ops/gemm_bf16.hpp):
/// CPU tensors on a CPU where the dot-product instruction is enabled. Otherwise 16-bit products
/// widen to float (in_float).
template <class T>
bool native_bf16(const Tensor<T>& a, const Tensor<T>& b) {
  if constexpr (std::is_same_v<T, BFloat16>) return !a.device().is_cuda() && !b.device().is_cuda() && bf16_dot_enabled();
  else return false;
}

/// batched_gemm for bfloat16 CPU operands (out = a @ b, rounded once; optional per-column bias).
/// T is BFloat16 (a template so that it is instantiated only where called, as gemm_bf16).
template <class T>
  requires std::same_as<T, BFloat16>
void batched_gemm_bf16(const Tensor<T>& a, const Tensor<T>& b, const Tensor<T>& out, const T* bias = nullptr) {
  DL_CHECK(!out.device().is_cuda() && cpu_has_bf16_dot(), "internal: batched_gemm_bf16 needs CPU tensors and AVX512-BF16");
  const int64_t M = out.size(-2), N = out.size(-1), K = a.size(-1);
  const BatchGeometry geo = batch_geometry(a, b, out);
  const int64_t nb = numel(geo.batch);
  if (nb == 0 || M == 0 || N == 0) return;
  const MatrixRef<T> A = matrix_ref(a), B = matrix_ref(b);
  auto one = [&](int64_t i) {
    gemm_bf16(M, N, K, {A.data + batch_offset(i, geo.batch, geo.sa), A.rs, A.cs},
              {B.data + batch_offset(i, geo.batch, geo.sb), B.rs, B.cs}, out.data() + i * M * N, N, bias);
  };
  if (nb > 1 && M * N * std::max<int64_t>(K, 1) < (int64_t(1) << 21))
    parallel_for(0, nb, 1, [&](int64_t i0, int64_t i1) {  // small products: one per thread (gemm_bf16 runs serially)
      for (int64_t i = i0; i < i1; ++i) one(i);
    });
  else
    for (int64_t i = 0; i < nb; ++i) one(i);
}

template <class T>
Tensor<T> transpose_last(const Tensor<T>& t) {
  return t.transpose(-1, -2);
}

/// The product of a (..., M, K) and b (..., K, N), batch dims broadcast: the primitive behind
/// mm, bmm and N-d matmul. Backward: g @ b^T and a^T @ g, summed over broadcast batch dims.
template <class T>
Tensor<T> matmul_nd(const Tensor<T>& a, const Tensor<T>& b, const char* name) {
  const int da = a.dim(), db = b.dim();
  Shape ba, bb;
  for (int d = 0; d < da - 2; ++d) ba.push_back(a.shape()[d]);
  for (int d = 0; d < db - 2; ++d) bb.push_back(b.shape()[d]);
  const Shape batch = broadcast_shapes(ba, bb);
  Shape sa = batch, sb = batch, so = batch;
  sa.push_back(a.size(-2)), sa.push_back(a.size(-1));
  sb.push_back(b.size(-2)), sb.push_back(b.size(-1));
  so.push_back(a.size(-2)), so.push_back(b.size(-1));
  DL_CHECK(a.device() == b.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
           a.device().is_cuda() ? a.device() : b.device(), " and ", a.device().is_cuda() ? b.device() : a.device(), "!");
  Tensor<T> out = empty<T>(so, a.device());
  {
    NoGradGuard no_grad;
    if constexpr (std::is_same_v<T, BFloat16>) batched_gemm_bf16(a.expand(sa), b.expand(sb), out);
    else batched_gemm(a.expand(sa), b.expand(sb), out, T(1), T(0));
  }
  return record_kernel(out, name, {a, b}, [name](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(2);
    if (needs[0]) r[0] = sum_to(matmul_nd(g, transpose_last(s[1]), name), s[0].shape()).impl();
    if (needs[1]) r[1] = sum_to(matmul_nd(transpose_last(s[0]), g, name), s[1].shape()).impl();
    return r;
  }, a, b);
}

/// s * t, or t itself when s == 1 (differentiable). Backward rules scale with this one
/// expression type only: each distinct expression costs every translation unit compile time.
template <class T>
Tensor<T> scaled(const Tensor<T>& t, T s) {
  return s == T(1) ? t : Tensor<T>(t * s);
}

/// Outer product u v^T of two vectors as a K = 1 matrix product (differentiable).
template <class T>
Tensor<T> outer(const Tensor<T>& u, const Tensor<T>& v, const char* name) {
  return matmul_nd(u.unsqueeze(1), v.unsqueeze(0), name);
}

/// out = s * x broadcast to out's shape (out contiguous), without an expression.
template <class T>
void fill_scaled(const Tensor<T>& out, const Tensor<T>& x, T s) {
  if (out.is_cuda()) {  // one kernel (registered for every .cu file by <dl/cuda.hpp>)
    check_devices("fill_scaled", out, x);
    expr::assign(out, expr::apply(expr::Mul{}, x, expr::Scalar<T>{s}));
    return;
  }
  const Strides st = broadcast_strides(x.shape(), x.strides(), out.shape());
  const int nd = out.dim();
  const int64_t n = out.numel();
  int64_t idx[kMaxDims] = {};
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int d = 0; d < nd; ++d) off += idx[d] * st[d];
    out.data()[i] = s * x.data()[off];
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < out.shape()[d]) break;
      idx[d] = 0;
    }
  }
}

template <class T>
Tensor<T> mv_impl(const Tensor<T>& mat, const Tensor<T>& vec) {
  DL_CHECK(mat.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got 1, ", mat.dim(), ", ", vec.dim());
  DL_CHECK(mat.size(1) == vec.size(0), "size mismatch, got ", mat.size(0), ", ", mat.size(0), "x", mat.size(1), ",", vec.size(0));
  if (mat.is_cuda() || vec.is_cuda()) return matmul_nd(mat, vec.unsqueeze(1), "MvBackward").squeeze(-1);
  Tensor<T> out = empty<T>({mat.size(0)});
  gemv(mat.size(0), mat.size(1), T(1), matrix_ref(mat), vec.data(), vec.stride(0), T(0), out.data());
  return record_kernel(out, "MvBackward", {mat, vec}, [](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(2);
    if (needs[0]) r[0] = outer(g, s[1], "MvBackward").impl();
    if (needs[1]) r[1] = mv_impl(s[0].t(), g).impl();
    return r;
  }, mat, vec);
}

template <class T>
Tensor<T> dot_impl(const Tensor<T>& a, const Tensor<T>& b) {
  DL_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(), "D tensors");
  DL_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(), "] and src [", b.numel(),
           "] to have the same number of elements, but got ", a.numel(), " and ", b.numel(), " elements respectively");
  if (a.is_cuda() || b.is_cuda()) return matmul_nd(a.unsqueeze(0), b.unsqueeze(1), "DotBackward").reshape({});
  Tensor<T> out = empty<T>({});
  *out.data() = dot_kernel(a.numel(), a.data(), a.stride(0), b.data(), b.stride(0));
  return record_kernel(out, "DotBackward", {a, b}, [](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
    std::vector<TensorImplPtr> r(2);
    const Tensor<T> g1 = g.reshape({1});  // a 1-vector, so g * b is an outer product
    if (needs[0]) r[0] = outer(g1, s[1], "DotBackward").reshape(s[1].shape()).impl();
    if (needs[1]) r[1] = outer(g1, s[0], "DotBackward").reshape(s[0].shape()).impl();
    return r;
  }, a, b);
}

template <class T>
void check_mm(const Tensor<T>& a, const Tensor<T>& b) {
  DL_CHECK(a.dim() == 2, "self must be a matrix (got a ", a.dim(), "-D tensor of shape ", a.shape(), ")");
  DL_CHECK(b.dim() == 2, "mat2 must be a matrix (got a ", b.dim(), "-D tensor of shape ", b.shape(), ")");
  DL_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1), " and ",
           b.size(0), "x", b.size(1), ")");
}

template <class T>
void check_bmm(const Tensor<T>& a, const Tensor<T>& b) {
  DL_CHECK(a.dim() == 3, "batch1 must be a 3D tensor (got shape ", a.shape(), ")");
  DL_CHECK(b.dim() == 3, "batch2 must be a 3D tensor (got shape ", b.shape(), ")");
  DL_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2), "Expected size for first two dimensions of batch2 tensor to be: [",
           a.size(0), ", ", a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
}

/// Strides of t read as shape `target` (t broadcast; stride 0 on broadcast dims).
template <class T>
Strides expanded_strides(const Tensor<T>& t, const Shape& target) {
  return broadcast_strides(t.shape(), t.strides(), target);
}

/// True when dims [0, n) of t merge into one dim without a copy.
template <class T>
bool can_fold(const Tensor<T>& t, int n) {
  for (int d = 0; d + 1 < n; ++d)
    if (t.shape()[d] != 1 && t.stride(d) != t.stride(d + 1) * t.shape()[d + 1]) return false;
  return true;
}

/// matmul of bfloat16 CPU tensors on the dot-product path: every case as a matrix product
/// (vectors as 1-row / 1-column matrices). @pre native_bf16(a, b), dims >= 1, K agrees. T is BFloat16.
template <class T>
  requires std::same_as<T, BFloat16>
Tensor<T> matmul_bf16(const Tensor<T>& a, const Tensor<T>& b) {
  const int d1 = a.dim(), d2 = b.dim();
  const int64_t K = a.size(-1);
  if (d1 >= 2 && d2 <= 2 && K > 0 && can_fold(a, d1 - 1)) {  // (..., M, K) @ (K[, N]): the rows as one matrix
    Shape out_shape = a.shape();
    out_shape.pop_back();
    if (d2 == 2) out_shape.push_back(b.size(1));
    return matmul_nd(a.reshape({-1, K}), d2 == 1 ? b.unsqueeze(1) : b, d1 == 2 && d2 == 2 ? "MmBackward" : "MatmulBackward")
        .reshape(out_shape);
  }
  Tensor<T> out = matmul_nd(d1 == 1 ? a.unsqueeze(0) : a, d2 == 1 ? b.unsqueeze(1) : b,
                                   d1 >= 3 && d2 >= 3 ? "BmmBackward" : "MatmulBackward");
  if (d1 == 1) out = out.squeeze(-2);
  if (d2 == 1) out = out.squeeze(-1);
  return out;
}

}  // namespace detail

template <expression A, expression B>
Tensor<expr::value_type_t<A>> dot(const A& a, const B& b) {
  detail::check_product_types<A, B>("dot");
  if constexpr (half_float<expr::value_type_t<A>>)
    return detail::in_float<expr::value_type_t<A>>([](const auto&... x) { return dot(x...); }, a, b);
  else {
    return detail::dot_impl(detail::materialize(a), detail::materialize(b));
  }
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> mv(const A& mat, const B& vec) {
  detail::check_product_types<A, B>("mv");
  if constexpr (half_float<expr::value_type_t<A>>)
    return detail::in_float<expr::value_type_t<A>>([](const auto&... x) { return mv(x...); }, mat, vec);
  else {
    return detail::mv_impl(detail::materialize(mat), detail::materialize(vec));
  }
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> mm(const A& a, const B& b) {
  detail::check_product_types<A, B>("mm");
  if constexpr (half_float<expr::value_type_t<A>>) {
    const auto ta = detail::materialize(a);
    const auto tb = detail::materialize(b);
    if constexpr (std::is_same_v<expr::value_type_t<A>, BFloat16>) {
      if (detail::native_bf16(ta, tb)) {
        detail::check_mm(ta, tb);
        return detail::matmul_nd(ta, tb, "MmBackward");
      }
    }
    return detail::in_float<expr::value_type_t<A>>([](const auto&... x) { return mm(x...); }, ta, tb);
  } else {
    const auto ta = detail::materialize(a);
    const auto tb = detail::materialize(b);
    detail::check_mm(ta, tb);
    return detail::matmul_nd(ta, tb, "MmBackward");
  }
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> bmm(const A& batch1, const B& batch2) {
  detail::check_product_types<A, B>("bmm");
  if constexpr (half_float<expr::value_type_t<A>>) {
    const auto ta = detail::materialize(batch1);
    const auto tb = detail::materialize(batch2);
    if constexpr (std::is_same_v<expr::value_type_t<A>, BFloat16>) {
      if (detail::native_bf16(ta, tb)) {
        detail::check_bmm(ta, tb);
        return detail::matmul_nd(ta, tb, "BmmBackward");
      }
    }
    return detail::in_float<expr::value_type_t<A>>([](const auto&... x) { return bmm(x...); }, ta, tb);
  } else {
    const auto ta = detail::materialize(batch1);
    const auto tb = detail::materialize(batch2);
    detail::check_bmm(ta, tb);
    return detail::matmul_nd(ta, tb, "BmmBackward");
  }
}

template <expression A, expression B>
Tensor<expr::value_type_t<A>> matmul(const A& a_, const B& b_) {
  const ::dl::profiler::detail::RecordScope dl_profile_scope_("aten::matmul", a_, b_);
  detail::check_product_types<A, B>("matmul");
  if constexpr (half_float<expr::value_type_t<A>>) {
    const auto a = detail::materialize(a_);
    const auto b = detail::materialize(b_);
    const int d1 = a.dim(), d2 = b.dim();
    if constexpr (std::is_same_v<expr::value_type_t<A>, BFloat16>) {
      // Shapes that do not multiply take the widening path, which raises float's messages.
      if (detail::native_bf16(a, b) && d1 >= 1 && d2 >= 1 && a.size(-1) == (d2 == 1 ? b.size(0) : b.size(-2)))
        return detail::matmul_bf16(a, b);
    }
    return detail::in_float<expr::value_type_t<A>>([](const auto&... x) { return matmul(x...); }, a, b);
  } else {
    const auto a = detail::materialize(a_);
    const auto b = detail::materialize(b_);
    const int d1 = a.dim(), d2 = b.dim();
    DL_CHECK(d1 >= 1 && d2 >= 1, "both arguments to matmul need to be at least 1D, but they are ", d1, "D and ", d2, "D");
    if (d1 == 1 && d2 == 1) return detail::dot_impl(a, b);
    if (d1 == 2 && d2 == 1) return detail::mv_impl(a, b);
    if (d1 == 1 && d2 == 2) return mm(a.unsqueeze(0), b).squeeze(0);
    if (d1 == 2 && d2 == 2) return mm(a, b);
    const int64_t K = a.size(-1), Kb = d2 == 1 ? b.size(0) : b.size(-2);
    if (d1 >= 3 && d2 <= 2 && K > 0 && detail::can_fold(a, d1 - 1)) {
      // (..., M, K) @ (K, N): one matrix product over all rows, as a view.
      DL_CHECK(K == Kb, "mat1 and mat2 shapes cannot be multiplied (", numel(a.shape()) / std::max<int64_t>(K, 1), "x", K,
               " and ", b.size(0), "x", d2 == 2 ? b.size(1) : 1, ")");
      Shape out_shape = a.shape();
      out_shape.pop_back();
      const Tensor<expr::value_type_t<A>> rows = a.reshape({-1, K});
      if (d2 == 1) return detail::mv_impl(rows, b).reshape(out_shape);
      out_shape.push_back(b.size(1));
      return mm(rows, b).reshape(out_shape);
    }
    const auto a2 = d1 == 1 ? a.unsqueeze(0) : a;
    const auto b2 = d2 == 1 ? b.unsqueeze(1) : b;
    DL_CHECK(K == Kb, "matmul: shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", K, " != ", Kb,
             " in the contracted dimension)");
    auto out = detail::matmul_nd(a2, b2, d1 >= 3 && d2 >= 3 ? "BmmBackward" : "MatmulBackward");
    if (d1 == 1) out = out.squeeze(-2);
    if (d2 == 1) out = out.squeeze(-1);
    return out;
  }
}

template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addmm(const S& self_, const A& mat1, const B& mat2, double beta_, double alpha_) {
  detail::check_product_types<A, B>("addmm");
  static_assert(std::is_same_v<expr::value_type_t<S>, expr::value_type_t<A>>, "addmm: self must have the element type of mat1");
  if constexpr (half_float<expr::value_type_t<A>>)
    return detail::in_float<expr::value_type_t<A>>([&](const auto&... x) { return addmm(x..., beta_, alpha_); }, self_, mat1, mat2);
  else {
    using T = expr::value_type_t<A>;
    const auto self = detail::materialize(self_);
    const auto a = detail::materialize(mat1);
    const auto b = detail::materialize(mat2);
    DL_CHECK(a.dim() == 2, "mat1 must be a matrix, got ", a.dim(), "-D tensor");
    DL_CHECK(b.dim() == 2, "mat2 must be a matrix, got ", b.dim(), "-D tensor");
    detail::check_mm(a, b);
    const int64_t M = a.size(0), N = b.size(1);
    detail::check_expandable(self.shape(), {M, N});
    const T beta = T(beta_), alpha = T(alpha_);
    Tensor<T> out = empty<T>({M, N}, a.device());
    if (out.is_cuda()) {
      DL_CHECK(self.device() == a.device() && b.device() == a.device(),
               "Expected all tensors to be on the same device, but found at least two devices, ", a.device(), " and ",
               self.device() != a.device() ? self.device() : b.device(), "!");
      NoGradGuard no_grad;
      if (beta != T(0)) expr::assign(out, expr::apply(expr::Mul{}, self, expr::Scalar<T>{beta}));
      detail::batched_gemm_cuda(a, b, out, alpha, beta != T(0) ? T(1) : T(0));
    } else {
    detail::Epilogue<T> ep;
    if (beta != T(0)) {
      const Strides st = detail::expanded_strides(self, {M, N});
      ep.bias = {self.data(), st[0], st[1]};
      ep.bias_scale = beta;
    }
    detail::gemm(M, N, a.size(1), alpha, detail::matrix_ref(a), detail::matrix_ref(b), T(0), out.data(), N, ep);
    }
    return detail::record_kernel(out, "AddmmBackward", {a, b}, [beta, alpha, shape = self.shape()](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
      std::vector<TensorImplPtr> r(3);
      if (needs[0]) r[0] = detail::sum_to(detail::scaled(g, beta), shape).impl();
      if (needs[1]) r[1] = detail::scaled(detail::matmul_nd(g, s[1].t(), "MmBackward"), alpha).impl();
      if (needs[2]) r[2] = detail::scaled(detail::matmul_nd(s[0].t(), g, "MmBackward"), alpha).impl();
      return r;
    }, self, a, b);
  }
}

template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addmv(const S& self_, const A& mat, const B& vec, double beta_, double alpha_) {
  detail::check_product_types<A, B>("addmv");
  if constexpr (half_float<expr::value_type_t<A>>)
    return detail::in_float<expr::value_type_t<A>>([&](const auto&... x) { return addmv(x..., beta_, alpha_); }, self_, mat, vec);
  else {
    using T = expr::value_type_t<A>;
    const auto self = detail::materialize(self_);
    const auto m = detail::materialize(mat);
    const auto v = detail::materialize(vec);
    DL_CHECK(m.dim() == 2 && v.dim() == 1, "vector + matrix @ vector expected, got ", self.dim(), ", ", m.dim(), ", ", v.dim());
    DL_CHECK(m.size(1) == v.size(0), "size mismatch, got ", m.size(0), ", ", m.size(0), "x", m.size(1), ",", v.size(0));
    detail::check_expandable(self.shape(), Shape{m.size(0)});
    // On the GPU: addmm with a one-column matrix (cuBLAS; its backward rule covers this one).
    if (m.is_cuda() || v.is_cuda() || self.is_cuda())
      return addmm(self.dim() ? self.unsqueeze(-1) : self, m, v.unsqueeze(1), beta_, alpha_).squeeze(-1);
    const T beta = T(beta_), alpha = T(alpha_);
    Tensor<T> out = empty<T>({m.size(0)});
    if (beta != T(0)) detail::fill_scaled(out, self, beta);
    detail::gemv(m.size(0), m.size(1), alpha, detail::matrix_ref(m), v.data(), v.stride(0), beta != T(0) ? T(1) : T(0), out.data());
    return detail::record_kernel(out, "AddmvBackward", {m, v}, [beta, alpha, sshape = self.shape()](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
      std::vector<TensorImplPtr> r(3);
      if (needs[0]) r[0] = detail::sum_to(detail::scaled(g, beta), sshape).impl();
      if (needs[1]) r[1] = detail::scaled(detail::outer(g, s[1], "AddmvBackward"), alpha).impl();
      if (needs[2]) r[2] = detail::scaled(detail::mv_impl(s[0].t(), g), alpha).impl();
      return r;
    }, self, m, v);
  }
}

template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addr(const S& self_, const A& vec1, const B& vec2, double beta, double alpha) {
  detail::check_product_types<A, B>("addr");
  const auto self = detail::materialize(self_);
  const auto v1 = detail::materialize(vec1);
  const auto v2 = detail::materialize(vec2);
  DL_CHECK(v1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", v1.dim(), "-D");
  DL_CHECK(v2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", v2.dim(), "-D");
  // The outer product is a K = 1 matrix product: addmm's kernel, epilogue and backward rule.
  return addmm(self, v1.unsqueeze(1), v2.unsqueeze(0), beta, alpha);
}

template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> baddbmm(const S& self_, const A& batch1, const B& batch2, double beta_, double alpha_) {
  detail::check_product_types<A, B>("baddbmm");
  if constexpr (half_float<expr::value_type_t<A>>)
    return detail::in_float<expr::value_type_t<A>>([&](const auto&... x) { return baddbmm(x..., beta_, alpha_); }, self_, batch1, batch2);
  else {
    using T = expr::value_type_t<A>;
    const auto self = detail::materialize(self_);
    const auto a = detail::materialize(batch1);
    const auto b = detail::materialize(batch2);
    detail::check_bmm(a, b);
    const Shape shape{a.size(0), a.size(1), b.size(2)};
    detail::check_expandable(self.shape(), shape);
    const T beta = T(beta_), alpha = T(alpha_);
    Tensor<T> out = empty<T>(shape, a.device());
    {
      NoGradGuard no_grad;
      if (beta != T(0)) detail::fill_scaled(out, self, beta);
      detail::batched_gemm(a, b, out, alpha, beta != T(0) ? T(1) : T(0));
    }
    return detail::record_kernel(out, "BaddbmmBackward", {a, b}, [beta, alpha, sshape = self.shape()](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
      std::vector<TensorImplPtr> r(3);
      if (needs[0]) r[0] = detail::sum_to(detail::scaled(g, beta), sshape).impl();
      if (needs[1]) r[1] = detail::scaled(detail::matmul_nd(g, s[1].transpose(1, 2), "BmmBackward"), alpha).impl();
      if (needs[2]) r[2] = detail::scaled(detail::matmul_nd(s[0].transpose(1, 2), g, "BmmBackward"), alpha).impl();
      return r;
    }, self, a, b);
  }
}

template <expression S, expression A, expression B>
Tensor<expr::value_type_t<A>> addbmm(const S& self_, const A& batch1, const B& batch2, double beta_, double alpha_) {
  detail::check_product_types<A, B>("addbmm");
  if constexpr (half_float<expr::value_type_t<A>>)
    return detail::in_float<expr::value_type_t<A>>([&](const auto&... x) { return addbmm(x..., beta_, alpha_); }, self_, batch1, batch2);
  else {
    using T = expr::value_type_t<A>;
    const auto self = detail::materialize(self_);
    const auto a = detail::materialize(batch1);
    const auto b = detail::materialize(batch2);
    detail::check_bmm(a, b);
    const int64_t nb = a.size(0), M = a.size(1), N = b.size(2), K = a.size(2);
    detail::check_expandable(self.shape(), {M, N});
    // On the GPU: one product, sum_i A_i B_i = [A_0 .. A_nb-1] @ [B_0; ..; B_nb-1] (addmm's cuBLAS
    // call and backward rule; the reshapes are differentiable).
    if (a.is_cuda() || b.is_cuda() || self.is_cuda())
      return addmm(self, a.transpose(0, 1).reshape({M, nb * K}), b.reshape({nb * K, N}), beta_, alpha_);
    const T beta = T(beta_), alpha = T(alpha_);
    Tensor<T> out = empty<T>({M, N});
    {
      NoGradGuard no_grad;
      if (beta != T(0)) detail::fill_scaled(out, self, beta);
      else std::fill(out.data(), out.data() + out.numel(), T(0));
      // Accumulated product by product into the one output (each product uses all threads).
      for (int64_t i = 0; i < nb; ++i)
        detail::gemm(M, N, K, alpha, detail::matrix_ref(a[i]), detail::matrix_ref(b[i]), T(1), out.data(), N);
    }
    return detail::record_kernel(out, "AddbmmBackward", {a, b}, [beta, alpha, nb, sshape = self.shape()](const Tensor<T>& g, const std::vector<Tensor<T>>& s, const std::vector<bool>& needs) {
      std::vector<TensorImplPtr> r(3);
      const Tensor<T> gb = g.unsqueeze(0).expand({nb, g.size(0), g.size(1)});
      if (needs[0]) r[0] = detail::sum_to(detail::scaled(g, beta), sshape).impl();
      if (needs[1]) r[1] = detail::scaled(detail::matmul_nd(gb, s[1].transpose(1, 2), "BmmBackward"), alpha).impl();
      if (needs[2]) r[2] = detail::scaled(detail::matmul_nd(s[0].transpose(1, 2), gb, "BmmBackward"), alpha).impl();
      return r;
    }, self, a, b);
  }
}

}  // namespace dl

// Compiled mode: the instantiations libdl_kernels holds (DL_EXTERN_TEMPLATE, dl/config.hpp).
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::detail::matmul_nd<float>(const dl::Tensor<float>&, const dl::Tensor<float>&, const char*))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::matmul(const dl::Tensor<float>&, const dl::Tensor<float>&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::mm(const dl::Tensor<float>&, const dl::Tensor<float>&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::bmm(const dl::Tensor<float>&, const dl::Tensor<float>&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::dot(const dl::Tensor<float>&, const dl::Tensor<float>&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::mv(const dl::Tensor<float>&, const dl::Tensor<float>&))
DL_EXTERN_TEMPLATE(ops, dl::Tensor<float> dl::addmm(const dl::Tensor<float>&, const dl::Tensor<float>&, const dl::Tensor<float>&, double, double))
