// dl/cuda/caching_allocator.hpp — PyTorch's CUDA caching-allocator policy over an abstract backend:
// CachingAllocator (device memory in 2 MiB / 20 MiB segments, split and merged, reused per stream)
// and CachingHostAllocator (pinned host memory cached by power-of-two size). No CUDA header here:
// the CUDA binding supplies a Backend that calls cudaMalloc, cudaEventRecord...; tests use a CPU mock.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iomanip>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace dl::cuda {

/// Thrown when the device has no memory left for a request, even after the allocator gave its
/// cached segments back. The message follows PyTorch's ("CUDA out of memory. Tried to allocate ...").
class OutOfMemoryError : public dl::Error {
 public:
  using dl::Error::Error;
};

/// Gauges of one pool of a device (or of both pools together), each with its high-water mark.
/// Bytes are block sizes after rounding, except requested_bytes.
struct PoolStats {
  int64_t allocated_bytes = 0;       ///< bytes of the blocks handed out and not yet deallocated
  int64_t peak_allocated_bytes = 0;  ///< high-water mark of allocated_bytes
  int64_t requested_bytes = 0;       ///< what the callers asked for (before rounding) of those blocks
  int64_t peak_requested_bytes = 0;  ///< high-water mark of requested_bytes
  int64_t reserved_bytes = 0;        ///< bytes of the segments obtained from the backend's malloc
  int64_t peak_reserved_bytes = 0;   ///< high-water mark of reserved_bytes
  int64_t active_blocks = 0;         ///< blocks in use, or deallocated but waiting for stream events
  int64_t peak_active_blocks = 0;    ///< high-water mark of active_blocks
  int64_t segments = 0;              ///< segments obtained from the backend and not yet released
  int64_t peak_segments = 0;         ///< high-water mark of segments
};

/// Statistics of one device: the gauges of both pools together (the PoolStats base), each pool's
/// own, and the event counters (cumulative since the allocator was made).
struct DeviceStats : PoolStats {
  PoolStats small_pool;          ///< blocks of at most 1 MiB, carved out of 2 MiB segments
  PoolStats large_pool;          ///< blocks over 1 MiB
  int64_t num_allocs = 0;        ///< allocate calls that returned memory (nbytes > 0)
  int64_t num_frees = 0;         ///< deallocate calls
  int64_t num_raw_mallocs = 0;   ///< successful Backend::malloc calls (cudaMalloc)
  int64_t num_raw_frees = 0;     ///< Backend::free calls (cudaFree)
  int64_t num_alloc_retries = 0; ///< Backend::malloc failures retried after freeing the cache
  int64_t num_ooms = 0;          ///< OutOfMemoryError thrown
};

/// Statistics of the pinned host allocator (bytes are power-of-two block sizes).
struct HostStats {
  int64_t allocated_bytes = 0;       ///< bytes of the blocks handed out and not yet deallocated
  int64_t peak_allocated_bytes = 0;  ///< high-water mark of allocated_bytes
  int64_t reserved_bytes = 0;        ///< bytes obtained from Backend::host_alloc: in use, waiting or cached
  int64_t peak_reserved_bytes = 0;   ///< high-water mark of reserved_bytes
  int64_t num_allocs = 0;            ///< allocate calls that returned memory (nbytes > 0)
  int64_t num_frees = 0;             ///< deallocate calls
  int64_t num_raw_allocs = 0;        ///< successful Backend::host_alloc calls (cudaHostAlloc)
  int64_t num_raw_frees = 0;         ///< Backend::host_free calls (cudaFreeHost)
};

