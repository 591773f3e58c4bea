// dl/parallel.hpp — CPU thread count (dl::set_num_threads) and the parallel_for every kernel uses.
// With OpenMP (-fopenmp, which also sets the default thread count from OMP_NUM_THREADS) kernels
// run on dl's own thread team below; serial otherwise.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>

#if defined(__unix__)
#include <pthread.h>
#endif

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "error.hpp"

namespace dl {

/// Number of threads CPU kernels started from the calling thread may use (default:
/// OMP_NUM_THREADS, else all cores).
int get_num_threads();
/// Sets the number of threads CPU kernels use, process-wide; n >= 1.
void set_num_threads(int n);
/// Overrides the thread count for kernels started from the calling thread only (0 restores the
/// process-wide setting). DataLoader workers use 1, as PyTorch's workers do, so that kernels run
/// inside workers do not each start a full team and oversubscribe the cores.
void set_num_threads_in_this_thread(int n);

namespace detail {

inline int& num_threads_slot() {
#if defined(_OPENMP)
  static int n = omp_get_max_threads();
#else
  static int n = 1;
#endif
  return n;
}

inline int& thread_num_threads_slot() {
  static thread_local int n = 0;  // 0: use the process-wide setting
  return n;
}

/// True on a thread of dl's team while it runs a job (nested kernels then run serially).
inline bool& in_team_slot() {
  static thread_local bool in_team = false;
  return in_team;
}

inline bool in_parallel_region() {
#if defined(_OPENMP)
  return in_team_slot() || omp_in_parallel();
#else
  return in_team_slot();
#endif
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// How long a waiting thread of the team spins before it sleeps: long enough to cover the gap
/// between two kernels of a training step (so a quiet machine pays no wake-up), short enough that
/// an idle thread gives its core back when another process wants it.
inline constexpr auto team_spin = std::chrono::microseconds(50);

/// Spins until done() for at most team_spin; returns done(). Every 64 pauses it also yields, in
/// case the thread it waits for needs this core (a no-op when no other thread wants it). Measured
/// right after a child process ran, when the worker wakes late: BatchNorm1d [256, 512] forward
/// 0.29 -> 0.09 ms with the yield alone (0.05 ms quiet).
template <class Done>
bool spin_until(Done done) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() - start > team_spin) return done();
      std::this_thread::yield();
    }
  }
}

/// dl's CPU thread team: the calling thread and persistent workers that spin for team_spin after
/// each job and then sleep (a futex wait), so that on a busy machine an idle thread does not take
/// CPU time from the threads doing work. (OpenMP's teams spin for milliseconds — libgomp's default
/// — and on a core shared with another process that made a training step 3x slower, not 2x.)
/// One job at a time: a second thread that calls run() while a job runs gets false and runs its
/// work serially. The team is never destroyed (kernels may run during static destruction).
class ThreadTeam {
 public:
  using Job = void (*)(void* ctx, int member);

  static ThreadTeam& instance() { return *slot(); }

