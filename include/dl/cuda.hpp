// dl/cuda.hpp — tensors on NVIDIA GPUs. Include it (after or instead of <dl/dl.hpp>) in any
// translation unit of a program that uses CUDA tensors; it installs the CUDA allocator, copies and
// cuBLAS into the core at start-up.
//
//   dl::Device dev = dl::cuda::is_available() ? dl::Device("cuda:0") : dl::kCPU;
//   auto a = dl::randn({1 << 24}, dev), b = dl::rand({1 << 24}).to(dev);
//   dl::Tensor<float> y = dl::sigmoid(a * b + 1.0f) * 2.0f;   // one generated kernel
//   float s = y.sum().item();
//
// What runs where: copies, creation, matrix products (cuBLAS) and the allocator work from any
// translation unit. A fused elementwise expression, a reduction or a fused backward pass runs a
// kernel generated from the expression's type, which nvcc must compile: evaluate expressions in a
// .cu file (compiled by nvcc, which includes this header through dl/tensor.hpp's kernels). A g++
// translation unit can evaluate an expression on CUDA tensors when some .cu file of the program
// evaluates the same expression type; otherwise it throws a dl::Error saying so. The basic kernels
// dl itself needs (fill, copy, casts, gradient accumulation, sums) are registered by every .cu file
// that includes this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstring>

#include "tensor.hpp"
#include "cuda/allocator.hpp"
#include "cuda/blas.hpp"
#include "cuda/runtime.hpp"
#include "cuda/stream.hpp"

namespace dl::cuda {

/// Waits for all work on `device` (a dl::Device overload of synchronize(int)).
inline void synchronize(Device d) { synchronize(d.is_cuda() ? d.index : -1); }

namespace detail {

/// The copy behind Tensor::to / cuda() / cpu() / item(): on the current stream of the CUDA side.
inline void copy_bytes(void* dst, Device dd, const void* src, Device sd, size_t n, bool non_blocking) {
  const Device dev = dd.is_cuda() ? dd : sd;
  DeviceGuard g(dev.index);
  const cudaStream_t s = current_stream(dev.index).handle();
  if (dd.is_cuda() && sd.is_cuda() && dd.index != sd.index) DL_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dd.index, src, sd.index, n, s));
  else DL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s));
  if (!non_blocking) {
    DL_CUDA_CHECK(cudaStreamSynchronize(s));
    return;
  }
  // An asynchronous copy from or to pinned memory keeps the pinned block from being reused until
  // the copy is done.
  auto& host = host_allocator();
  if (sd.is_cpu() && host.is_pinned(src)) host.record_stream(src, s, dev.index);
  if (dd.is_cpu() && host.is_pinned(dst)) host.record_stream(dst, s, dev.index);
}

/// Installs the CUDA allocator, copies and cuBLAS into the core (once, at start-up).
inline bool install_hooks() {
  auto& storage = ::dl::detail::cuda_backend();
  storage.allocate = [](size_t n, size_t* block_size, int device) -> void* {
    return device_allocator().allocate(n, device, current_stream(device).handle(), block_size);
  };
  storage.deallocate = [](void* p, size_t, int) {
    if (p) device_allocator().deallocate(p);
  };
  auto& rt = ::dl::detail::cuda_backend();
  rt.copy = &copy_bytes;
  rt.pinned_alloc = [](size_t n) { return host_allocator().allocate(n); };
  rt.pinned_free = [](void* p) { host_allocator().deallocate(p); };
  rt.is_pinned = [](const void* p) { return host_allocator().is_pinned(p); };
  rt.gemm = &gemm;
  rt.linear = &linear_lt;
  rt.device_count = &::dl::cuda::device_count;
  return true;
}
inline const bool hooks_installed = install_hooks();

}  // namespace detail
}  // namespace dl::cuda

#if defined(__CUDACC__)
#include "cuda/indexing.hpp"
#include "cuda/random.hpp"
#if defined(__CUDACC__)
// The kernel generator: every expression a .cu translation unit evaluates on the GPU gets its
// kernel here (a .cu file includes <dl/cuda.hpp>; a host-only one may include just <dl/tensor.hpp>).
#include "cuda/kernels.hpp"
#endif

// The kernels dl's own code paths evaluate on CUDA tensors (fills, copies, casts, gradient
// accumulation, scaling, products of two tensors, sums), registered by every .cu file that includes this header so that
// host-only translation units can run them too.
namespace dl::cuda::detail {
template <class T>
struct BasicKernels {
  using Leaf = expr::LeafView<T>;
  using Scalar = expr::ScalarView<T>;
  template <class V>
  static bool rows() {
    return expr::DeviceRows<expr::AssignBody<V, T>>::registered;
  }
  static bool instantiate() {
    // Fill (zeros, ones, full), fill_/zero_, copy_ of a tensor, clone/contiguous.
    bool ok = rows<Scalar>() && rows<expr::ApplyView<expr::Copy, Scalar>>() && rows<Leaf>() &&
              rows<expr::ApplyView<expr::Copy, Leaf>>();
    if constexpr (floating_scalar<T>) {
      // Mul of two tensors: dropout's input * mask.
      ok = ok && rows<expr::ApplyView<expr::Add, Leaf, Leaf>>() && rows<expr::ApplyView<expr::Mul, Leaf, Scalar>>() &&
           rows<expr::ApplyView<expr::Mul, Leaf, Leaf>>();
      // Sums (gradients of broadcast operands); Half/BFloat16 ones accumulate in float.
      if constexpr (half_float<T>)
        ok = ok && expr::DeviceReduce<expr::SumReducer<float>, float, expr::ApplyView<expr::Cast<float>, Leaf>>::registered;
      else
        ok = ok && expr::DeviceReduce<expr::SumReducer<T>, T, Leaf>::registered;
    }
    return ok;
  }
};
template <class T, class U>
inline const bool cast_kernel = expr::DeviceRows<expr::AssignBody<expr::ApplyView<expr::Cast<T>, expr::LeafView<U>>, T>>::registered;
inline const bool basic_kernels_registered =
    BasicKernels<float>::instantiate() && BasicKernels<double>::instantiate() && BasicKernels<int64_t>::instantiate() &&
    BasicKernels<int32_t>::instantiate() && BasicKernels<uint8_t>::instantiate() && BasicKernels<bool>::instantiate() &&
    cast_kernel<float, double> && cast_kernel<double, float> && cast_kernel<float, int64_t> && cast_kernel<int64_t, float> &&
    cast_kernel<float, bool> && cast_kernel<float, int32_t> && BasicKernels<Half>::instantiate() &&
    BasicKernels<BFloat16>::instantiate() && cast_kernel<Half, float> && cast_kernel<float, Half> &&
    cast_kernel<BFloat16, float> && cast_kernel<float, BFloat16>;
}  // namespace dl::cuda::detail
#endif