namespace detail {

/// A stream handle: a pointer (cudaStream_t), an integer or enum, or a hashable class.
template <class S>
concept stream_handle = std::is_trivially_copyable_v<S> && std::equality_comparable<S> &&
                        (std::is_pointer_v<S> || std::is_integral_v<S> || std::is_enum_v<S> ||
                         requires(const S& s) {
                           { std::hash<S>{}(s) } -> std::convertible_to<size_t>;
                         });

/// The event half of a backend, shared by the device and host allocators.
template <class B>
concept event_backend = stream_handle<typename B::stream_t> &&
                        std::is_trivially_copyable_v<typename B::event_t> &&
                        requires(B& b, typename B::stream_t s, typename B::event_t e, int device) {
                          { b.event_record(s, device) } -> std::same_as<typename B::event_t>;
                          { b.event_query(e) } -> std::convertible_to<bool>;
                          b.event_destroy(e);
                        };

/// What CachingAllocator needs from the device runtime. malloc returns nullptr when the device is
/// out of memory (it throws only for other errors); mem_get_info returns (free, total) bytes;
/// synchronize waits for all work on the device.
template <class B>
concept caching_backend = event_backend<B> && requires(B& b, size_t n, void* p, int device) {
  { b.malloc(n, device) } -> std::same_as<void*>;
  b.free(p, device);
  { b.mem_get_info(device) } -> std::convertible_to<std::pair<size_t, size_t>>;
  b.synchronize(device);
};

/// What CachingHostAllocator needs: host_alloc returns nullptr on failure.
template <class B>
concept host_caching_backend = event_backend<B> && requires(B& b, size_t n, void* p) {
  { b.host_alloc(n) } -> std::same_as<void*>;
  b.host_free(p);
};

/// A byte count as PyTorch's OOM messages write it: "512 bytes", "1.50 KiB", "20.00 MiB", "2.00 GiB".
/// (PyTorch changes unit only above 1024 of the smaller one, so it writes "1024 bytes"; here 1024 bytes
/// is "1.00 KiB".)
inline std::string format_size(uint64_t bytes);

/// A key that orders streams: the handle's value where it is a pointer or an integer, else its
/// hash (equal keys then still need an equality test).
template <stream_handle S>
uintptr_t stream_key(const S& s) {
  if constexpr (std::is_pointer_v<S>)
    return reinterpret_cast<uintptr_t>(s);
  else if constexpr (std::is_integral_v<S> || std::is_enum_v<S>)
    return static_cast<uintptr_t>(s);
  else
    return static_cast<uintptr_t>(std::hash<S>{}(s));
}

// ============================================================================================
// Device allocator
// ============================================================================================

/// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) without CUDA graphs,
/// expandable segments, max_split_size or memory fractions.
///
/// - Sizes round up to multiples of 512 bytes. Blocks of at most 1 MiB come from the small pool,
///   cut out of 2 MiB segments; larger ones from the large pool, cut out of 20 MiB segments below
///   10 MiB, else from a segment of the size rounded up to 2 MiB.
/// - A request takes the smallest free block of its pool that fits and was allocated on the same
///   stream (best fit over (stream, size, address)), splitting off the rest when it is >= 512 bytes
///   (small pool) or > 1 MiB (large pool). A freed block merges with its free neighbours.
/// - record_stream(p, s): p is also used by work on stream s; once deallocated, p is reused only
///   after an event recorded on s at that moment has completed.
/// - When Backend::malloc fails, every cached segment with no block in use is released and the
///   malloc retried once; then OutOfMemoryError.
///
/// Thread safe: one mutex per device, plus one for the pointer -> block table. Backend calls for
/// one device are serialized; calls for different devices may run concurrently.
/// The destructor releases the segments that are entirely free; a process-wide CUDA instance should
/// rather be leaked (as PyTorch does), since the CUDA runtime may be gone when statics are destroyed.
template <caching_backend Backend>
class CachingAllocator {
 public:
  using stream_t = typename Backend::stream_t;
  using event_t = typename Backend::event_t;

  static constexpr size_t kMinBlockSize = 512;            ///< every size rounds up to a multiple of this
  static constexpr size_t kSmallSize = size_t(1) << 20;   ///< largest small-pool block
  static constexpr size_t kSmallBuffer = size_t(2) << 20; ///< small-pool segment
  static constexpr size_t kLargeBuffer = size_t(20) << 20; ///< large-pool segment for requests < 10 MiB
  static constexpr size_t kMinLargeAlloc = size_t(10) << 20; ///< from here a request gets its own segment
  static constexpr size_t kRoundLarge = size_t(2) << 20;  ///< granularity of those segments
  static constexpr int kMaxDevices = 1024;                ///< device ids run from 0 to kMaxDevices - 1

  /// The backend (a CUDA binding, or a test mock): public so that callers can reach it.
  Backend backend;

  CachingAllocator() = default;
  explicit CachingAllocator(Backend b) : backend(std::move(b)) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  ~CachingAllocator();

  /// Memory for nbytes on `device`, to be used on `stream`; *block_size (if given) receives the
  /// size of the block: round_size(nbytes), or more when it came from a large-pool block whose
  /// rest (at most 1 MiB) was too small to split off. nbytes == 0 returns nullptr and counts nothing.
  /// @throws OutOfMemoryError when the device has no room even after releasing the cache.
  void* allocate(size_t nbytes, int device, stream_t stream, size_t* block_size = nullptr);
  /// Returns p (from allocate) to the cache; nullptr is ignored.
  /// @throws dl::Error when p did not come from allocate or was deallocated already.
  void deallocate(void* p);
  /// Marks p (from allocate, not yet deallocated) as used by work on stream s as well: once p is
  /// deallocated it is not reused before that work completes. The allocation stream is ignored.
  void record_stream(void* p, stream_t s);