  /// Runs job(ctx, m) for every m in [0, n) concurrently, m = 0 on the calling thread. The job
  /// must not throw. Returns false, running nothing, when another thread's job is running.
  /// `optional_members`: the members share their work out among themselves (a counter they take
  /// chunks from), so a worker that has not started when member 0 finishes is left out: the caller
  /// returns at once instead of waiting for a sleeping (or descheduled) worker to wake up only to
  /// find nothing left.
  bool run(int n, Job job, void* ctx, bool optional_members = false) {
    const auto start = Clock::now();
    if (start.time_since_epoch().count() < solo_until_.load(std::memory_order_relaxed)) return false;
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    while (workers_ < n - 1) {
      const uint32_t seen = generation_.load(std::memory_order_relaxed);
      try {
        std::thread([this, index = workers_, seen] { work(index, seen); }).detach();
      } catch (const std::system_error&) {
        return false;  // no more threads: the caller runs the work serially
      }
      ++workers_;
    }
    job_ = job;
    ctx_ = ctx;
    width_ = n;
    const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
    done_.store(0, std::memory_order_relaxed);
    gate_.store(uint64_t(gen) << 32, std::memory_order_relaxed);
    generation_.store(gen, std::memory_order_release);
    generation_.notify_all();  // no system call unless a worker sleeps
    {
      in_team_slot() = true;
      job(ctx, 0);
      in_team_slot() = false;
    }
    // The workers to wait for: all of them, or those that joined before the gate closed.
    const int joined = optional_members ? int(gate_.fetch_or(closed, std::memory_order_acq_rel) & count_mask) : workers_;
    const auto finished = [&] { return done_.load(std::memory_order_acquire) == joined; };
    if (finished()) {
      busy_ += Clock::now() - start;
      return true;
    }
    const auto mine = Clock::now();
    if (!spin_until(finished))
      for (int d; (d = done_.load(std::memory_order_acquire)) != joined;) done_.wait(d, std::memory_order_acquire);
    // A worker that finishes long after the caller had lost its core to another process (the
    // caller took every chunk it could meanwhile). When such waits take a good part of the time
    // the team runs, the calling thread works alone for a while, so that the other process keeps
    // its core and ours is not shared; then the team is tried again.
    const auto end = Clock::now();
    busy_ += end - start;
    if (end - mine > late_wait) late_ += end - mine;
    if (busy_ > probe_time) {
      if (late_ * 2 > busy_)
        solo_until_.store((end + solo_time).time_since_epoch().count(), std::memory_order_relaxed);
      busy_ = late_ = Clock::duration::zero();
    }
    return true;
  }

 private:
  ThreadTeam() = default;

  // A child process made by fork() has none of the parent's workers: it gets a new team.
  static ThreadTeam*& slot() {
    static ThreadTeam* team = [] {
#if defined(__unix__)
      pthread_atfork(nullptr, nullptr, [] { slot() = new ThreadTeam; });
#endif
      return new ThreadTeam;
    }();
    return team;
  }

  [[noreturn]] void work(int index, uint32_t seen) {
    in_team_slot() = true;
    for (;;) {
      uint32_t now = seen;
      const auto published = [&] { return (now = generation_.load(std::memory_order_acquire)) != seen; };
      if (!spin_until(published))
        while (now == seen) {
          generation_.wait(seen, std::memory_order_acquire);
          now = generation_.load(std::memory_order_acquire);
        }
      seen = now;
      // Join job `now` unless its gate closed (or a later job was published meanwhile).
      uint64_t g = gate_.load(std::memory_order_acquire);
      bool in = false;
      while (!in && (g >> 32) == now && !(g & closed))
        in = gate_.compare_exchange_weak(g, g + 1, std::memory_order_acq_rel, std::memory_order_acquire);
      if (!in) continue;
      if (index + 1 < width_) job_(ctx_, index + 1);
      done_.fetch_add(1, std::memory_order_acq_rel);
      done_.notify_one();  // no system call unless the caller sleeps
    }
  }

  using Clock = std::chrono::steady_clock;
  // A wait longer than late_wait is a worker that lost its core for a scheduler time slice, not
  // an uneven split; the check runs every probe_time of job time and, when such waits took half
  // of it, the caller works alone for solo_time. Measured on a 2-core machine with one core held
  // by `yes` (bench/busy_machine.sh): the CNN sample 1500-1627 -> 2559-2608 img/s, quiet
  // unchanged. Shorter waits (100 us, a quarter of the time) also caught the sample's own
  // DataLoader threads on a quiet machine and cost it 10%.
  static constexpr auto late_wait = std::chrono::milliseconds(1);
  static constexpr auto probe_time = std::chrono::milliseconds(10);
  static constexpr auto solo_time = std::chrono::milliseconds(200);

  std::mutex mutex_;                   // held by the caller of run() for the whole job
  std::atomic<Clock::rep> solo_until_{0};  // until then run() declines (the caller works alone)
  Clock::duration busy_{}, late_{};    // time in jobs, and waiting for late workers, since the last check
  std::atomic<uint32_t> generation_{0};  // bumped once per job
  // The current job's generation (high 32 bits), `closed` once the caller stopped waiting for
  // workers that have not joined, and how many joined (low bits).
  static constexpr uint64_t closed = uint64_t(1) << 31, count_mask = closed - 1;
  std::atomic<uint64_t> gate_{0};
  std::atomic<int> done_{0};            // workers that finished the current job
  int workers_ = 0;
  Job job_ = nullptr;
  void* ctx_ = nullptr;
  int width_ = 0;
};

