// Tests of dl/cuda/caching_allocator.hpp on the CPU: the device and pinned-host caching allocators
// run over mock backends (aligned_alloc with a capacity limit, events the test completes).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dl/cuda/caching_allocator.hpp>

namespace {

constexpr size_t KiB = size_t(1) << 10;
constexpr size_t MiB = size_t(1) << 20;
constexpr size_t GiB = size_t(1) << 30;

/// A stream handle of class type whose hash always collides: the allocator must still tell streams
/// apart by equality.
struct HashedStream {
  int id = 0;
  bool operator==(const HashedStream&) const = default;
};

}  // namespace

template <>
struct std::hash<HashedStream> {
  size_t operator()(const HashedStream&) const { return 42; }
};

namespace {

/// Events whose completion the test decides: an event is an id; complete() / complete_all() mark
/// ids done. Thread safe, since the allocator calls the backend from several threads.
template <class Stream>
struct MockEvents {
  using stream_t = Stream;
  using event_t = int;

  mutable std::mutex mutex;
  int next_event = 0;
  std::set<int> live_events;  // recorded and not destroyed
  std::set<int> completed;
  std::vector<Stream> event_streams;  // the stream of every event recorded, in order
  int64_t bad_event_ops = 0;          // query/destroy of an event that is not live

  event_t event_record(stream_t s, int) {
    std::lock_guard lock(mutex);
    live_events.insert(++next_event);
    event_streams.push_back(s);
    return next_event;
  }
  bool event_query(event_t e) {
    std::lock_guard lock(mutex);
    if (!live_events.count(e)) ++bad_event_ops;
    return completed.count(e) > 0;
  }
  void event_destroy(event_t e) {
    std::lock_guard lock(mutex);
    if (!live_events.erase(e)) ++bad_event_ops;
    completed.erase(e);
  }
  void complete(event_t e) {
    std::lock_guard lock(mutex);
    completed.insert(e);
  }
  void complete_all() {
    std::lock_guard lock(mutex);
    completed.insert(live_events.begin(), live_events.end());
  }
  size_t num_live_events() const {
    std::lock_guard lock(mutex);
    return live_events.size();
  }
};

/// Memory with a capacity limit: allocations beyond it fail like cudaMalloc (nullptr).
struct MockMemory {
  size_t capacity = 4 * GiB;  // simulated: only what is handed out is really allocated
  size_t in_use = 0;
  std::map<void*, size_t> live;
  int64_t mallocs = 0, frees = 0, failed_mallocs = 0, bad_frees = 0;
  std::vector<size_t> malloc_sizes;

  ~MockMemory() {
    for (auto& [p, n] : live) std::free(p);
  }
  void* take(size_t bytes) {
    if (bytes > capacity - in_use) {
      ++failed_mallocs;
      return nullptr;
    }
    void* p = std::aligned_alloc(512, bytes);
    if (!p) return nullptr;
    ++mallocs;
    in_use += bytes;
    live.emplace(p, bytes);
    malloc_sizes.push_back(bytes);
    return p;
  }
  void give(void* p) {
    auto it = live.find(p);
    if (it == live.end()) {
      ++bad_frees;
      return;
    }
    in_use -= it->second;
    live.erase(it);
    std::free(p);
    ++frees;
  }
};

template <class Stream>
struct MockDevice : MockEvents<Stream>, MockMemory {
  int64_t syncs = 0;