  /// Waits for the devices, then gives every segment that has no block in use back to the backend.
  void empty_cache();
  /// Statistics of one device (zeros for a device never used).
  DeviceStats stats(int device) const;
  /// Resets every peak_* of the device to the current value.
  void reset_peak_stats(int device);
  /// A table in the spirit of torch.cuda.memory_summary(): current and peak of allocated,
  /// requested and reserved memory, active blocks and segments (all, large pool, small pool),
  /// then the counts of allocations, frees, backend mallocs and frees, retries and OOMs.
  std::string memory_summary(int device) const;

  /// The size a request of nbytes > 0 is served with: a multiple of 512 bytes.
  static constexpr size_t round_size(size_t nbytes) {
    return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
  }
  /// The size of the segment obtained from the backend for a (rounded) size no cached block fits.
  static constexpr size_t segment_size(size_t size) {
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
  }

 private:
  struct BlockPool;

  /// A piece of a segment. Blocks of one segment form a list by address (prev/next) and share the
  /// stream the segment was allocated for.
  struct Block {
    Block(stream_t s, size_t n, char* p, BlockPool* owner, int dev)
        : stream(s), size(n), ptr(p), pool(owner), device(dev) {}
    stream_t stream;
    size_t size;
    char* ptr;
    BlockPool* pool;
    int device;
    size_t requested = 0;             ///< nbytes of the current allocation
    Block* prev = nullptr;
    Block* next = nullptr;
    bool allocated = false;
    int event_count = 0;              ///< events still to complete before the block is free
    std::vector<stream_t> stream_uses; ///< record_stream's streams; guarded by ptr_mutex_
    bool is_split() const { return prev != nullptr || next != nullptr; }
  };

  /// Orders free blocks by (stream, size, address), so lower_bound finds the best fit.
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const {
      const uintptr_t sa = stream_key(a->stream), sb = stream_key(b->stream);
      if (sa != sb) return sa < sb;
      if (a->size != b->size) return a->size < b->size;
      return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
    }
  };

  struct BlockPool {
    std::set<Block*, BlockLess> blocks;  ///< the free blocks
    bool small;
  };

  /// Events recorded on one stream for deallocated blocks, oldest first: they complete in order.
  struct StreamEvents {
    stream_t stream;
    std::deque<std::pair<event_t, Block*>> events;
  };

  struct DeviceState {
    explicit DeviceState(int d) : device(d) {}
    int device;
    std::mutex mutex;
    BlockPool small_blocks{{}, true};
    BlockPool large_blocks{{}, false};
    std::vector<StreamEvents> pending;
    DeviceStats stats;
  };

  static constexpr size_t kMaxRequest = size_t(1) << 62;

  DeviceState& state(int device);
  DeviceState* find_state(int device) const;
  std::vector<DeviceState*> all_states() const;

  Block* take_free_block(BlockPool& pool, stream_t stream, size_t size);
  Block* alloc_segment(DeviceState& d, BlockPool& pool, stream_t stream, size_t size);
  void split(Block& block, size_t size);
  void free_block(DeviceState& d, Block& block);
  void merge(BlockPool& pool, Block& dst, Block* src);
  void insert_events(DeviceState& d, Block& block, const std::vector<stream_t>& streams);
  void process_events(DeviceState& d);
  void release_free_segments(DeviceState& d, BlockPool& pool);
  void release_cached_segments(DeviceState& d);
  std::string oom_message(DeviceState& d, size_t alloc_size);
  static void update(DeviceStats& s, bool small, int64_t PoolStats::*value, int64_t PoolStats::*peak,
                     int64_t delta);

  mutable std::mutex devices_mutex_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::mutex ptr_mutex_;
  std::unordered_map<void*, Block*> allocated_;  ///< blocks handed out, by pointer
};

// ============================================================================================
// Pinned host allocator
// ============================================================================================

/// PyTorch's CachingHostAllocator: pinned host blocks of power-of-two sizes (at least 512 bytes),
/// cached by size and reused. record_stream(p, s) marks p as read or written by an asynchronous
/// copy on s; once deallocated, p returns to the cache only after an event recorded on s then has
/// completed. When Backend::host_alloc fails, the cache is released and the call retried once.
/// Thread safe (one mutex).
template <host_caching_backend Backend>
class CachingHostAllocator {
 public:
  using stream_t = typename Backend::stream_t;
  using event_t = typename Backend::event_t;

  static constexpr size_t kMinBlockSize = 512;

  Backend backend;

