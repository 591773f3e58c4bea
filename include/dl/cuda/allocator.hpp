// dl/cuda/allocator.hpp — the CUDA binding of the caching allocators (dl/cuda/caching_allocator.hpp)
// and their statistics, as torch.cuda's: memory_allocated, max_memory_allocated, memory_reserved,
// max_memory_reserved, reset_peak_memory_stats, empty_cache, memory_stats, memory_summary, and the
// pinned host allocator behind Tensor::pin_memory().
#pragma once

#include <cuda_runtime_api.h>

#include "caching_allocator.hpp"
#include "stream.hpp"

namespace dl::cuda {

namespace detail {

inline bool not_ready(cudaError_t e) {
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return true;
  }
  return false;
}

/// Events for the allocators' stream bookkeeping (no timing: cheaper).
struct CudaEvents {
  using stream_t = cudaStream_t;
  using event_t = cudaEvent_t;
  event_t event_record(stream_t s, int device) {
    DeviceGuard g(device);
    cudaEvent_t e = nullptr;
    DL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    DL_CUDA_CHECK(cudaEventRecord(e, s));
    return e;
  }
  bool event_query(event_t e) {
    const cudaError_t r = cudaEventQuery(e);
    if (not_ready(r)) return false;
    if (r != cudaSuccess) throw_cuda_error(r, "cudaEventQuery", __FILE__, __LINE__);
    return true;
  }
  void event_destroy(event_t e) { (void)cudaEventDestroy(e); }
};

/// Device memory from cudaMalloc; out of memory is reported as nullptr (the allocator retries).
struct CudaDeviceBackend : CudaEvents {
  void* malloc(size_t n, int device) {
    DeviceGuard g(device);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, n);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    if (e != cudaSuccess) throw_cuda_error(e, "cudaMalloc", __FILE__, __LINE__);
    return p;
  }
  void free(void* p, int device) {
    DeviceGuard g(device);
    DL_CUDA_CHECK(cudaFree(p));
  }
  std::pair<size_t, size_t> mem_get_info(int device) {
    DeviceGuard g(device);
    size_t free = 0, total = 0;
    DL_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {free, total};
  }
  void synchronize(int device) {
    DeviceGuard g(device);
    DL_CUDA_CHECK(cudaDeviceSynchronize());
  }
};

/// Page-locked host memory from cudaHostAlloc.
struct CudaHostBackend : CudaEvents {
  void* host_alloc(size_t n) {
    void* p = nullptr;
    if (cudaHostAlloc(&p, n, cudaHostAllocDefault) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void host_free(void* p) { (void)cudaFreeHost(p); }
};

// The allocators live until the process ends (never destroyed: tensors in static storage may be
// freed after any static destructor, and the CUDA runtime may already be shut down by then).
inline CachingAllocator<CudaDeviceBackend>& device_allocator() {
  static auto* a = new CachingAllocator<CudaDeviceBackend>();
  return *a;
}
inline CachingHostAllocator<CudaHostBackend>& host_allocator() {
  static auto* a = new CachingHostAllocator<CudaHostBackend>();
  return *a;
}

inline int device_or_current(int device) { return device < 0 ? current_device() : device; }
}  // namespace detail

/// Statistics of the caching allocator on `device` (the current one by default).
inline DeviceStats memory_stats(int device = -1) { return detail::device_allocator().stats(detail::device_or_current(device)); }
/// Bytes held by tensors on the device (block sizes after rounding), as torch.cuda.memory_allocated.
inline int64_t memory_allocated(int device = -1) { return memory_stats(device).allocated_bytes; }
inline int64_t max_memory_allocated(int device = -1) { return memory_stats(device).peak_allocated_bytes; }
/// Bytes the allocator holds from cudaMalloc (in use or cached).
inline int64_t memory_reserved(int device = -1) { return memory_stats(device).reserved_bytes; }
inline int64_t max_memory_reserved(int device = -1) { return memory_stats(device).peak_reserved_bytes; }
/// Resets the high-water marks to the current values.
inline void reset_peak_memory_stats(int device = -1) {
  detail::device_allocator().reset_peak_stats(detail::device_or_current(device));
}
/// Returns every cached, unused segment to CUDA (cudaFree), and the cached pinned host blocks.
inline void empty_cache() {
  detail::device_allocator().empty_cache();
  detail::host_allocator().empty_cache();
}
/// A readable table of the allocator's statistics (torch.cuda.memory_summary).
inline std::string memory_summary(int device = -1) {
  return detail::device_allocator().memory_summary(detail::device_or_current(device));
}
/// Statistics of the pinned host allocator.
inline HostStats host_memory_stats() { return detail::host_allocator().stats(); }

/// Marks that the memory of `t` is used by work on `stream`: it is not reused until that work is
/// done, even after the tensor is freed (torch.Tensor.record_stream).
template <class Tensor>
void record_stream(const Tensor& t, const Stream& stream) {
  DL_CHECK(t.device().is_cuda(), "record_stream: the tensor is on ", t.device(), ", not on a CUDA device");
  detail::device_allocator().record_stream(t.impl()->storage->data(), stream.handle());
}

}  // namespace dl::cuda