  void* malloc(size_t bytes, int) {
    std::lock_guard lock(this->mutex);
    return take(bytes);
  }
  void free(void* p, int) {
    std::lock_guard lock(this->mutex);
    give(p);
  }
  std::pair<size_t, size_t> mem_get_info(int) {
    std::lock_guard lock(this->mutex);
    return {capacity - in_use, capacity};
  }
  void synchronize(int) {
    ++syncs;
    this->complete_all();
  }
};

struct MockHost : MockEvents<int>, MockMemory {
  void* host_alloc(size_t bytes) {
    std::lock_guard lock(mutex);
    return take(bytes);
  }
  void host_free(void* p) {
    std::lock_guard lock(mutex);
    give(p);
  }
};

using Mock = MockDevice<int>;
using Allocator = dl::cuda::detail::CachingAllocator<Mock>;
using HostAllocator = dl::cuda::detail::CachingHostAllocator<MockHost>;

static_assert(dl::cuda::detail::caching_backend<Mock>);
static_assert(dl::cuda::detail::caching_backend<MockDevice<HashedStream>>);
static_assert(dl::cuda::detail::host_caching_backend<MockHost>);
static_assert(!dl::cuda::detail::caching_backend<MockHost>);

char* cp(void* p) { return static_cast<char*>(p); }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

TEST_CASE("format_size: bytes, then KiB, MiB, GiB with two decimals") {
  using dl::cuda::detail::format_size;
  CHECK(format_size(0) == "0 bytes");
  CHECK(format_size(1023) == "1023 bytes");
  CHECK(format_size(1024) == "1.00 KiB");
  CHECK(format_size(1536) == "1.50 KiB");
  CHECK(format_size(3 * MiB) == "3.00 MiB");
  CHECK(format_size(2 * GiB) == "2.00 GiB");
  CHECK(format_size(size_t(79.19 * double(GiB))) == "79.19 GiB");
}

TEST_CASE("CachingAllocator: sizes round up to 512 bytes and choose the pool and segment size") {
  CHECK(Allocator::round_size(1) == 512);
  CHECK(Allocator::round_size(512) == 512);
  CHECK(Allocator::round_size(513) == 1024);
  CHECK(Allocator::round_size(MiB + 1) == MiB + 512);
  CHECK(Allocator::segment_size(512) == 2 * MiB);
  CHECK(Allocator::segment_size(MiB) == 2 * MiB);
  CHECK(Allocator::segment_size(MiB + 512) == 20 * MiB);
  CHECK(Allocator::segment_size(10 * MiB - 512) == 20 * MiB);
  CHECK(Allocator::segment_size(10 * MiB) == 10 * MiB);
  CHECK(Allocator::segment_size(10 * MiB + 512) == 12 * MiB);
  CHECK(Allocator::segment_size(100 * MiB + 1) == 102 * MiB);

  SUBCASE("small requests are packed into one 2 MiB segment") {
    Allocator a;
    size_t bs = 0;
    void* p = a.allocate(1, 0, 0, &bs);
    CHECK(bs == 512);
    void* q = a.allocate(1000, 0, 0, &bs);
    CHECK(bs == 1024);
    void* r = a.allocate(MiB, 0, 0, &bs);
    CHECK(bs == MiB);
    CHECK(a.backend.malloc_sizes == std::vector<size_t>{2 * MiB});
    CHECK(cp(q) == cp(p) + 512);
    CHECK(cp(r) == cp(q) + 1024);
    const auto s = a.stats(0);
    CHECK(s.small_pool.segments == 1);
    CHECK(s.large_pool.segments == 0);
    CHECK(s.small_pool.allocated_bytes == int64_t(512 + 1024 + MiB));
    for (void* x : {p, q, r}) a.deallocate(x);
  }
  SUBCASE("a request over 1 MiB goes to the large pool, in a 20 MiB segment below 10 MiB") {
    Allocator a;
    size_t bs = 0;
    void* p = a.allocate(MiB + 1, 0, 0, &bs);
    CHECK(bs == MiB + 512);
    CHECK(a.backend.malloc_sizes == std::vector<size_t>{20 * MiB});
    CHECK(a.stats(0).large_pool.segments == 1);
    CHECK(a.stats(0).small_pool.segments == 0);
    // The 19 MiB left of the segment serves the next large request.
    void* q = a.allocate(9 * MiB, 0, 0, &bs);
    CHECK(cp(q) == cp(p) + MiB + 512);
    CHECK(a.backend.mallocs == 1);
    a.deallocate(p);
    a.deallocate(q);
  }
  SUBCASE("a request of 10 MiB or more gets a segment of its size rounded up to 2 MiB") {
    Allocator a;
    size_t bs = 0;
    void* p = a.allocate(10 * MiB + 1, 0, 0, &bs);
    CHECK(bs == 10 * MiB + 512);
    CHECK(a.backend.malloc_sizes == std::vector<size_t>{12 * MiB});
    // The 2 MiB - 512 tail is over 1 MiB: it stays free in the large pool.
    void* q = a.allocate(MiB + 512, 0, 0, &bs);
    CHECK(cp(q) == cp(p) + 10 * MiB + 512);
    CHECK(a.backend.mallocs == 1);
    a.deallocate(p);
    a.deallocate(q);
  }
}

TEST_CASE("CachingAllocator: a steady loop of allocations and frees makes no backend malloc after the first step") {
  Allocator a;
  const size_t sizes[] = {1000, 4096, 300000, 3 * MiB, 12 * MiB + 5, 512, 8 * MiB, 700 * KiB};
  void* weights = a.allocate(5 * MiB, 0, 0);  // lives across steps, like parameters
  auto step = [&](int i) {
    std::vector<void*> ps;
    for (size_t s : sizes) ps.push_back(a.allocate(s, 0, 0));
    if (i % 2) std::reverse(ps.begin(), ps.end());
    for (void* p : ps) a.deallocate(p);
  };
  step(0);
  const int64_t mallocs = a.backend.mallocs;
  const int64_t reserved = a.stats(0).reserved_bytes;
  for (int i = 1; i <= 1000; ++i) step(i);
  CHECK(a.backend.mallocs == mallocs);
  CHECK(a.backend.frees == 0);
  const auto s = a.stats(0);
  CHECK(s.num_raw_mallocs == mallocs);
  CHECK(s.reserved_bytes == reserved);
  CHECK(s.num_allocs == 1 + 1001 * 8);
  CHECK(s.num_frees == 1001 * 8);
  CHECK(s.allocated_bytes == int64_t(5 * MiB));
  CHECK(s.active_blocks == 1);
  a.deallocate(weights);
}

TEST_CASE("CachingAllocator: best fit splits a segment, and freed blocks merge with free neighbours") {
  SUBCASE("large pool") {
    Allocator a;
    void* x = a.allocate(4 * MiB, 0, 0);
    void* y = a.allocate(4 * MiB, 0, 0);
    void* z = a.allocate(4 * MiB, 0, 0);
    REQUIRE(a.backend.mallocs == 1);
    CHECK(cp(y) == cp(x) + 4 * MiB);
    CHECK(cp(z) == cp(y) + 4 * MiB);

    a.deallocate(y);  // free: y (4 MiB) and the tail after z (8 MiB)
    CHECK(a.allocate(4 * MiB, 0, 0) == y);  // the smallest block that fits
    a.deallocate(y);
    a.deallocate(x);  // merges with y: 8 MiB at x
    CHECK(a.allocate(8 * MiB, 0, 0) == x);  // two 8 MiB blocks: the lower address wins
    a.deallocate(x);
    a.deallocate(z);  // x+y, z and the tail become one 20 MiB block again
    size_t bs = 0;
    void* whole = a.allocate(20 * MiB, 0, 0, &bs);
    CHECK(whole == x);
    CHECK(bs == 20 * MiB);
    CHECK(a.backend.mallocs == 1);
    CHECK(a.stats(0).active_blocks == 1);
    a.deallocate(whole);
  }
  SUBCASE("small pool") {
    Allocator a;
    void* x = a.allocate(512, 0, 0);
    void* y = a.allocate(512, 0, 0);
    void* z = a.allocate(512, 0, 0);
    CHECK(cp(y) == cp(x) + 512);
    CHECK(cp(z) == cp(y) + 512);
    a.deallocate(y);
    CHECK(a.allocate(300, 0, 0) == y);
    a.deallocate(x);
    a.deallocate(y);
    a.deallocate(z);
    // The segment is one free 2 MiB block again: without the merge, best fit would pick the tail.
    CHECK(a.allocate(MiB, 0, 0) == x);
    CHECK(cp(a.allocate(MiB, 0, 0)) == cp(x) + MiB);
    CHECK(a.backend.mallocs == 1);
  }
  SUBCASE("a large-pool tail of at most 1 MiB is not split off") {
    Allocator a;
    size_t bs = 0;
    void* x = a.allocate(19 * MiB, 0, 0, &bs);  // a 20 MiB segment: the 1 MiB left stays in the block
    CHECK(bs == 20 * MiB);
    CHECK(a.stats(0).allocated_bytes == int64_t(20 * MiB));
    CHECK(a.stats(0).requested_bytes == int64_t(19 * MiB));
    a.deallocate(x);
    CHECK(a.allocate(20 * MiB, 0, 0) == x);
    CHECK(a.backend.mallocs == 1);
  }
}

TEST_CASE("CachingAllocator: a block freed on one stream is reused only by that stream") {
  Allocator a;
  void* p = a.allocate(1000, 0, /*stream*/ 1);
  a.deallocate(p);
  void* q = a.allocate(1000, 0, 2);
  CHECK(q != p);
  CHECK(a.backend.mallocs == 2);  // stream 2 got its own segment
  CHECK(a.allocate(1000, 0, 1) == p);
  a.deallocate(q);
  CHECK(a.allocate(1000, 0, 2) == q);
  CHECK(a.backend.mallocs == 2);
}

TEST_CASE("CachingAllocator: streams that are pointers, or classes with colliding hashes") {
  SUBCASE("pointers") {
    int s1 = 0, s2 = 0;
    dl::cuda::detail::CachingAllocator<MockDevice<int*>> a;
    void* p = a.allocate(1000, 0, &s1);
    a.deallocate(p);
    CHECK(a.allocate(1000, 0, &s2) != p);
    CHECK(a.allocate(1000, 0, &s1) == p);
  }
  SUBCASE("hashed") {
    dl::cuda::detail::CachingAllocator<MockDevice<HashedStream>> a;
    void* big = a.allocate(3 * MiB, 0, HashedStream{1});
    void* small = a.allocate(3000, 0, HashedStream{2});
    void* p = a.allocate(1000, 0, HashedStream{1});
    a.deallocate(p);
    a.deallocate(big);
    // Stream 2's free tail sorts among stream 1's blocks (same hash) but is never handed to it.
    CHECK(a.allocate(1000, 0, HashedStream{1}) == p);
    CHECK(a.allocate(3 * MiB, 0, HashedStream{1}) == big);
    void* q = a.allocate(1000, 0, HashedStream{2});
    CHECK(cp(q) == cp(small) + 3072);
    CHECK(a.backend.mallocs == 3);
  }
}

TEST_CASE("CachingAllocator: record_stream defers reuse until the other stream's work is done") {
  Allocator a;
  SUBCASE("one extra stream") {
    void* p = a.allocate(1000, 0, 1);
    a.record_stream(p, 2);
    a.record_stream(p, 2);  // recorded once
    a.record_stream(p, 1);  // the allocation stream: ignored
    a.deallocate(p);
    CHECK(a.backend.event_streams == std::vector<int>{2});
    auto s = a.stats(0);
    CHECK(s.allocated_bytes == 0);
    CHECK(s.active_blocks == 1);  // waiting for the event
    void* q = a.allocate(1000, 0, 1);
    CHECK(q != p);
    a.backend.complete_all();
    CHECK(a.allocate(1000, 0, 1) == p);  // the next allocate polls the event
    CHECK(a.backend.num_live_events() == 0);
    CHECK(a.stats(0).active_blocks == 2);
  }
  SUBCASE("every stream's event must complete") {
    void* p = a.allocate(1000, 0, 1);
    a.record_stream(p, 2);
    a.record_stream(p, 3);
    a.deallocate(p);
    CHECK(a.backend.num_live_events() == 2);
    a.backend.complete(1);
    void* q = a.allocate(1000, 0, 1);
    CHECK(q != p);
    a.backend.complete(2);
    CHECK(a.allocate(1000, 0, 1) == p);
    a.deallocate(q);
  }
  SUBCASE("recording only the allocation stream frees at once") {
    void* p = a.allocate(1000, 0, 1);
    a.record_stream(p, 1);
    a.deallocate(p);
    CHECK(a.backend.event_streams.empty());
    CHECK(a.allocate(1000, 0, 1) == p);
  }
  SUBCASE("a waiting block does not merge until its event completes") {
    void* x = a.allocate(4 * MiB, 0, 1);
    void* y = a.allocate(4 * MiB, 0, 1);
    a.record_stream(x, 2);
    a.deallocate(x);
    a.deallocate(y);  // y merges with the tail only
    CHECK(a.allocate(16 * MiB, 0, 1) == y);
    a.backend.complete_all();
    CHECK(a.allocate(4 * MiB, 0, 1) == x);
    CHECK(a.backend.mallocs == 1);
  }
  CHECK(a.backend.bad_event_ops == 0);
}

TEST_CASE("CachingAllocator: when the backend is out of memory, cached segments are freed and malloc retried") {
  Allocator a;
  a.backend.capacity = 30 * MiB;
  SUBCASE("an idle cached segment") {
    a.deallocate(a.allocate(5 * MiB, 0, 0));  // a 20 MiB segment, cached
    void* p = a.allocate(22 * MiB, 0, 0);    // 20 + 22 MiB: over capacity until the cache goes
    CHECK(p != nullptr);
    const auto s = a.stats(0);
    CHECK(s.num_alloc_retries == 1);
    CHECK(s.num_raw_frees == 1);
    CHECK(s.num_ooms == 0);
    CHECK(s.reserved_bytes == int64_t(22 * MiB));
    CHECK(a.backend.failed_mallocs == 1);
    CHECK(a.backend.syncs == 1);
    a.deallocate(p);
  }
  SUBCASE("a segment whose block waits for an event (the synchronize completes it)") {
    void* p = a.allocate(5 * MiB, 0, 0);
    a.record_stream(p, 7);
    a.deallocate(p);
    void* q = a.allocate(22 * MiB, 0, 0);
    CHECK(q != nullptr);
    CHECK(a.stats(0).num_alloc_retries == 1);
    CHECK(a.backend.num_live_events() == 0);
    a.deallocate(q);
  }
  SUBCASE("a split segment with a block in use is kept; the idle small segment goes") {
    void* p = a.allocate(5 * MiB, 0, 0);       // 20 MiB segment, 15 MiB of it free
    a.deallocate(a.allocate(1000, 0, 0));      // 2 MiB small segment, idle
    a.backend.capacity = 37 * MiB;
    void* q = a.allocate(16 * MiB, 0, 0);      // 22 + 16 > 37 until the small segment goes
    CHECK(q != nullptr);
    const auto s = a.stats(0);
    CHECK(s.num_alloc_retries == 1);
    CHECK(s.num_raw_frees == 1);
    CHECK(s.small_pool.segments == 0);
    CHECK(s.large_pool.segments == 2);
    CHECK(s.reserved_bytes == int64_t(36 * MiB));
    a.deallocate(p);
    a.deallocate(q);
  }
}

TEST_CASE("CachingAllocator: OutOfMemoryError says what was asked, what the device has and what dl holds") {
  Allocator a;
  a.backend.capacity = 64 * MiB;
  void* p = a.allocate(5 * MiB, 1, 0);  // a 20 MiB segment on device 1, 15 MiB of it free
  CHECK_THROWS_AS(a.allocate(2 * GiB, 1, 0), dl::cuda::OutOfMemoryError);
  const std::string msg = message_of([&] { a.allocate(2 * GiB, 1, 0); });
  CHECK(msg ==
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 64.00 MiB of which "
        "44.00 MiB is free. Of the allocated memory 5.00 MiB is allocated by dl, and 15.00 MiB is reserved by "
        "dl but unallocated.");
  CHECK(msg.find("Tried to allocate") != std::string::npos);
  auto s = a.stats(1);
  CHECK(s.num_ooms == 2);
  CHECK(s.num_alloc_retries == 2);
  CHECK(s.allocated_bytes == int64_t(5 * MiB));
  CHECK(s.active_blocks == 1);
  // A size that cannot even be rounded fails the same way, without asking the backend.
  const int64_t failed = a.backend.failed_mallocs;
  CHECK_THROWS_AS(a.allocate(~size_t(0), 1, 0), dl::cuda::OutOfMemoryError);
  CHECK(a.backend.failed_mallocs == failed);
  // The allocator still works afterwards.
  void* q = a.allocate(1000, 1, 0);
  CHECK(q != nullptr);
  a.deallocate(q);
  a.deallocate(p);
}

TEST_CASE("CachingAllocator: empty_cache returns every idle segment of every device") {
  Allocator a;
  std::vector<void*> ps;
  for (int device : {0, 1})
    for (size_t n : {size_t(100), 2 * MiB, 30 * MiB, 500 * KiB}) ps.push_back(a.allocate(n, device, 0));
  for (void* p : ps) a.deallocate(p);
  CHECK(a.stats(0).reserved_bytes > 0);
  a.empty_cache();
  for (int device : {0, 1}) {
    const auto s = a.stats(device);
    CHECK(s.reserved_bytes == 0);
    CHECK(s.segments == 0);
    CHECK(s.num_raw_frees == s.num_raw_mallocs);
  }
  CHECK(a.backend.live.empty());

  SUBCASE("segments with a block in use stay") {
    void* small = a.allocate(1000, 0, 0);
    a.deallocate(a.allocate(3 * MiB, 0, 0));
    a.empty_cache();
    CHECK(a.stats(0).reserved_bytes == int64_t(2 * MiB));
    a.deallocate(small);
    a.empty_cache();
    CHECK(a.stats(0).reserved_bytes == 0);
  }
  SUBCASE("blocks waiting for events are released after the synchronize") {
    void* p = a.allocate(1000, 0, 0);
    a.record_stream(p, 5);
    a.deallocate(p);
    a.empty_cache();
    CHECK(a.stats(0).reserved_bytes == 0);
    CHECK(a.backend.num_live_events() == 0);
  }
  CHECK(a.backend.live.empty());
  CHECK(a.allocate(1000, 0, 0) != nullptr);  // and allocating works again
}

TEST_CASE("CachingAllocator: stats, peaks and reset_peak_stats") {
  Allocator a;
  size_t bs = 0;
  void* p = a.allocate(1000, 0, 0, &bs);
  auto s = a.stats(0);
  CHECK(s.allocated_bytes == 1024);
  CHECK(s.requested_bytes == 1000);
  CHECK(s.reserved_bytes == int64_t(2 * MiB));
  CHECK(s.active_blocks == 1);
  CHECK(s.segments == 1);
  CHECK(s.small_pool.allocated_bytes == 1024);
  CHECK(s.large_pool.allocated_bytes == 0);
  CHECK(s.num_allocs == 1);
  CHECK(s.num_raw_mallocs == 1);

  void* q = a.allocate(3 * MiB, 0, 0);
  a.deallocate(q);
  s = a.stats(0);
  CHECK(s.allocated_bytes == 1024);
  CHECK(s.peak_allocated_bytes == int64_t(1024 + 3 * MiB));
  CHECK(s.requested_bytes == 1000);
  CHECK(s.peak_requested_bytes == int64_t(1000 + 3 * MiB));
  CHECK(s.reserved_bytes == int64_t(22 * MiB));
  CHECK(s.large_pool.peak_allocated_bytes == int64_t(3 * MiB));
  CHECK(s.large_pool.reserved_bytes == int64_t(20 * MiB));
  CHECK(s.peak_active_blocks == 2);
  CHECK(s.active_blocks == 1);
  CHECK(s.num_allocs == 2);
  CHECK(s.num_frees == 1);

  a.reset_peak_stats(0);
  s = a.stats(0);
  CHECK(s.peak_allocated_bytes == 1024);
  CHECK(s.peak_reserved_bytes == int64_t(22 * MiB));
  CHECK(s.large_pool.peak_allocated_bytes == 0);
  CHECK(s.peak_active_blocks == 1);

  a.empty_cache();
  s = a.stats(0);
  CHECK(s.reserved_bytes == int64_t(2 * MiB));
  CHECK(s.peak_reserved_bytes == int64_t(22 * MiB));
  CHECK(s.num_raw_frees == 1);
  a.deallocate(p);
  CHECK(a.stats(0).allocated_bytes == 0);
  CHECK(a.stats(0).requested_bytes == 0);

  const auto unused = a.stats(5);
  CHECK(unused.num_allocs == 0);
  CHECK(unused.reserved_bytes == 0);
}

TEST_CASE("CachingAllocator: memory_summary is a table of the stats") {
  Allocator a;
  void* p = a.allocate(1000, 0, 0);
  void* q = a.allocate(3 * MiB, 0, 0);
  a.deallocate(q);
  const std::string text = a.memory_summary(0);
  for (const char* row : {"dl CUDA memory summary, device ID 0", "Allocated memory", "Requested memory",
                          "Reserved memory", "Active blocks", "Segments", "from large pool", "from small pool",
                          "Allocations", "Frees", "cudaMalloc retries", "CUDA OOMs", "22.00 MiB", "3.00 MiB"})
    CHECK_MESSAGE(text.find(row) != std::string::npos, row);
  // Every line has the same width.
  std::istringstream lines(text);
  std::string line, first;
  std::getline(lines, first);
  while (std::getline(lines, line)) CHECK_MESSAGE(line.size() == first.size(), line);
  a.deallocate(p);
}

TEST_CASE("CachingAllocator: zero bytes, null, foreign and double frees") {
  Allocator a;
  size_t bs = 123;
  CHECK(a.allocate(0, 0, 0, &bs) == nullptr);
  CHECK(bs == 0);
  a.deallocate(nullptr);
  a.record_stream(nullptr, 2);
  CHECK(a.stats(0).num_allocs == 0);
  CHECK(a.stats(0).num_frees == 0);
  CHECK(a.backend.mallocs == 0);

  int local = 0;
  CHECK_THROWS_AS(a.deallocate(&local), dl::Error);
  CHECK(message_of([&] { a.deallocate(&local); }).find("was not returned by allocate") != std::string::npos);
  void* p = a.allocate(1024, 0, 0);
  CHECK_THROWS_AS(a.deallocate(cp(p) + 512), dl::Error);  // inside a block, not its start
  a.deallocate(p);
  CHECK_THROWS_AS(a.deallocate(p), dl::Error);
  CHECK_THROWS_AS(a.record_stream(p, 2), dl::Error);
  CHECK_THROWS_AS(a.allocate(10, -1, 0), dl::Error);
  CHECK(a.stats(0).num_frees == 1);
}

TEST_CASE("CachingAllocator: two threads allocating and freeing concurrently") {
  Allocator a;
  constexpr int kIters = 10000;
  auto work = [&](int stream) {
    std::mt19937 rng{unsigned(stream)};
    const size_t sizes[] = {100, 4000, 70000, 900 * KiB, 2 * MiB, 6 * MiB, 11 * MiB};
    std::vector<void*> held(8, nullptr);
    for (int i = 0; i < kIters; ++i) {
      void*& slot = held[rng() % held.size()];
      if (slot) {
        if (rng() % 4 == 0) a.record_stream(slot, stream + 10);
        a.deallocate(slot);
      }
      slot = a.allocate(sizes[rng() % std::size(sizes)], 0, stream);
      if (rng() % 64 == 0) a.backend.complete_all();
    }
    for (void* p : held) a.deallocate(p);
  };
  std::thread t1(work, 1), t2(work, 2);
  t1.join();
  t2.join();
  auto s = a.stats(0);
  CHECK(s.num_allocs == 2 * kIters);
  CHECK(s.num_frees == 2 * kIters);
  CHECK(s.allocated_bytes == 0);
  CHECK(s.requested_bytes == 0);
  a.empty_cache();
  s = a.stats(0);
  CHECK(s.active_blocks == 0);
  CHECK(s.reserved_bytes == 0);
  CHECK(a.backend.live.empty());
  CHECK(a.backend.num_live_events() == 0);
  CHECK(a.backend.bad_event_ops == 0);
  CHECK(a.backend.bad_frees == 0);
}

TEST_CASE("CachingHostAllocator: power-of-two blocks, cached and reused") {
  CHECK(HostAllocator::round_size(1) == 512);
  CHECK(HostAllocator::round_size(512) == 512);
  CHECK(HostAllocator::round_size(513) == 1024);
  CHECK(HostAllocator::round_size(4097) == 8192);
  CHECK(HostAllocator::round_size(MiB + 1) == 2 * MiB);

  HostAllocator h;
  size_t bs = 0;
  void* p = h.allocate(1000, &bs);
  CHECK(bs == 1024);
  h.deallocate(p);
  CHECK(h.allocate(700) == p);  // same power of two: reused
  void* q = h.allocate(2000, &bs);
  CHECK(bs == 2048);
  CHECK(h.backend.malloc_sizes == std::vector<size_t>{1024, 2048});
  auto s = h.stats();
  CHECK(s.allocated_bytes == 3072);
  CHECK(s.reserved_bytes == 3072);
  CHECK(s.num_allocs == 3);
  CHECK(s.num_frees == 1);
  CHECK(s.num_raw_allocs == 2);
  h.deallocate(p);
  h.deallocate(q);
  for (int i = 0; i < 1000; ++i) h.deallocate(h.allocate(1500));
  CHECK(h.backend.mallocs == 2);
  h.reset_peak_stats();
  CHECK(h.stats().peak_allocated_bytes == 0);
  h.empty_cache();
  s = h.stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.num_raw_frees == 2);
  CHECK(h.backend.live.empty());

