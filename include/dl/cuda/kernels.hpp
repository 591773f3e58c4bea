// dl/cuda/kernels.hpp — the generated kernels (nvcc only). The CPU evaluator's loop bodies
// (dl/expr/loop.hpp: AssignBody, the fused backward's BackwardBody) are trivially copyable and
// their seek/run are __host__ __device__, so one kernel template runs any of them: each thread
// finds its element's row, seeks the kernel view there and runs one element. Reductions get a
// block-per-output kernel that combines in a fixed order (deterministic results).
//
// This header is included by dl/tensor.hpp in every translation unit nvcc compiles; each
// instantiation registers its launcher (dl/expr/device.hpp), so host-only translation units of the
// same program can run the kernel too.
#pragma once

#if !defined(__CUDACC__)
#error "dl/cuda/kernels.hpp holds CUDA kernels: include it only in translation units compiled by nvcc"
#endif

#include <algorithm>

#include "../expr/loop.hpp"
#include "../expr/reduce_kernels.hpp"
#include "../storage.hpp"
#include "stream.hpp"

namespace dl::cuda::detail {

inline constexpr int kThreads = 256;

/// Blocks for n elements at kThreads per block and `per_thread` elements per thread.
inline unsigned grid_for(int64_t n, int per_thread = 1) {
  const int64_t b = (n + int64_t(kThreads) * per_thread - 1) / (int64_t(kThreads) * per_thread);
  return unsigned(std::clamp<int64_t>(b, 1, int64_t(1) << 30));
}

/// Runs body over every element of the plan. Index type I is int32 when every offset fits.
template <expr::Access K, class I, class Body>
__global__ void __launch_bounds__(kThreads) rows_kernel(Body body, expr::LoopPlan p) {
  const I n = I(p.numel);
  const I stride = I(gridDim.x) * I(blockDim.x);
  I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x);
  const int nouter = p.nd - 1;
  if (nouter == 0) {
    int64_t idx[1] = {0};
    body.seek(idx, 0);
    for (; i < n; i += stride) body.template run<K>(int64_t(i), int64_t(i) + 1);
    return;
  }
  const I row = I(p.size[nouter]);
  int64_t idx[kMaxDims];
  for (; i < n; i += stride) {
    I q = i / row;
    const I j = i - q * row;
    for (int d = nouter - 1; d >= 0; --d) {
      const I s = I(p.size[d]);
      const I r = q / s;
      idx[d] = int64_t(q - r * s);
      q = r;
    }
    body.seek(idx, nouter);
    body.template run<K>(int64_t(j), int64_t(j) + 1);
  }
}


/// Whether the loop can count in 32 bits: the index plus the grid stride (about the element
/// count, one element per thread) must stay below 2^31. Element offsets are always 64-bit.
inline bool fits_int32(const expr::LoopPlan& p) { return p.numel <= (int64_t(1) << 30); }

template <expr::Access K, class Body>
void launch_rows(const expr::LoopPlan& p, const Body& body, cudaStream_t s) {
  if (fits_int32(p)) rows_kernel<K, int32_t><<<grid_for(p.numel), kThreads, 0, s>>>(body, p);
  else rows_kernel<K, int64_t><<<grid_for(p.numel, 4), kThreads, 0, s>>>(body, p);
}

}  // namespace dl::cuda::detail

namespace dl::expr {

template <class Body>
struct DeviceRows {
  static_assert(std::is_trivially_copyable_v<Body>, "a CUDA kernel body must be trivially copyable");
  static void launch(const LoopPlan& p, const Body& body, int device) {
    const cuda::DeviceGuard guard(device);
    const cudaStream_t s = cuda::current_stream(device).handle();
    switch (p.access) {
      case Access::Contig: cuda::detail::launch_rows<Access::Contig>(p, body, s); break;
      case Access::Mixed: cuda::detail::launch_rows<Access::Mixed>(p, body, s); break;
      case Access::Strided: cuda::detail::launch_rows<Access::Strided>(p, body, s); break;
    }
    cuda::detail::check_launch("a fused elementwise kernel");
  }
  static inline const bool registered =
      dl::detail::KernelRegistry::instance().add(typeid(DeviceRowsKey<Body>), reinterpret_cast<void*>(&launch));
};

}  // namespace dl::expr