/// A barrier for the n members of one ThreadTeam job (spins for team_spin, then sleeps).
class TeamBarrier {
 public:
  explicit TeamBarrier(int n) : n_(n) {}
  void arrive_and_wait() {
    const uint32_t phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.fetch_add(1, std::memory_order_release);
      phase_.notify_all();
      return;
    }
    if (!spin_until([&] { return phase_.load(std::memory_order_acquire) != phase; }))
      while (phase_.load(std::memory_order_acquire) == phase) phase_.wait(phase, std::memory_order_acquire);
  }

 private:
  const int n_;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> phase_{0};
};

/// One chunk of a parallel_for: calls the caller's function object. Not inlined, so that the
/// loop body a kernel passes is compiled once, here, and both the serial path and the threads
/// call it (inlined into each, every elementwise kernel was compiled twice).
template <class Fn>
[[gnu::noinline]] void run_chunk(void* f, int64_t b, int64_t e) {
  (*static_cast<Fn*>(f))(b, e);
}

/// Runs chunk(f, b, e) on `nt` threads over `count` disjoint chunks covering [begin, end), which
/// the threads take in turn (a thread slowed down by another process takes fewer): one team job
/// for every caller. The first exception thrown by any chunk is rethrown.
inline void run_chunks(int64_t begin, int64_t end, int64_t count, int nt, void (*chunk)(void*, int64_t, int64_t),
                       void* f) {
#if defined(_OPENMP)
  struct Shared {
    int64_t begin, end, size, count;
    void (*chunk)(void*, int64_t, int64_t);
    void* f;
    std::atomic<int64_t> next{0};
    std::exception_ptr error{};
    std::once_flag once{};
  } s{begin, end, (end - begin + count - 1) / count, count, chunk, f, {0}, {}, {}};
  const auto member = [](void* ctx, int) {
    auto& s = *static_cast<Shared*>(ctx);
    for (int64_t c; (c = s.next.fetch_add(1, std::memory_order_relaxed)) < s.count;) {
      const int64_t b = s.begin + c * s.size, e = std::min(s.end, b + s.size);
      if (b >= e) continue;
      try {
        s.chunk(s.f, b, e);
      } catch (...) {
        std::call_once(s.once, [&] { s.error = std::current_exception(); });
      }
    }
  };
  if (!ThreadTeam::instance().run(nt, member, &s, /*optional_members=*/true)) return chunk(f, begin, end);
  if (s.error) std::rethrow_exception(s.error);
#else
  (void)count;
  (void)nt;
  chunk(f, begin, end);
#endif
}

/// Calls f(begin_i, end_i) on disjoint chunks covering [begin, end), each at least `grain` long
/// (except the last). The split depends only on (end - begin, grain, thread count); callers that
/// need results independent of the thread count (reductions, random fills) split by a fixed block
/// size themselves. The first exception thrown by any chunk is rethrown to the caller.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  using Fn = std::remove_reference_t<F>;
  void* ctx = const_cast<std::remove_const_t<Fn>*>(std::addressof(f));
  const int64_t max_chunks = (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1);
  const int nt = int(std::min<int64_t>(get_num_threads(), max_chunks));
  if (nt <= 1 || in_parallel_region()) return run_chunk<Fn>(ctx, begin, end);
  // Up to 4 chunks per thread, none shorter than grain unless there are fewer than nt such.
  const int64_t count = std::max<int64_t>(nt, std::min<int64_t>(int64_t(4) * nt, n / std::max<int64_t>(grain, 1)));
  run_chunks(begin, end, count, nt, &run_chunk<Fn>, ctx);
}

}  // namespace detail

inline int get_num_threads() {
  const int local = detail::thread_num_threads_slot();
  return local > 0 ? local : detail::num_threads_slot();
}

inline void set_num_threads(int n) {
  DL_CHECK(n >= 1, "set_num_threads: expected a positive number of threads, got ", n);
  detail::num_threads_slot() = n;
}

inline void set_num_threads_in_this_thread(int n) {
  DL_CHECK(n >= 0, "set_num_threads_in_this_thread: expected a non-negative number of threads, got ", n);
  detail::thread_num_threads_slot() = n;
}

}  // namespace dl
