// dl/cuda/blas.hpp — matrix products on the GPU through cuBLAS (one handle per host thread and
// device, bound to the current stream), with dl::backends::cuda::matmul::allow_tf32.
#pragma once

#include <cublas_v2.h>

#include <array>

#include "../dtype.hpp"
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

/// The cuBLAS handle of this thread for `device` (created on first use, kept for the thread's
/// life: creating a handle costs far more than a product).
inline cublasHandle_t cublas_handle(int device) {
  struct Handles {
    std::array<cublasHandle_t, kMaxDevices> h{};
    ~Handles() {
      for (cublasHandle_t x : h)
        if (x) (void)cublasDestroy(x);
    }
  };
  thread_local Handles handles;
  DL_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " is out of range");
  cublasHandle_t& h = handles.h[size_t(device)];
  if (!h) {
    DeviceGuard g(device);
    DL_CUBLAS_CHECK(cublasCreate(&h));
  }
  return h;
}

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

/// The hook behind dl's matmul family on CUDA tensors (see CudaRuntimeHooks::gemm). C is row-major
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

}  // namespace detail
}  // namespace dl::cuda