  CHECK(h.allocate(0, &bs) == nullptr);
  CHECK(bs == 0);
  h.deallocate(nullptr);
  int local = 0;
  CHECK_THROWS_AS(h.deallocate(&local), dl::Error);
}

TEST_CASE("CachingHostAllocator: record_stream keeps a block out of the cache until the copy is done") {
  HostAllocator h;
  void* p = h.allocate(4096);
  h.record_stream(cp(p) + 100, 3);  // any address inside the block
  h.record_stream(p, 3);
  h.deallocate(p);
  CHECK(h.backend.event_streams == std::vector<int>{3});
  void* q = h.allocate(4096);
  CHECK(q != p);
  h.backend.complete_all();
  CHECK(h.allocate(4096) == p);
  CHECK(h.backend.num_live_events() == 0);
  CHECK(h.backend.bad_event_ops == 0);
  int local = 0;
  CHECK_THROWS_AS(h.record_stream(&local, 3), dl::Error);
}

TEST_CASE("CachingHostAllocator: is_pinned covers blocks in use and cached, until empty_cache") {
  HostAllocator h;
  size_t bs = 0;
  void* p = h.allocate(3000, &bs);
  int local = 0;
  CHECK(h.is_pinned(p));
  CHECK(h.is_pinned(cp(p) + 100));
  CHECK(h.is_pinned(cp(p) + bs - 1));
  CHECK_FALSE(h.is_pinned(&local));
  CHECK_FALSE(h.is_pinned(nullptr));
  h.deallocate(p);
  CHECK(h.is_pinned(p));
  h.empty_cache();
  CHECK_FALSE(h.is_pinned(p));
}

TEST_CASE("CachingHostAllocator: failure names the size; the cache is released and the call retried first") {
  HostAllocator h;
  h.backend.capacity = MiB;
  const std::string msg = message_of([&] { h.allocate(3 * MiB); });
  CHECK(msg.find("4.00 MiB") != std::string::npos);
  CHECK(msg.find("pinned host memory") != std::string::npos);

  h.deallocate(h.allocate(512 * KiB));
  void* p = h.allocate(MiB);  // fits only once the cached 512 KiB block is freed
  CHECK(p != nullptr);
  CHECK(h.stats().num_raw_frees == 1);
  CHECK(h.stats().reserved_bytes == int64_t(MiB));
  h.deallocate(p);
}