namespace dl::cuda::detail {

/// Combines every thread's acc in a fixed tree order (deterministic) and thread 0 writes *dst.
template <class R, class A>
__device__ void block_combine(A* buf, A acc, A* dst) {
  buf[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) buf[threadIdx.x] = R::combine(buf[threadIdx.x], buf[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *dst = buf[0];
  __syncthreads();
}

/// Pass 1 of a reduction: block b of output m combines reduced elements [lo, hi) of row m of the
/// (kept dims | reduced dims) space and writes partial[m * nb + b] (or out[m] when nb == 1).
template <class R, class A, class View>
__global__ void __launch_bounds__(kThreads) reduce_kernel(View view, expr::Space s, int64_t red, int64_t M, int64_t nb,
                                                           int64_t chunk, A* out) {
  __shared__ A buf[kThreads];
  const int nouter = s.nd - 1;
  const int64_t row = s.size[nouter];
  for (int64_t w = blockIdx.x; w < M * nb; w += gridDim.x) {
    const int64_t m = w / nb, b = w - m * nb;
    const int64_t lo = b * chunk, hi = lo + chunk < red ? lo + chunk : red;
    A acc = R::identity();
    int64_t idx[kMaxDims];
    for (int64_t r = lo + threadIdx.x; r < hi; r += blockDim.x) {
      int64_t q = (m * red + r) / row;
      const int64_t j = (m * red + r) - q * row;
      for (int d = nouter - 1; d >= 0; --d) {
        idx[d] = q % s.size[d];
        q /= s.size[d];
      }
      view.seek(idx, nouter);
      acc = R::combine(acc, static_cast<A>(view.template at<expr::Access::Strided, false>(j)));
    }
    block_combine<R>(buf, acc, out + w);
  }
}

/// Pass 2: out[m] = combination of partial[m * nb .. m * nb + nb), in order.
template <class R, class A>
__global__ void __launch_bounds__(kThreads) combine_kernel(const A* partial, int64_t nb, int64_t M, A* out) {
  __shared__ A buf[kThreads];
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    A acc = R::identity();
    for (int64_t b = threadIdx.x; b < nb; b += blockDim.x) acc = R::combine(acc, partial[m * nb + b]);
    block_combine<R>(buf, acc, out + m);
  }
}

}  // namespace dl::cuda::detail

namespace dl::expr {

template <class R, class A, class View>
struct DeviceReduce {
  static void launch(const View& view, const Space& s, int64_t red, int64_t M, A* out, int device) {
    const cuda::DeviceGuard guard(device);
    const cudaStream_t st = cuda::current_stream(device).handle();
    // Split long reductions over several blocks per output so the GPU fills up; the split depends
    // only on the sizes, so results do not depend on the machine.
    constexpr int64_t kPerBlock = int64_t(cuda::detail::kThreads) * 16;
    int64_t nb = std::clamp<int64_t>((red + kPerBlock - 1) / kPerBlock, 1, std::max<int64_t>(1, 2048 / std::max<int64_t>(M, 1)));
    const int64_t chunk = (red + nb - 1) / nb;
    nb = std::max<int64_t>(1, (red + chunk - 1) / std::max<int64_t>(chunk, 1));
    const unsigned grid = unsigned(std::clamp<int64_t>(M * nb, 1, 65535 * 16));
    if (nb == 1) {
      cuda::detail::reduce_kernel<R, A><<<grid, cuda::detail::kThreads, 0, st>>>(view, s, red, M, 1, std::max<int64_t>(red, 1), out);
    } else {
      auto partial = Storage::allocate(size_t(M * nb) * sizeof(A), Device(kCUDA, device));
      A* p = static_cast<A*>(partial->data());
      cuda::detail::reduce_kernel<R, A><<<grid, cuda::detail::kThreads, 0, st>>>(view, s, red, M, nb, chunk, p);
      cuda::detail::combine_kernel<R, A><<<unsigned(std::clamp<int64_t>(M, 1, 65535 * 16)), cuda::detail::kThreads, 0, st>>>(
          p, nb, M, out);
      // `partial` returns to the caching allocator now; the allocator hands it out again only on
      // this stream, behind the kernels above.
    }
    cuda::detail::check_launch("a reduction kernel");
  }
  static inline const bool registered =
      dl::detail::KernelRegistry::instance().add(typeid(DeviceReduceKey<R, A, View>), reinterpret_cast<void*>(&launch));
};

}  // namespace dl::expr
