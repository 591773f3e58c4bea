// dl/parallel.hpp — CPU thread count (dl::set_num_threads) and the parallel_for every kernel uses.
// OpenMP when the translation unit is compiled with it, serial otherwise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

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

inline bool in_parallel_region() {
#if defined(_OPENMP)
  return omp_in_parallel();
#else
  return false;
#endif
}

/// One chunk of a parallel_for: calls the caller's function object. Not inlined, so that the
/// loop body a kernel passes is compiled once, here, and both the serial path and the threads
/// call it (inlined into each, every elementwise kernel was compiled twice).
template <class Fn>
[[gnu::noinline]] void run_chunk(void* f, int64_t b, int64_t e) {
  (*static_cast<Fn*>(f))(b, e);
}

/// Runs chunk(f, b, e) on `nt` threads over disjoint chunks covering [begin, end): one OpenMP
/// region for every caller. The first exception thrown by any chunk is rethrown.
inline void run_chunks(int64_t begin, int64_t end, int nt, void (*chunk)(void*, int64_t, int64_t), void* f) {
#if defined(_OPENMP)
  const int64_t n = end - begin;
  std::exception_ptr error;
  std::once_flag once;
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), count = omp_get_num_threads();
    const int64_t size = (n + count - 1) / count;
    const int64_t b = begin + t * size, e = std::min(end, b + size);
    if (b < e) {
      try {
        chunk(f, b, e);
      } catch (...) {
        std::call_once(once, [&] { error = std::current_exception(); });
      }
    }
  }
  if (error) std::rethrow_exception(error);
#else
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
  if (nt <= 1 || in_parallel_region()) run_chunk<Fn>(ctx, begin, end);
  else run_chunks(begin, end, nt, &run_chunk<Fn>, ctx);
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
