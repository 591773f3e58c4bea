// dl/cuda/blas.hpp — matrix products on the GPU through cuBLAS (one handle per host thread and
// device, bound to the current stream), with dl::backends::cuda::matmul::allow_tf32.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <array>

#include "../dtype.hpp"
#include "../storage.hpp"
#include "../expr/device.hpp"
#include "stream.hpp"

namespace dl::cuda {

/// A failed cuBLAS call.
class CublasError : public dl::Error {
 public:
  using dl::Error::Error;
};

namespace detail {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) {
  throw CublasError(::dl::detail::cat("cuBLAS error: ", cublasGetStatusString(s), " (", cublasGetStatusName(s), ") in ",
                                      call, " at ", file, ":", line));
}

#define DL_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                        \
    const cublasStatus_t dl_cublas_st_ = (call);                                              \
    if (dl_cublas_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                  \
      ::dl::cuda::detail::throw_cublas_error(dl_cublas_st_, #call, __FILE__, __LINE__);       \
  } while (0)

/// This thread's handle of a cuBLAS-style library for `device` (created on first use, kept for the
/// thread's life: creating a handle costs far more than a product).
template <class H, cublasStatus_t (*Create)(H*), cublasStatus_t (*Destroy)(H)>
H thread_handle(int device) {
  struct Handles {
    std::array<H, kMaxDevices> h{};
    ~Handles() {
      for (H x : h)
        if (x) (void)Destroy(x);
    }
  };
  thread_local Handles handles;
  DL_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " is out of range");
  H& h = handles.h[size_t(device)];
  if (!h) {
    DeviceGuard g(device);
    DL_CUBLAS_CHECK(Create(&h));
  }
  return h;
}

/// The cuBLAS handle of this thread for `device`.
inline cublasHandle_t cublas_handle(int device) { return thread_handle<cublasHandle_t, &cublasCreate_v2, &cublasDestroy_v2>(device); }

/// Operation and leading dimension of an operand for cuBLAS's column-major view of its transpose:
/// a row-major operand (unit column stride) is read as is, a column-major one transposed.
inline void blas_operand(int64_t rs, int64_t cs, cublasOperation_t& op, int64_t& ld) {
  if (cs == 1) {
    op = CUBLAS_OP_N;
    ld = rs;
  } else {
    op = CUBLAS_OP_T;
    ld = cs;
  }
}

/// The hook behind dl's matmul family on CUDA tensors (see DeviceBackend::gemm). C is row-major
/// (M x N, row stride ldc): cuBLAS computes its column-major transpose, C^T = B^T A^T.
inline void gemm(ScalarType dtype, int device, int64_t M, int64_t N, int64_t K, double alpha, const void* A,
                 int64_t a_rs, int64_t a_cs, const void* B, int64_t b_rs, int64_t b_cs, double beta, void* C,
                 int64_t ldc) {
  cublasHandle_t h = cublas_handle(device);
  DeviceGuard g(device);
  DL_CUBLAS_CHECK(cublasSetStream(h, current_stream(device).handle()));
  cublasOperation_t opa, opb;
  int64_t lda, ldb;
  blas_operand(a_rs, a_cs, opa, lda);
  blas_operand(b_rs, b_cs, opb, ldb);
  if (dtype == ScalarType::Float) {
    DL_CUBLAS_CHECK(cublasSetMathMode(h, ::dl::backends::cuda::matmul::allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                                   : CUBLAS_DEFAULT_MATH));
    const float al = float(alpha), be = float(beta);
    DL_CUBLAS_CHECK(cublasSgemm_64(h, opb, opa, N, M, K, &al, static_cast<const float*>(B), ldb,
                                   static_cast<const float*>(A), lda, &be, static_cast<float*>(C), ldc));
  } else if (dtype == ScalarType::Double) {
    DL_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    DL_CUBLAS_CHECK(cublasDgemm_64(h, opb, opa, N, M, K, &alpha, static_cast<const double*>(B), ldb,
                                   static_cast<const double*>(A), lda, &beta, static_cast<double*>(C), ldc));
  } else {
    throw Error(::dl::detail::cat("matrix products on the GPU take float or double tensors, got ", dtype_name(dtype)));
  }
  check_launch("cuBLAS gemm");
}

// ---- cuBLASLt: the linear layer's product with its bias and ReLU in the GEMM epilogue

/// The cuBLASLt handle of this thread for `device`.
inline cublasLtHandle_t cublaslt_handle(int device) {
  return thread_handle<cublasLtHandle_t, &cublasLtCreate, &cublasLtDestroy>(device);
}

/// Owns the cuBLASLt descriptors of one call.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescriptors() {
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (c) (void)cublasLtMatrixLayoutDestroy(c);
    if (b) (void)cublasLtMatrixLayoutDestroy(b);
    if (a) (void)cublasLtMatrixLayoutDestroy(a);
    if (op) (void)cublasLtMatmulDescDestroy(op);
  }
};

/// The hook behind F::linear on CUDA tensors (DeviceBackend::linear): C [M, N] (row-major,
/// contiguous) = act(X [M, K] @ W[N, K]^T + bias[N]) with X and W row-major (row strides ldx, ldw,
/// unit column stride), bias contiguous or null, act 0 (none) or 1 (ReLU). In cuBLASLt's
/// column-major terms: C^T [N, M] = op_T(W) [N, K] * X^T [K, M], and the epilogue adds the bias
/// along the rows of C^T. Float only; returns false where the call does not apply (the caller then
/// uses cuBLAS and a separate kernel).
inline bool linear_lt(ScalarType dtype, int device, int64_t M, int64_t N, int64_t K, const void* X, int64_t ldx,
                      const void* W, int64_t ldw, const void* bias, int act, void* C) {
  if (dtype != ScalarType::Float || M == 0 || N == 0 || K == 0) return false;
  cublasLtHandle_t h = cublaslt_handle(device);
  DeviceGuard g(device);
  const cudaStream_t stream = current_stream(device).handle();
  LtDescriptors d;
  const cublasComputeType_t compute =
      ::dl::backends::cuda::matmul::allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  DL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  DL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  DL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  const cublasLtEpilogue_t epilogue = bias ? (act ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                           : (act ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  DL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  if (bias) DL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  // W as stored: column-major [K, N] with leading dimension ldw; X: column-major [K, M], ldx.
  DL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.a, CUDA_R_32F, uint64_t(K), uint64_t(N), ldw));
  DL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.b, CUDA_R_32F, uint64_t(K), uint64_t(M), ldx));
  DL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, CUDA_R_32F, uint64_t(N), uint64_t(M), N));
  constexpr size_t kWorkspace = size_t(32) << 20;
  DL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  DL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                                       sizeof kWorkspace));
  cublasLtMatmulHeuristicResult_t algo{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(h, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &algo, &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return false;
  // The workspace comes from the caching allocator, on this stream (no cudaMalloc in a loop).
  auto workspace = Storage::allocate(std::max<size_t>(algo.workspaceSize, 1), Device(kCUDA, device));
  const float one = 1, zero = 0;
  DL_CUBLAS_CHECK(cublasLtMatmul(h, d.op, &one, W, d.a, X, d.b, &zero, C, d.c, C, d.c, &algo.algo, workspace->data(),
                                 algo.workspaceSize, stream));
  check_launch("cuBLASLt matmul (linear)");
  return true;
}

}  // namespace detail
}  // namespace dl::cuda
