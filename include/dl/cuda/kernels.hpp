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

/// Calls f(T{}) with the element type of `dtype` (the hooks' dtype dispatch).
template <class F>
void with_dtype(ScalarType dtype, F&& f) {
  switch (dtype) {
    case ScalarType::Float: f(float{}); break;
    case ScalarType::Double: f(double{}); break;
    case ScalarType::Int32: f(int32_t{}); break;
    case ScalarType::Int64: f(int64_t{}); break;
    case ScalarType::UInt8: f(uint8_t{}); break;
    case ScalarType::Bool: f(bool{}); break;
    case ScalarType::Half: f(Half{}); break;
    case ScalarType::BFloat16: f(BFloat16{}); break;
  }
}

/// Blocks for n elements at kThreads per block and `per_thread` elements per thread.
inline unsigned grid_for(int64_t n, int per_thread = 1) {
  const int64_t b = (n + int64_t(kThreads) * per_thread - 1) / (int64_t(kThreads) * per_thread);
  return unsigned(std::clamp<int64_t>(b, 1, int64_t(1) << 30));
}

// ---- 16-byte vector loads and stores on the contiguous path
//
// A fully contiguous forward or fused backward pass (one row after the loop plan merged the dims)
// runs V = 16 / sizeof(element) elements per thread when every operand's row is 16-byte aligned:
// the thread loads all V elements of each operand first, computes, then stores all V, with the
// rows' alignment asserted (__builtin_assume_aligned), so that the compiler's load/store
// vectorizer merges them into 16-byte vector loads and stores (tests/static/cuda_vector_ptx.sh
// checks the PTX).

/// Calls f(p) on each row pointer an expression view reads through (leaves) or writes (outputs).
template <class T, class F>
__device__ DL_INLINE void for_each_row(expr::LeafView<T>& v, F& f) {
  f(v.row);
}
template <class T, class F>
__device__ DL_INLINE void for_each_row(expr::ScalarView<T>&, F&) {}
template <class Op, class... Cs, class F>
__device__ DL_INLINE void for_each_row(expr::ApplyView<Op, Cs...>& v, F& f) {
  expr::static_for<sizeof...(Cs)>([&](auto I) { for_each_row(expr::get<I>(v.args), f); });
}

template <class Body>
inline constexpr int kVectorElems = 0;  // no vector path
template <class View, class O>
inline constexpr int kVectorElems<expr::AssignBody<View, O>> = int(16 / sizeof(O)) > 1 ? int(16 / sizeof(O)) : 1;

/// Whether every row of body is 16-byte aligned (the same answer in every thread: a uniform branch).
template <class View, class O>
__device__ DL_INLINE bool rows_aligned(expr::AssignBody<View, O>& b) {
  bool ok = (reinterpret_cast<uintptr_t>(b.out.row) & 15) == 0;
  auto check = [&](auto& row) { ok = ok && (reinterpret_cast<uintptr_t>(row) & 15) == 0; };
  for_each_row(b.src, check);
  return ok;
}

template <class View, class O>
__device__ DL_INLINE void assume_rows_aligned(expr::AssignBody<View, O>& b) {
  b.out.row = static_cast<O*>(__builtin_assume_aligned(b.out.row, 16));
  auto assume = [](auto& row) { row = static_cast<std::remove_reference_t<decltype(row)>>(__builtin_assume_aligned(row, 16)); };
  for_each_row(b.src, assume);
}

/// Elements j .. j + V - 1 of a contiguous forward pass: all loads, then all stores.
template <int V, class View, class O>
__device__ DL_INLINE void run_vector(const expr::AssignBody<View, O>& b, int64_t j) {
  O v[V];
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = static_cast<O>(b.src.template at<expr::Access::Contig, false>(j + k));
#pragma unroll
  for (int k = 0; k < V; ++k) b.out.row[j + k] = v[k];
}

// The fused backward pass: V elements a thread as well, each leaf's adjoints stored V at a time.
template <class View, class GView>
inline constexpr int kVectorElems<autograd::detail::BackwardBody<View, GView>> =
    int(16 / sizeof(typename GView::value_type)) > 1 ? int(16 / sizeof(typename GView::value_type)) : 1;

template <class View, class GView>
__device__ DL_INLINE bool rows_aligned(autograd::detail::BackwardBody<View, GView>& b) {
  bool ok = true;
  auto check = [&](auto& row) { ok = ok && (reinterpret_cast<uintptr_t>(row) & 15) == 0; };
  for_each_row(b.src, check);
  for_each_row(b.g, check);
  for (size_t k = 0; k < View::leaves; ++k) ok = ok && (reinterpret_cast<uintptr_t>(b.outs[k]) & 15) == 0;
  return ok;
}

template <class View, class GView>
__device__ DL_INLINE void assume_rows_aligned(autograd::detail::BackwardBody<View, GView>& b) {
  auto assume = [](auto& row) { row = static_cast<std::remove_reference_t<decltype(row)>>(__builtin_assume_aligned(row, 16)); };
  for_each_row(b.src, assume);
  for_each_row(b.g, assume);  // (the outputs: at the stores, in run_vector)
}

/// Elements j .. j + V - 1 of a contiguous fused backward pass (one row: row_off is 0): the
/// adjoints of all V first, then each selected leaf's V values.
template <int V, class View, class GView>
__device__ DL_INLINE void run_vector(const autograd::detail::BackwardBody<View, GView>& b, int64_t j) {
  using Acc = expr::acc_t<View, false>;
  Acc acc[V];
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const auto tape = b.src.template tape<expr::Access::Contig, false>(j + e);
    acc[e] = Acc{};
    b.src.template backprop<0, false>(tape, b.g.template at<expr::Access::Contig, false>(j + e), acc[e]);
  }
  expr::static_for<View::leaves>([&](auto k) {
    using L = typename autograd::detail::list_at<typename View::leaf_types, k>::type;
    if constexpr (floating_scalar<L>) {
      if (b.outs[k]) {
        L* p = static_cast<L*>(__builtin_assume_aligned(b.outs[k], 16)) + j;  // (checked by rows_aligned)
#pragma unroll
        for (int e = 0; e < V; ++e) p[e] = expr::get<k>(acc[e]);
      }
    }
  });
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
    if constexpr (K == expr::Access::Contig && kVectorElems<Body> > 1) {
      constexpr int V = kVectorElems<Body>;
      if (rows_aligned(body)) {
        assume_rows_aligned(body);
        const I nv = n / V;
        for (I v = i; v < nv; v += stride) run_vector<V>(body, int64_t(v) * V);
        for (I t = nv * V + i; t < n; t += stride) body.template run<K>(int64_t(t), int64_t(t) + 1);
        return;
      }
    }
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
  // The contiguous one-row case runs V elements a thread (when aligned): V times fewer threads.
  const int per_thread = K == expr::Access::Contig && p.nd == 1 ? std::max(1, kVectorElems<Body>) : 1;
  if (fits_int32(p)) rows_kernel<K, int32_t><<<grid_for(p.numel, per_thread), kThreads, 0, s>>>(body, p);
  else rows_kernel<K, int64_t><<<grid_for(p.numel, 4 * per_thread), kThreads, 0, s>>>(body, p);
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
