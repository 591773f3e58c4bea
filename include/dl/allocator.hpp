// dl/allocator.hpp — the caching CPU allocator behind every tensor's storage, and its statistics
// (dl::memory_stats, dl::empty_cache). Freed blocks are kept and reused, so a training loop that
// makes the same temporaries every step never goes back to the OS nor page-faults.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "error.hpp"
#include "profiler_hook.hpp"

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

/// A counter with a high-water mark, updated without a lock.
struct PeakCounter {
  std::atomic<int64_t> value{0}, peak{0};
  void add(int64_t d) {
    const int64_t v = value.fetch_add(d, std::memory_order_relaxed) + d;
    int64_t p = peak.load(std::memory_order_relaxed);
    while (v > p && !peak.compare_exchange_weak(p, v, std::memory_order_relaxed)) {
    }
  }
  void reset_peak() { peak.store(value.load(std::memory_order_relaxed), std::memory_order_relaxed); }
};

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
    num_allocs_.fetch_add(1, std::memory_order_relaxed);
    // Small blocks first come from this thread's cache: no lock on the hot path.
    if (size <= ThreadCache::kMaxBlock && ThreadCache::alive()) {
      if (void* p = ThreadCache::get().take(size)) {
        hit(size);
        profiler::detail::record_memory(p, int64_t(size));
        return p;
      }
    }
    {
      std::lock_guard lock(mutex_);
      // Best fit among cached blocks, accepting up to 25% slack so near sizes share blocks.
      auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first <= size + size / 4 && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        *block_size = it->first;
        if (it->second.empty()) free_.erase(it);
        hit(*block_size);
        profiler::detail::record_memory(p, int64_t(*block_size));
        return p;
      }
    }
    num_os_allocs_.fetch_add(1, std::memory_order_relaxed);
    allocated_.add(int64_t(size));
    reserved_.add(int64_t(size));
    void* p = os_alloc(size);
    if (!p) {
      empty_cache();  // give the cache back and try once more before failing
      p = os_alloc(size);
    }
    if (!p) {
      allocated_.add(-int64_t(size));
      reserved_.add(-int64_t(size));
      throw Error(detail::cat("CPU out of memory: failed to allocate ", n, " bytes"));
    }
    profiler::detail::record_memory(p, int64_t(size));
    return p;
  }

  void deallocate(void* p, size_t block_size) {
    if (!p) return;
    profiler::detail::record_memory(p, -int64_t(block_size));
    allocated_.add(-int64_t(block_size));
    if (block_size <= ThreadCache::kMaxBlock && ThreadCache::alive() && ThreadCache::get().give(p, block_size)) {
      cached_.fetch_add(int64_t(block_size), std::memory_order_relaxed);
      return;
    }
    give_global(p, block_size);
  }

  void empty_cache() {
    if (ThreadCache::alive()) ThreadCache::get().flush();
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard lock(mutex_);
      blocks.swap(free_);
    }
    for (auto& [size, ptrs] : blocks) {
      const int64_t bytes = int64_t(size * ptrs.size());
      cached_.fetch_sub(bytes, std::memory_order_relaxed);
      reserved_.add(-bytes);
      num_os_frees_.fetch_add(int64_t(ptrs.size()), std::memory_order_relaxed);
      for (void* p : ptrs) std::free(p);
    }
  }

  MemoryStats stats() const {
    MemoryStats s;
    s.allocated_bytes = allocated_.value.load();
    s.peak_allocated_bytes = allocated_.peak.load();
    s.cached_bytes = cached_.load();
    s.reserved_bytes = reserved_.value.load();
    s.peak_reserved_bytes = reserved_.peak.load();
    s.num_allocs = num_allocs_.load();
    s.num_cache_hits = num_cache_hits_.load();
    s.num_os_allocs = num_os_allocs_.load();
    s.num_os_frees = num_os_frees_.load();
    return s;
  }
  void reset_peaks() {
    allocated_.reset_peak();
    reserved_.reset_peak();
  }
  void set_limit(int64_t bytes) {
    DL_CHECK(bytes >= 0, "set_memory_cache_limit: expected a non-negative byte count, got ", bytes);
    limit_.store(bytes, std::memory_order_relaxed);
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
  /// Free small blocks kept by one thread (exact size classes), flushed to the shared cache when
  /// the thread ends or the per-thread budget is exceeded.
  class ThreadCache {
   public:
    static constexpr size_t kMaxBlock = size_t(1) << 20;
    static constexpr size_t kMaxBytes = size_t(16) << 20;

    static ThreadCache& get() {
      static thread_local ThreadCache cache;
      return cache;
    }
    /// False once this thread's cache has been destroyed (late frees go to the shared cache).
    static bool alive() { return !dead_flag(); }

    void* take(size_t size) {
      auto it = bins_.find(size);
      if (it == bins_.end() || it->second.empty()) return nullptr;
      void* p = it->second.back();
      it->second.pop_back();
      bytes_ -= size;
      return p;
    }
    bool give(void* p, size_t size) {
      if (bytes_ + size > kMaxBytes) return false;
      bins_[size].push_back(p);
      bytes_ += size;
      return true;
    }
    void flush() {
      auto& a = CpuAllocator::instance();
      for (auto& [size, ptrs] : bins_) {
        for (void* p : ptrs) {
          a.cached_.fetch_sub(int64_t(size), std::memory_order_relaxed);
          a.give_global(p, size);
        }
        ptrs.clear();
      }
      bytes_ = 0;
    }
    ~ThreadCache() {
      flush();
      dead_flag() = true;
    }

   private:
    ThreadCache() = default;
    static bool& dead_flag() {
      static thread_local bool dead = false;  // trivially destructible: readable during thread exit
      return dead;
    }
    std::unordered_map<size_t, std::vector<void*>> bins_;
    size_t bytes_ = 0;
  };

  CpuAllocator() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    limit_ = pages > 0 && page > 0 ? int64_t(pages) * page / 4 : int64_t(1) << 32;
  }

  void hit(size_t size) {
    num_cache_hits_.fetch_add(1, std::memory_order_relaxed);
    cached_.fetch_sub(int64_t(size), std::memory_order_relaxed);
    allocated_.add(int64_t(size));
  }

  /// Keeps a freed block in the shared cache, or returns it to the OS beyond the cache limit.
  void give_global(void* p, size_t size) {
    if (cached_.load(std::memory_order_relaxed) + int64_t(size) <= limit_.load(std::memory_order_relaxed)) {
      std::lock_guard lock(mutex_);
      free_[size].push_back(p);
      cached_.fetch_add(int64_t(size), std::memory_order_relaxed);
      return;
    }
    reserved_.add(-int64_t(size));
    num_os_frees_.fetch_add(1, std::memory_order_relaxed);
    std::free(p);
  }

  static void* os_alloc(size_t size) {
    if (size >= kHuge) {
      // posix_memalign, not aligned_alloc: aligned_alloc requires the size to be a multiple of
      // the alignment (a 3.5 MiB block at 2 MiB alignment is undefined behaviour; ASan rejects it).
      void* p = nullptr;
      if (posix_memalign(&p, kHuge, size) != 0) p = nullptr;
      // Huge pages cut the page faults of first touch 512-fold; a hint, so failure is harmless.
      if (p) madvise(p, size, MADV_HUGEPAGE);
      return p;
    }
    return std::aligned_alloc(64, size);
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;
  PeakCounter allocated_, reserved_;
  std::atomic<int64_t> cached_{0}, num_allocs_{0}, num_cache_hits_{0}, num_os_allocs_{0}, num_os_frees_{0};
  std::atomic<int64_t> limit_{0};
};

}  // namespace detail

inline MemoryStats memory_stats() { return detail::CpuAllocator::instance().stats(); }
inline void empty_cache() { detail::CpuAllocator::instance().empty_cache(); }
inline void reset_peak_memory_stats() { detail::CpuAllocator::instance().reset_peaks(); }
inline void set_memory_cache_limit(int64_t bytes) { detail::CpuAllocator::instance().set_limit(bytes); }

}  // namespace dl