  CachingHostAllocator() = default;
  explicit CachingHostAllocator(Backend b) : backend(std::move(b)) {}
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;
  ~CachingHostAllocator();

  /// Pinned memory for nbytes; *block_size (if given) receives the power-of-two size. nbytes == 0
  /// returns nullptr. @throws dl::Error naming the size when the backend has no memory for it.
  void* allocate(size_t nbytes, size_t* block_size = nullptr);
  /// Returns p (from allocate) to the cache; nullptr is ignored. @throws dl::Error for other pointers.
  void deallocate(void* p);
  /// Marks the block holding p (any address inside it) as used by a copy on stream s of `device`.
  void record_stream(const void* p, stream_t s, int device = 0);
  /// True for any address inside a block of this allocator: in use, waiting for events, or cached.
  bool is_pinned(const void* p) const;
  /// Gives every cached block (after polling pending events) back to the backend.
  void empty_cache();
  HostStats stats() const;
  void reset_peak_stats();

  /// The size a request of nbytes > 0 is served with.
  static constexpr size_t round_size(size_t nbytes) { return std::bit_ceil(std::max(nbytes, kMinBlockSize)); }

 private:
  struct Block {
    Block(char* p, size_t n) : ptr(p), size(n) {}
    char* ptr;
    size_t size;
    bool allocated = false;
    int event_count = 0;
    std::vector<std::pair<stream_t, int>> streams;  ///< record_stream's (stream, device)
  };

  static constexpr size_t kMaxRequest = size_t(1) << 62;

  Block* find_containing(const void* p) const;
  void process_events();
  void release_cached();
  void cache(Block& b) { free_[std::countr_zero(b.size)].push_back(&b); }

  mutable std::mutex mutex_;
  std::map<uintptr_t, Block*> blocks_;         ///< every block, by address
  std::array<std::vector<Block*>, 64> free_;  ///< cached blocks, by log2 of their size
  std::vector<std::pair<event_t, Block*>> events_;  ///< pending, oldest first
  HostStats stats_;
};

// ============================================================================================
// Implementation
// ============================================================================================

inline std::string format_size(uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  if (bytes < 1024)
    os << bytes << " bytes";
  else if (bytes < (uint64_t(1) << 20))
    os << double(bytes) / 1024.0 << " KiB";
  else if (bytes < (uint64_t(1) << 30))
    os << double(bytes) / 1048576.0 << " MiB";
  else
    os << double(bytes) / 1073741824.0 << " GiB";
  return os.str();
}

// ---- CachingAllocator: public entry points --------------------------------------------------

template <caching_backend Backend>
CachingAllocator<Backend>::~CachingAllocator() {
  for (auto& d : devices_) {
    if (!d) continue;  // a device never used
    // Blocks still in use or waiting for events keep their segments: the device may use them.
    try {
      process_events(*d);
      release_free_segments(*d, d->small_blocks);
      release_free_segments(*d, d->large_blocks);
      for (auto& se : d->pending)
        for (auto& [event, block] : se.events) backend.event_destroy(event);
    } catch (...) {
    }
    std::set<Block*> owned;
    for (BlockPool* pool : {&d->small_blocks, &d->large_blocks}) owned.insert(pool->blocks.begin(), pool->blocks.end());
    for (auto& se : d->pending)
      for (auto& [event, block] : se.events) owned.insert(block);
    for (Block* b : owned) delete b;
  }
  for (auto& [p, b] : allocated_) delete b;
}

template <caching_backend Backend>
void* CachingAllocator<Backend>::allocate(size_t nbytes, int device, stream_t stream, size_t* block_size) {
  if (block_size) *block_size = 0;
  if (nbytes == 0) return nullptr;
  DeviceState& d = state(device);
  Block* block = nullptr;
  {
    std::lock_guard lock(d.mutex);
    if (nbytes > kMaxRequest) {
      ++d.stats.num_ooms;
      throw OutOfMemoryError(oom_message(d, nbytes));
    }
    process_events(d);
    const size_t size = round_size(nbytes);
    BlockPool& pool = size <= kSmallSize ? d.small_blocks : d.large_blocks;
    block = take_free_block(pool, stream, size);
    if (!block) {
      const size_t seg = segment_size(size);
      block = alloc_segment(d, pool, stream, seg);
      if (!block) {
        release_cached_segments(d);
        ++d.stats.num_alloc_retries;
        block = alloc_segment(d, pool, stream, seg);
      }
      if (!block) {
        ++d.stats.num_ooms;
        throw OutOfMemoryError(oom_message(d, seg));
      }
    }
    split(*block, size);
    block->allocated = true;
    block->requested = nbytes;
    DeviceStats& s = d.stats;
    update(s, pool.small, &PoolStats::allocated_bytes, &PoolStats::peak_allocated_bytes, int64_t(block->size));
    update(s, pool.small, &PoolStats::requested_bytes, &PoolStats::peak_requested_bytes, int64_t(nbytes));
    update(s, pool.small, &PoolStats::active_blocks, &PoolStats::peak_active_blocks, 1);
    ++s.num_allocs;
  }
  {
    std::lock_guard lock(ptr_mutex_);
    allocated_.emplace(block->ptr, block);
  }
  if (block_size) *block_size = block->size;
  return block->ptr;
}

