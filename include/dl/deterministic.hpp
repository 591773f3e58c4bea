// dl/deterministic.hpp — dl::use_deterministic_algorithms (torch.use_deterministic_algorithms):
// ops whose only implementation may give different results from run to run raise (or warn) while
// the flag is on.
//
// Every CPU op in dl is deterministic: kernels split work by index ranges (dl::detail::parallel_for)
// and each output element is written by one thread; reductions combine fixed-size blocks in a fixed
// order, so their results do not even depend on the thread count; index_add, scatter_add,
// index_put(accumulate) and the embedding gradient add serially or in per-row ownership. (The
// weight gradient of conv2d splits the batch among the threads, so it is reproducible for a given
// dl::set_num_threads but may differ in the last bits between thread counts, as PyTorch's does.)
// GPU kernels that accumulate with atomics (index_add, scatter_add, embedding backward on CUDA)
// consult the flag through detail::alert_not_deterministic.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>
#include <string_view>

#include "error.hpp"

namespace dl {

namespace detail {
inline std::atomic<bool> g_deterministic{false};
inline std::atomic<bool> g_deterministic_warn_only{false};
}  // namespace detail

/// Makes ops without a deterministic implementation raise (with warn_only, print a warning)
/// instead of running. Process-wide.
inline void use_deterministic_algorithms(bool mode, bool warn_only = false) {
  detail::g_deterministic_warn_only.store(warn_only, std::memory_order_relaxed);
  detail::g_deterministic.store(mode, std::memory_order_relaxed);
}
inline bool are_deterministic_algorithms_enabled() { return detail::g_deterministic.load(std::memory_order_relaxed); }
inline bool is_deterministic_algorithms_warn_only_enabled() {
  return detail::g_deterministic_warn_only.load(std::memory_order_relaxed);
}

namespace detail {
/// Called by an op (named as PyTorch names it, e.g. "index_add_cuda_") before it runs an
/// implementation that is not deterministic: raises PyTorch's error while the flag is on.
inline void alert_not_deterministic(std::string_view caller) {
  if (!are_deterministic_algorithms_enabled()) [[likely]]
    return;
  const std::string message = cat(
      caller,
      " does not have a deterministic implementation, but you set 'dl::use_deterministic_algorithms(true)'. You can "
      "turn off determinism just for this operation, or you can use the 'warn_only=true' option, if that's "
      "acceptable for your application.");
  if (is_deterministic_algorithms_warn_only_enabled()) std::fprintf(stderr, "Warning: %s\n", message.c_str());
  else throw Error(message);
}
}  // namespace detail

}  // namespace dl
