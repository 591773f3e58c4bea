// dl/allocator.hpp — the caching CPU allocator behind every tensor's storage, and its statistics
// (dl::memory_stats, dl::empty_cache). Freed blocks are kept and reused, so a training loop that
// makes the same temporaries every step never goes back to the OS nor page-faults.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "error.hpp"

namespace dl {

/// Counters of the CPU caching allocator (bytes are the allocator's rounded block sizes).
struct MemoryStats {
  int64_t allocated_bytes = 0;       ///< held by live storages
  int64_t peak_allocated_bytes = 0;  ///< high-water mark of allocated_bytes (see reset_peak_memory_stats)
  int64_t cached_bytes = 0;          ///< freed blocks kept for reuse
  int64_t reserved_bytes = 0;        ///< allocated + cached: what the process holds from the OS
  int64_t peak_reserved_bytes = 0;
  int64_t num_allocs = 0;            ///< allocation requests
  int64_t num_cache_hits = 0;        ///< requests served from the cache
  int64_t num_os_allocs = 0;         ///< requests that went to the OS
  int64_t num_os_frees = 0;          ///< blocks returned to the OS
};

/// Statistics of the CPU caching allocator.
MemoryStats memory_stats();
/// Returns every cached (free) block to the OS.
void empty_cache();
/// Resets the peak counters to the current values.
void reset_peak_memory_stats();
/// Largest number of free bytes the cache keeps; blocks freed beyond it go back to the OS.
/// Default: a quarter of physical memory.
void set_memory_cache_limit(int64_t bytes);

namespace detail {

class CpuAllocator {
 public:
  static CpuAllocator& instance() {
    static CpuAllocator* a = new CpuAllocator;  // never destroyed: storages may outlive statics
    return *a;
  }

  /// Returns a block of at least n bytes (64-byte aligned; 2 MiB aligned and huge-page backed when
  /// large); *block_size receives the size to pass back to deallocate.
  void* allocate(size_t n, size_t* block_size) {
    const size_t size = round_size(n);
    *block_size = size;
    {
      std::lock_guard lock(mutex_);
      ++stats_.num_allocs;
      // Best fit among cached blocks, accepting up to 25% slack so near sizes share blocks.
      auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first <= size + size / 4 && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        *block_size = it->first;
        if (it->second.empty()) free_.erase(it);
        ++stats_.num_cache_hits;
        stats_.cached_bytes -= int64_t(*block_size);
        note_allocated(int64_t(*block_size));
        return p;
      }
      ++stats_.num_os_allocs;
      note_allocated(int64_t(size));
      stats_.reserved_bytes += int64_t(size);
      stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    }
    void* p = os_alloc(size);
    if (!p) {
      empty_cache();  // give the cache back and try once more before failing
      p = os_alloc(size);
    }
    if (!p) {
      std::lock_guard lock(mutex_);
      stats_.allocated_bytes -= int64_t(size);
      stats_.reserved_bytes -= int64_t(size);
      throw Error(detail::cat("CPU out of memory: failed to allocate ", n, " bytes"));
    }
    return p;
  }

  void deallocate(void* p, size_t block_size) {
    if (!p) return;
    {
      std::lock_guard lock(mutex_);
      stats_.allocated_bytes -= int64_t(block_size);
      if (stats_.cached_bytes + int64_t(block_size) <= limit_) {
        free_[block_size].push_back(p);
        stats_.cached_bytes += int64_t(block_size);
        return;
      }
      stats_.reserved_bytes -= int64_t(block_size);
      ++stats_.num_os_frees;
    }
    std::free(p);
  }

  void empty_cache() {
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(free_);
      for (auto& [size, ptrs] : blocks) {
        stats_.reserved_bytes -= int64_t(size * ptrs.size());
        stats_.num_os_frees += int64_t(ptrs.size());
      }
      stats_.cached_bytes = 0;
    }
    for (auto& [size, ptrs] : blocks)
      for (void* p : ptrs) std::free(p);
  }

  MemoryStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void reset_peaks() {
    std::lock_guard lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
  }
  void set_limit(int64_t bytes) {
    DL_CHECK(bytes >= 0, "set_memory_cache_limit: expected a non-negative byte count, got ", bytes);
    std::lock_guard lock(mutex_);
    limit_ = bytes;
  }

  static constexpr size_t kHuge = size_t(2) << 20;

  /// Size classes: multiples of 64 bytes up to 1 KiB, then four classes per power of two, then
  /// multiples of 2 MiB from 8 MiB on (so huge blocks waste at most one huge page).
  static size_t round_size(size_t n) {
    n = std::max<size_t>(n, 1);
    if (n <= 1024) return (n + 63) & ~size_t(63);
    if (n >= 4 * kHuge) return (n + kHuge - 1) & ~(kHuge - 1);
    const size_t step = std::bit_floor(n - 1) / 4;
    return (n + step - 1) / step * step;
  }

 private:
  CpuAllocator() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    limit_ = pages > 0 && page > 0 ? int64_t(pages) * page / 4 : int64_t(1) << 32;
  }

  void note_allocated(int64_t size) {
    stats_.allocated_bytes += size;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  }

  static void* os_alloc(size_t size) {
    if (size >= kHuge) {
      void* p = std::aligned_alloc(kHuge, size);
      // Huge pages cut the page faults of first touch 512-fold; a hint, so failure is harmless.
      if (p) madvise(p, size, MADV_HUGEPAGE);
      return p;
    }
    return std::aligned_alloc(64, size);
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
  MemoryStats stats_;
  int64_t limit_ = 0;
};

}  // namespace detail

inline MemoryStats memory_stats() { return detail::CpuAllocator::instance().stats(); }
inline void empty_cache() { detail::CpuAllocator::instance().empty_cache(); }
inline void reset_peak_memory_stats() { detail::CpuAllocator::instance().reset_peaks(); }
inline void set_memory_cache_limit(int64_t bytes) { detail::CpuAllocator::instance().set_limit(bytes); }

}  // namespace dl