template <caching_backend Backend>
void CachingAllocator<Backend>::deallocate(void* p) {
  if (!p) return;
  Block* block = nullptr;
  std::vector<stream_t> uses;
  {
    std::lock_guard lock(ptr_mutex_);
    auto it = allocated_.find(p);
    DL_CHECK(it != allocated_.end(), "CachingAllocator::deallocate: pointer ", p,
             " was not returned by allocate, or was deallocated already");
    block = it->second;
    allocated_.erase(it);
    uses.swap(block->stream_uses);
  }
  DeviceState& d = state(block->device);
  std::lock_guard lock(d.mutex);
  block->allocated = false;
  const bool small = block->pool->small;
  update(d.stats, small, &PoolStats::allocated_bytes, &PoolStats::peak_allocated_bytes, -int64_t(block->size));
  update(d.stats, small, &PoolStats::requested_bytes, &PoolStats::peak_requested_bytes, -int64_t(block->requested));
  ++d.stats.num_frees;
  if (uses.empty())
    free_block(d, *block);
  else
    insert_events(d, *block, uses);
}

template <caching_backend Backend>
void CachingAllocator<Backend>::record_stream(void* p, stream_t s) {
  if (!p) return;
  std::lock_guard lock(ptr_mutex_);
  auto it = allocated_.find(p);
  DL_CHECK(it != allocated_.end(), "CachingAllocator::record_stream: pointer ", p,
           " was not returned by allocate, or was deallocated already");
  Block& b = *it->second;
  if (s == b.stream || std::find(b.stream_uses.begin(), b.stream_uses.end(), s) != b.stream_uses.end()) return;
  b.stream_uses.push_back(s);
}

template <caching_backend Backend>
void CachingAllocator<Backend>::empty_cache() {
  for (DeviceState* d : all_states()) {
    std::lock_guard lock(d->mutex);
    release_cached_segments(*d);
  }
}

template <caching_backend Backend>
DeviceStats CachingAllocator<Backend>::stats(int device) const {
  DeviceState* d = find_state(device);
  if (!d) return {};
  std::lock_guard lock(d->mutex);
  return d->stats;
}

template <caching_backend Backend>
void CachingAllocator<Backend>::reset_peak_stats(int device) {
  DeviceState* d = find_state(device);
  if (!d) return;
  std::lock_guard lock(d->mutex);
  for (PoolStats* s : {static_cast<PoolStats*>(&d->stats), &d->stats.small_pool, &d->stats.large_pool}) {
    s->peak_allocated_bytes = s->allocated_bytes;
    s->peak_requested_bytes = s->requested_bytes;
    s->peak_reserved_bytes = s->reserved_bytes;
    s->peak_active_blocks = s->active_blocks;
    s->peak_segments = s->segments;
  }
}

