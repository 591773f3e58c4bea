// dl/cuda/indexing.hpp — the GPU side of the indexing ops (nvcc only): the indexed copy behind
// gather, scatter, scatter_add, index_select/add/copy/fill, x[idx...] and index_put (its
// addressing is dl/ops/index_geometry.hpp's, shared with the CPU test), the stream compaction
// behind nonzero and masked_select, and max/min/argmax/argmin along a dim. <dl/cuda.hpp> installs
// these into dl::detail::cuda_backend() (dl/backend/dispatch.hpp), so host-only translation units run them too.
#pragma once

#if !defined(__CUDACC__)
#error "dl/cuda/indexing.hpp holds CUDA kernels: include it only in translation units compiled by nvcc"
#endif

#include <cmath>
#include <vector>

#include "../ops/index_geometry.hpp"
#include "kernels.hpp"

namespace dl::cuda::detail {

using ::dl::detail::IndexGeometry;
using ::dl::detail::IndexMode;

/// The first out-of-range index a kernel met (flag 0: none).
struct IndexFault {
  unsigned long long flag;
  long long which;
  long long value;
};

template <class T>
__device__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (half_float<T>) {
    // A compare-and-swap loop on the aligned 32-bit word that holds the 16-bit element; the sum
    // is formed in float and rounded once, as the CPU's accumulation.
    auto* word = reinterpret_cast<unsigned int*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
    const unsigned shift = (reinterpret_cast<uintptr_t>(p) & 2) ? 16u : 0u;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const T cur = T::from_bits(uint16_t(assumed >> shift));
      const unsigned sum = T(float(cur) + float(v)).bits();
      old = atomicCAS(word, assumed, (assumed & ~(0xffffu << shift)) | (sum << shift));
    } while (assumed != old);
  } else {
    atomicAdd(p, v);
  }
}

template <class T>
inline constexpr bool has_atomic_add =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
    half_float<T>;

template <class T, IndexMode M>
__global__ void __launch_bounds__(kThreads)
    indexed_copy_kernel(IndexGeometry g, T* indexed, T* dense, T value, bool scaled, IndexFault* fault) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < g.numel; j += stride) {
    int64_t od = 0, oi = 0, bad = 0;
    int which = 0;
    if (!::dl::detail::index_offsets(g, j, &od, &oi, &which, &bad)) {
      if (atomicCAS(&fault->flag, 0ull, 1ull) == 0ull) {
        fault->which = which;
        fault->value = bad;
      }
      continue;
    }
    if constexpr (M == IndexMode::Gather) {
      dense[od] = indexed[oi];
    } else if constexpr (M == IndexMode::Assign) {
      indexed[oi] = dense ? dense[od] : value;
    } else if constexpr (has_atomic_add<T>) {
      atomic_add(indexed + oi, dense ? (scaled ? T(dense[od] * value) : dense[od]) : value);
    }
  }
}

/// A small device scratch buffer from the caching allocator, zeroed on the current stream.
inline std::shared_ptr<Storage> zeroed_scratch(size_t nbytes, int device, cudaStream_t s) {
  auto buf = Storage::allocate(nbytes, Device(kCUDA, device));
  DL_CUDA_CHECK(cudaMemsetAsync(buf->data(), 0, nbytes, s));
  return buf;
}

inline void indexed_copy(ScalarType dtype, int device, IndexMode mode, const IndexGeometry& g, void* indexed, void* dense,
                         const void* value, const char* what) {
  if (g.numel == 0) return;
  const DeviceGuard guard(device);
  const cudaStream_t s = current_stream(device).handle();
  auto fault_buf = zeroed_scratch(sizeof(IndexFault), device, s);
  auto* fault = static_cast<IndexFault*>(fault_buf->data());
  with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = value ? *static_cast<const T*>(value) : T(0);
    T* x = static_cast<T*>(indexed);
    T* d = static_cast<T*>(dense);
    const unsigned grid = grid_for(g.numel);
    switch (mode) {
      case IndexMode::Gather: indexed_copy_kernel<T, IndexMode::Gather><<<grid, kThreads, 0, s>>>(g, x, d, v, false, fault); break;
      case IndexMode::Assign: indexed_copy_kernel<T, IndexMode::Assign><<<grid, kThreads, 0, s>>>(g, x, d, v, false, fault); break;
      case IndexMode::Add:
        if constexpr (!has_atomic_add<T>) {
          throw Error(::dl::detail::cat(what, ": accumulating on CUDA is supported for float, double, float16, bfloat16, int32 and int64 tensors, not ",
                                        dtype_name(dtype)));
        } else {
          indexed_copy_kernel<T, IndexMode::Add><<<grid, kThreads, 0, s>>>(g, x, d, v, dense && value, fault);
        }
        break;
    }
  });
  check_launch(what);
  IndexFault f{};
  DL_CUDA_CHECK(cudaMemcpyAsync(&f, fault, sizeof f, cudaMemcpyDeviceToHost, s));
  DL_CUDA_CHECK(cudaStreamSynchronize(s));
  if (f.flag) [[unlikely]] {
    const int i = int(f.which);
    throw Error(::dl::detail::cat(what, ": index ", f.value, " is out of bounds for dimension ", g.dim_of[i], " with size ",
                                  g.bound[i]));
  }
}