template <caching_backend Backend>
std::string CachingAllocator<Backend>::memory_summary(int device) const {
  const DeviceStats s = stats(device);
  constexpr int kWidth = 57;  // "| " + 21 + " | " + 13 + " | " + 13 + " |"
  std::ostringstream os;
  const std::string heavy = "|" + std::string(kWidth - 2, '=') + "|\n";
  const std::string light = "|" + std::string(kWidth - 2, '-') + "|\n";
  const auto row = [&](const std::string& name, const std::string& cur, const std::string& peak) {
    os << "| " << std::left << std::setw(21) << name << " | " << std::right << std::setw(13) << cur << " | "
       << std::setw(13) << peak << " |\n";
  };
  const auto bytes = [](int64_t v) { return format_size(uint64_t(std::max<int64_t>(v, 0))); };
  const auto count = [](int64_t v) { return std::to_string(v); };
  const auto gauge = [&](const char* name, int64_t PoolStats::*value, int64_t PoolStats::*peak, auto fmt) {
    row(name, fmt(s.*value), fmt(s.*peak));
    row("      from large pool", fmt(s.large_pool.*value), fmt(s.large_pool.*peak));
    row("      from small pool", fmt(s.small_pool.*value), fmt(s.small_pool.*peak));
    os << light;
  };
  const std::string title = "dl CUDA memory summary, device ID " + std::to_string(device);
  const int pad = kWidth - 2 - int(title.size());
  os << heavy << "|" << std::string(pad / 2, ' ') << title << std::string(pad - pad / 2, ' ') << "|\n" << heavy;
  row("Metric", "Current", "Peak");
  os << light;
  gauge("Allocated memory", &PoolStats::allocated_bytes, &PoolStats::peak_allocated_bytes, bytes);
  gauge("Requested memory", &PoolStats::requested_bytes, &PoolStats::peak_requested_bytes, bytes);
  gauge("Reserved memory", &PoolStats::reserved_bytes, &PoolStats::peak_reserved_bytes, bytes);
  gauge("Active blocks", &PoolStats::active_blocks, &PoolStats::peak_active_blocks, count);
  gauge("Segments", &PoolStats::segments, &PoolStats::peak_segments, count);
  const auto total = [&](const char* name, int64_t v) {
    os << "| " << std::left << std::setw(21) << name << " | " << std::right << std::setw(kWidth - 28) << v << " |\n";
  };
  total("Allocations", s.num_allocs);
  total("Frees", s.num_frees);
  total("cudaMalloc calls", s.num_raw_mallocs);
  total("cudaFree calls", s.num_raw_frees);
  total("cudaMalloc retries", s.num_alloc_retries);
  total("CUDA OOMs", s.num_ooms);
  os << heavy;
  return os.str();
}

// ---- CachingAllocator: internals (the caller holds the device's mutex) ---------------------

template <caching_backend Backend>
auto CachingAllocator<Backend>::state(int device) -> DeviceState& {
  DL_CHECK(device >= 0 && device < kMaxDevices, "CachingAllocator: device ", device, " is out of range [0, ",
           kMaxDevices, ")");
  std::lock_guard lock(devices_mutex_);
  if (size_t(device) >= devices_.size()) devices_.resize(size_t(device) + 1);
  auto& d = devices_[size_t(device)];
  if (!d) d = std::make_unique<DeviceState>(device);
  return *d;
}

template <caching_backend Backend>
auto CachingAllocator<Backend>::find_state(int device) const -> DeviceState* {
  std::lock_guard lock(devices_mutex_);
  if (device < 0 || size_t(device) >= devices_.size()) return nullptr;
  return devices_[size_t(device)].get();
}

template <caching_backend Backend>
auto CachingAllocator<Backend>::all_states() const -> std::vector<DeviceState*> {
  std::lock_guard lock(devices_mutex_);
  std::vector<DeviceState*> out;
  for (auto& d : devices_)
    if (d) out.push_back(d.get());
  return out;
}

template <caching_backend Backend>
void CachingAllocator<Backend>::update(DeviceStats& s, bool small, int64_t PoolStats::*value,
                                       int64_t PoolStats::*peak, int64_t delta) {
  for (PoolStats* p : {static_cast<PoolStats*>(&s), small ? &s.small_pool : &s.large_pool}) {
    p->*value += delta;
    p->*peak = std::max(p->*peak, p->*value);
  }
}

template <caching_backend Backend>
auto CachingAllocator<Backend>::take_free_block(BlockPool& pool, stream_t stream, size_t size) -> Block* {
  Block key(stream, size, nullptr, &pool, 0);
  const uintptr_t k = stream_key(stream);
  // Streams with equal keys (only possible for hashed handles) interleave; skip the others.
  for (auto it = pool.blocks.lower_bound(&key); it != pool.blocks.end() && stream_key((*it)->stream) == k; ++it) {
    if ((*it)->stream == stream) {
      Block* b = *it;
      pool.blocks.erase(it);
      return b;
    }
  }
  return nullptr;
}

template <caching_backend Backend>
auto CachingAllocator<Backend>::alloc_segment(DeviceState& d, BlockPool& pool, stream_t stream, size_t size)
    -> Block* {
  void* p = backend.malloc(size, d.device);
  if (!p) return nullptr;
  auto* b = new Block(stream, size, static_cast<char*>(p), &pool, d.device);
  update(d.stats, pool.small, &PoolStats::reserved_bytes, &PoolStats::peak_reserved_bytes, int64_t(size));
  update(d.stats, pool.small, &PoolStats::segments, &PoolStats::peak_segments, 1);
  ++d.stats.num_raw_mallocs;
  return b;
}