// ---- nonzero: block counts, an exclusive scan of them, then an ordered write per block

inline constexpr int kCompactItems = 16;  // elements per thread
inline constexpr int64_t kCompactTile = int64_t(kThreads) * kCompactItems;

template <class T>
__device__ bool nonzero_at(const T* src, int64_t i) {
  return src[i] != T(0);
}

template <class T>
__global__ void __launch_bounds__(kThreads) count_nonzero_kernel(const T* src, int64_t n, int64_t* counts) {
  __shared__ int64_t buf[kThreads];
  const int64_t lo = int64_t(blockIdx.x) * kCompactTile;
  int64_t c = 0;
  for (int64_t i = lo + threadIdx.x; i < lo + kCompactTile && i < n; i += kThreads) c += nonzero_at(src, i);
  block_combine<expr::SumReducer<int64_t>>(buf, c, counts + blockIdx.x);
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    write_positions_kernel(const T* src, int64_t n, const int64_t* block_offset, int64_t* out) {
  __shared__ int64_t scan[kThreads];
  // Thread t owns kCompactItems consecutive elements of the block's tile, so that an exclusive
  // scan of the threads' counts orders the writes.
  const int64_t lo = int64_t(blockIdx.x) * kCompactTile + int64_t(threadIdx.x) * kCompactItems;
  int64_t c = 0;
  for (int k = 0; k < kCompactItems; ++k) c += lo + k < n && nonzero_at(src, lo + k);
  scan[threadIdx.x] = c;
  __syncthreads();
  for (int off = 1; off < kThreads; off *= 2) {  // inclusive Hillis-Steele scan
    const int64_t add = int(threadIdx.x) >= off ? scan[threadIdx.x - off] : 0;
    __syncthreads();
    scan[threadIdx.x] += add;
    __syncthreads();
  }
  int64_t pos = block_offset[blockIdx.x] + scan[threadIdx.x] - c;
  for (int k = 0; k < kCompactItems; ++k)
    if (lo + k < n && nonzero_at(src, lo + k)) out[pos++] = lo + k;
}

inline std::shared_ptr<Storage> nonzero_positions(ScalarType dtype, int device, const void* src, int64_t n, int64_t* count) {
  const DeviceGuard guard(device);
  const cudaStream_t s = current_stream(device).handle();
  const int64_t nb = std::max<int64_t>(1, (n + kCompactTile - 1) / kCompactTile);
  DL_CHECK(nb <= (int64_t(1) << 31) - 1, "nonzero: ", n, " elements are more than one launch can cover");
  auto counts_buf = Storage::allocate(size_t(nb) * sizeof(int64_t), Device(kCUDA, device));
  auto* counts = static_cast<int64_t*>(counts_buf->data());
  with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    count_nonzero_kernel<T><<<unsigned(nb), kThreads, 0, s>>>(static_cast<const T*>(src), n, counts);
  });
  check_launch("nonzero (counting)");
  std::vector<int64_t> offsets(static_cast<size_t>(nb));
  DL_CUDA_CHECK(cudaMemcpyAsync(offsets.data(), counts, size_t(nb) * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
  DL_CUDA_CHECK(cudaStreamSynchronize(s));
  int64_t total = 0;
  for (int64_t& o : offsets) {
    const int64_t c = o;
    o = total;
    total += c;
  }
  *count = total;
  auto out = Storage::allocate(size_t(std::max<int64_t>(total, 1)) * sizeof(int64_t), Device(kCUDA, device));
  if (total == 0) return out;
  // The block offsets go back to the device in the counts buffer (a pageable copy: staged before
  // cudaMemcpyAsync returns, so `offsets` may go out of scope).
  DL_CUDA_CHECK(cudaMemcpyAsync(counts, offsets.data(), size_t(nb) * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    write_positions_kernel<T><<<unsigned(nb), kThreads, 0, s>>>(static_cast<const T*>(src), n, counts,
                                                                 static_cast<int64_t*>(out->data()));
  });
  check_launch("nonzero (writing)");
  return out;
}

struct UnravelShape {
  int nd;
  int64_t size[kMaxDims];
};

__global__ void __launch_bounds__(kThreads) unravel_kernel(const int64_t* pos, int64_t count, UnravelShape sh, int64_t* out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < count; c += stride) {
    int64_t q = pos[c];
    for (int d = sh.nd - 1; d >= 0; --d) {
      out[c * sh.nd + d] = q % sh.size[d];
      q /= sh.size[d];
    }
  }
}