// Cuts `size` bytes off the front of `block` when the rest is worth keeping as a free block:
// >= 512 bytes in the small pool, > 1 MiB in the large one (smaller tails stay inside the block).
template <caching_backend Backend>
void CachingAllocator<Backend>::split(Block& block, size_t size) {
  const size_t rest = block.size - size;
  if (block.pool->small ? rest < kMinBlockSize : rest <= kSmallSize) return;
  auto* tail = new Block(block.stream, rest, block.ptr + size, block.pool, block.device);
  tail->prev = &block;
  tail->next = block.next;
  if (block.next) block.next->prev = tail;
  block.next = tail;
  block.size = size;
  block.pool->blocks.insert(tail);
}

template <caching_backend Backend>
void CachingAllocator<Backend>::merge(BlockPool& pool, Block& dst, Block* src) {
  if (!src || src->allocated || src->event_count > 0) return;
  pool.blocks.erase(src);
  if (dst.prev == src) {
    dst.ptr = src->ptr;
    dst.prev = src->prev;
    if (dst.prev) dst.prev->next = &dst;
  } else {
    dst.next = src->next;
    if (dst.next) dst.next->prev = &dst;
  }
  dst.size += src->size;
  delete src;
}

template <caching_backend Backend>
void CachingAllocator<Backend>::free_block(DeviceState& d, Block& block) {
  BlockPool& pool = *block.pool;
  merge(pool, block, block.prev);
  merge(pool, block, block.next);
  update(d.stats, pool.small, &PoolStats::active_blocks, &PoolStats::peak_active_blocks, -1);
  pool.blocks.insert(&block);
}

template <caching_backend Backend>
void CachingAllocator<Backend>::insert_events(DeviceState& d, Block& block, const std::vector<stream_t>& streams) {
  for (stream_t s : streams) {
    const event_t e = backend.event_record(s, d.device);
    ++block.event_count;
    auto it = std::find_if(d.pending.begin(), d.pending.end(), [&](const StreamEvents& se) { return se.stream == s; });
    if (it == d.pending.end()) it = d.pending.insert(d.pending.end(), StreamEvents{s, {}});
    it->events.emplace_back(e, &block);
  }
}

// Events of one stream complete in the order they were recorded: stop at the first that has not.
template <caching_backend Backend>
void CachingAllocator<Backend>::process_events(DeviceState& d) {
  for (size_t i = 0; i < d.pending.size();) {
    auto& q = d.pending[i].events;
    while (!q.empty() && backend.event_query(q.front().first)) {
      auto [event, block] = q.front();
      q.pop_front();
      backend.event_destroy(event);
      if (--block->event_count == 0) free_block(d, *block);
    }
    if (q.empty())
      d.pending.erase(d.pending.begin() + std::ptrdiff_t(i));
    else
      ++i;
  }
}

template <caching_backend Backend>
void CachingAllocator<Backend>::release_free_segments(DeviceState& d, BlockPool& pool) {
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* b = *it;
    if (b->is_split()) {
      ++it;
      continue;
    }
    backend.free(b->ptr, d.device);
    update(d.stats, pool.small, &PoolStats::reserved_bytes, &PoolStats::peak_reserved_bytes, -int64_t(b->size));
    update(d.stats, pool.small, &PoolStats::segments, &PoolStats::peak_segments, -1);
    ++d.stats.num_raw_frees;
    it = pool.blocks.erase(it);
    delete b;
  }
}

template <caching_backend Backend>
void CachingAllocator<Backend>::release_cached_segments(DeviceState& d) {
  backend.synchronize(d.device);
  process_events(d);
  release_free_segments(d, d.small_blocks);
  release_free_segments(d, d.large_blocks);
}

template <caching_backend Backend>
std::string CachingAllocator<Backend>::oom_message(DeviceState& d, size_t alloc_size) {
  const auto [free_bytes, total_bytes] = backend.mem_get_info(d.device);
  const int64_t allocated = d.stats.allocated_bytes, reserved = d.stats.reserved_bytes;
  return dl::detail::cat("CUDA out of memory. Tried to allocate ", format_size(alloc_size), ". GPU ", d.device,
                         " has a total capacity of ", format_size(total_bytes), " of which ", format_size(free_bytes),
                         " is free. Of the allocated memory ", format_size(uint64_t(allocated)),
                         " is allocated by dl, and ", format_size(uint64_t(reserved - allocated)),
                         " is reserved by dl but unallocated.");
}

// ---- CachingHostAllocator --------------------------------------------------------------------

template <host_caching_backend Backend>
CachingHostAllocator<Backend>::~CachingHostAllocator() {
  // Blocks in use or waiting for events stay allocated: a copy may still be using them.
  try {
    process_events();
    release_cached();
    for (auto& [event, block] : events_) backend.event_destroy(event);
  } catch (...) {
  }
  for (auto& [addr, b] : blocks_) delete b;
}

template <host_caching_backend Backend>
void* CachingHostAllocator<Backend>::allocate(size_t nbytes, size_t* block_size) {
  if (block_size) *block_size = 0;
  if (nbytes == 0) return nullptr;
  DL_CHECK(nbytes <= kMaxRequest, "CachingHostAllocator: cannot allocate ", format_size(nbytes),
           " of pinned host memory (", nbytes, " bytes): too large");
  const size_t size = round_size(nbytes);
  std::lock_guard lock(mutex_);
  process_events();
  Block* b = nullptr;
  if (auto& list = free_[std::countr_zero(size)]; !list.empty()) {
    b = list.back();
    list.pop_back();
  } else {
    void* p = backend.host_alloc(size);
    if (!p) {
      release_cached();
      p = backend.host_alloc(size);
    }
    DL_CHECK(p, "CachingHostAllocator: could not allocate ", format_size(size), " of pinned host memory (",
             nbytes, " bytes requested; ", format_size(uint64_t(stats_.reserved_bytes)), " already pinned by dl)");
    b = new Block(static_cast<char*>(p), size);
    blocks_.emplace(reinterpret_cast<uintptr_t>(p), b);
    stats_.reserved_bytes += int64_t(size);
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    ++stats_.num_raw_allocs;
  }
  b->allocated = true;
  stats_.allocated_bytes += int64_t(size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  ++stats_.num_allocs;
  if (block_size) *block_size = size;
  return b->ptr;
}

template <host_caching_backend Backend>
void CachingHostAllocator<Backend>::deallocate(void* p) {
  if (!p) return;
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(p));
  DL_CHECK(it != blocks_.end() && it->second->allocated, "CachingHostAllocator::deallocate: pointer ", p,
           " was not returned by allocate, or was deallocated already");
  Block& b = *it->second;
  b.allocated = false;
  stats_.allocated_bytes -= int64_t(b.size);
  ++stats_.num_frees;
  for (auto [s, device] : b.streams) {
    events_.emplace_back(backend.event_record(s, device), &b);
    ++b.event_count;
  }
  b.streams.clear();
  if (b.event_count == 0) cache(b);
}

template <host_caching_backend Backend>
void CachingHostAllocator<Backend>::record_stream(const void* p, stream_t s, int device) {
  if (!p) return;
  std::lock_guard lock(mutex_);
  Block* b = find_containing(p);
  DL_CHECK(b && b->allocated, "CachingHostAllocator::record_stream: pointer ", p,
           " is not inside a block handed out by allocate");
  const std::pair<stream_t, int> use{s, device};
  if (std::find(b->streams.begin(), b->streams.end(), use) == b->streams.end()) b->streams.push_back(use);
}

template <host_caching_backend Backend>
bool CachingHostAllocator<Backend>::is_pinned(const void* p) const {
  std::lock_guard lock(mutex_);
  return find_containing(p) != nullptr;
}

template <host_caching_backend Backend>
void CachingHostAllocator<Backend>::empty_cache() {
  std::lock_guard lock(mutex_);
  process_events();
  release_cached();
}

template <host_caching_backend Backend>
HostStats CachingHostAllocator<Backend>::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

template <host_caching_backend Backend>
void CachingHostAllocator<Backend>::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

template <host_caching_backend Backend>
auto CachingHostAllocator<Backend>::find_containing(const void* p) const -> Block* {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = blocks_.upper_bound(addr);
  if (it == blocks_.begin()) return nullptr;
  --it;
  return addr < it->first + it->second->size ? it->second : nullptr;
}

template <host_caching_backend Backend>
void CachingHostAllocator<Backend>::process_events() {
  // Copies on different streams finish in any order, so every pending event is polled.
  for (size_t i = 0; i < events_.size();) {
    auto [event, block] = events_[i];
    if (!backend.event_query(event)) {
      ++i;
      continue;
    }
    events_.erase(events_.begin() + std::ptrdiff_t(i));
    backend.event_destroy(event);
    if (--block->event_count == 0) cache(*block);
  }
}

template <host_caching_backend Backend>
void CachingHostAllocator<Backend>::release_cached() {
  for (auto& list : free_) {
    for (Block* b : list) {
      backend.host_free(b->ptr);
      blocks_.erase(reinterpret_cast<uintptr_t>(b->ptr));
      stats_.reserved_bytes -= int64_t(b->size);
      ++stats_.num_raw_frees;
      delete b;
    }
    list.clear();
  }
}

}  // namespace detail
}  // namespace dl::cuda