inline void unravel(int device, const int64_t* pos, int64_t count, int nd, const int64_t* size, int64_t* out) {
  const DeviceGuard guard(device);
  UnravelShape sh{nd, {}};
  for (int d = 0; d < nd; ++d) sh.size[d] = size[d];
  unravel_kernel<<<grid_for(count), kThreads, 0, current_stream(device).handle()>>>(pos, count, sh, out);
  check_launch("nonzero (coordinates)");
}

// ---- max/min along a dim with indices

/// Whether (cv, ci) beats (bv, bi) for max (or min): NaN is the largest value and propagates, and
/// the first index wins ties, as the CPU's arg_reduce.
template <bool IsMax, class T>
__device__ bool arg_better(T cv, int64_t ci, T bv, int64_t bi) {
  auto strictly = [](T a, T b) {
    if constexpr (floating_scalar<T>) {
      if (b != b) return false;  // NaN
      if (a != a) return true;
    }
    if constexpr (IsMax) return a > b;
    else return a < b;
  };
  if (strictly(cv, bv)) return true;
  if (strictly(bv, cv)) return false;
  return ci < bi;
}

/// One thread per output (many outputs, each over a short dim).
template <bool IsMax, class T>
__global__ void __launch_bounds__(kThreads)
    arg_reduce_rows_kernel(const T* src, int64_t outer, int64_t R, int64_t inner, T* vals, int64_t* idxs) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < outer * inner; w += stride) {
    const int64_t o = w / inner, i = w - o * inner;
    const T* s = src + o * R * inner + i;
    T best = s[0];
    int64_t bi = 0;
    for (int64_t r = 1; r < R; ++r)
      if (arg_better<IsMax>(s[r * inner], r, best, bi)) {
        best = s[r * inner];
        bi = r;
      }
    vals[w] = best;
    idxs[w] = bi;
  }
}

/// One block per output (few outputs over a long dim), combined in a fixed tree order.
template <bool IsMax, class T>
__global__ void __launch_bounds__(kThreads)
    arg_reduce_block_kernel(const T* src, int64_t outer, int64_t R, int64_t inner, T* vals, int64_t* idxs) {
  __shared__ T bv[kThreads];
  __shared__ int64_t bi[kThreads];
  for (int64_t w = blockIdx.x; w < outer * inner; w += gridDim.x) {
    const int64_t o = w / inner, i = w - o * inner;
    const T* s = src + o * R * inner + i;
    T best = s[0];
    int64_t idx = 0;
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x)
      if (r == threadIdx.x || arg_better<IsMax>(s[r * inner], r, best, idx)) {
        best = s[r * inner];
        idx = r;
      }
    if (int64_t(threadIdx.x) >= R) idx = R;  // no element: loses every comparison below
    bv[threadIdx.x] = best;
    bi[threadIdx.x] = idx;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (int(threadIdx.x) < half) {
        const int o2 = threadIdx.x + half;
        if (bi[o2] < R && (bi[threadIdx.x] >= R || arg_better<IsMax>(bv[o2], bi[o2], bv[threadIdx.x], bi[threadIdx.x]))) {
          bv[threadIdx.x] = bv[o2];
          bi[threadIdx.x] = bi[o2];
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      vals[w] = bv[0];
      idxs[w] = bi[0];
    }
    __syncthreads();
  }
}

inline void arg_reduce(ScalarType dtype, int device, bool is_max, const void* src, int64_t outer, int64_t R, int64_t inner,
                       void* vals, int64_t* idxs) {
  const int64_t M = outer * inner;
  if (M == 0) return;
  const DeviceGuard guard(device);
  const cudaStream_t s = current_stream(device).handle();
  const bool per_block = M < 4096 && R >= 64;
  with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(src);
    T* v = static_cast<T*>(vals);
    auto launch = [&](auto max_tag) {
      constexpr bool IsMax = decltype(max_tag)::value;
      if (per_block)
        arg_reduce_block_kernel<IsMax, T><<<unsigned(std::min<int64_t>(M, 65535)), kThreads, 0, s>>>(x, outer, R, inner, v, idxs);
      else
        arg_reduce_rows_kernel<IsMax, T><<<grid_for(M), kThreads, 0, s>>>(x, outer, R, inner, v, idxs);
    };
    if (is_max) launch(std::true_type{});
    else launch(std::false_type{});
  });
  check_launch(is_max ? "max (along a dim)" : "min (along a dim)");
}

/// Installs the functions above into the core (once, at start-up).
inline bool install_index_hooks() {
  auto& h = ::dl::detail::cuda_backend();
  h.indexed_copy = &indexed_copy;
  h.nonzero_positions = &nonzero_positions;
  h.unravel = &unravel;
  h.arg_reduce = &arg_reduce;
  return true;
}
inline const bool index_hooks_installed = install_index_hooks();

}  // namespace dl::cuda::detail
