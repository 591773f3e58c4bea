// dl/distributed/process_group.hpp — what every backend shares: ReduceOp, Work (the handle of an
// operation that may still be running), ProcessGroup (the interface the MPI and NCCL groups
// implement) and the default group that get_rank() and friends read. No MPI or NCCL header here:
// dl/data/sampler.hpp reads the default group through this header, and dl/distributed/mpi.hpp holds
// the MPI engine.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../any_tensor.hpp"
#include "../error.hpp"

namespace dl::distributed {

/// torch.distributed.ReduceOp. AVG is SUM divided by the group's size (floating tensors only).
enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };

inline const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::PRODUCT: return "PRODUCT";
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
  }
  return "?";
}

namespace detail {
/// Shared between a Work handle and the group's communication thread.
struct WorkState {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  int source = -1;  // the sender of a recv (its global rank)
  std::string name;
  std::atomic<bool> ready{false};  // done, readable without the mutex (a waiter spins on it briefly)

  void finish(std::exception_ptr e = nullptr, int src = -1) {
    {
      std::lock_guard lock(mutex);
      if (done) return;
      done = true;
      error = std::move(e);
      if (src >= 0) source = src;
      ready.store(true, std::memory_order_release);
    }
    cv.notify_all();
  }
};
}  // namespace detail

/// The handle of a (possibly asynchronous) operation: torch.distributed's Work. Every collective
/// returns one; with async_op = false it is already complete. wait() re-raises the operation's
/// error (a timeout names the ranks that did not take part) each time it is called.
class Work {
 public:
  Work() = default;  // a completed operation
  explicit Work(std::shared_ptr<detail::WorkState> s) : state_(std::move(s)) {}

  /// Blocks until the operation completed; throws its dl::Error if it failed.
  void wait() const {
    if (!state_) return;
    // Most operations complete within microseconds of being issued: look before sleeping.
    for (int i = 0; i < 1000 && !state_->ready.load(std::memory_order_acquire); ++i) std::this_thread::yield();
    std::unique_lock lock(state_->mutex);
    state_->cv.wait(lock, [&] { return state_->done; });
    if (state_->error) std::rethrow_exception(state_->error);
  }
  /// Waits at most `timeout`: true when the operation completed (its error is re-raised), false
  /// when it is still running.
  bool wait(std::chrono::milliseconds timeout) const {
    if (!state_) return true;
    std::unique_lock lock(state_->mutex);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->done; })) return false;
    if (state_->error) std::rethrow_exception(state_->error);
    return true;
  }
  bool is_completed() const {
    if (!state_) return true;
    std::lock_guard lock(state_->mutex);
    return state_->done;
  }
  /// Completed without an error.
  bool is_success() const {
    if (!state_) return true;
    std::lock_guard lock(state_->mutex);
    return state_->done && !state_->error;
  }
  /// The error of a failed operation (null while running or after success).
  std::exception_ptr exception() const {
    if (!state_) return nullptr;
    std::lock_guard lock(state_->mutex);
    return state_->error;
  }
  /// The global rank a recv received from (after wait(); useful with src = any).
  int source_rank() const {
    wait();
    return state_ ? state_->source : -1;
  }

 private:
  std::shared_ptr<detail::WorkState> state_;
};

/// Called on the communication thread after an operation succeeded (copies results out of staging
/// buffers, divides an AVG).
using Finish = std::function<void()>;

/// A set of processes that run collectives together (torch.distributed.ProcessGroup). Tensors
/// given to its methods are contiguous CPU tensors (MPI) or CUDA tensors (NCCL) that stay alive
/// and untouched until the Work completes; the free functions in dl/distributed/collectives.hpp
/// check arguments, stage non-contiguous tensors and call these. Roots and peers are ranks
/// within the group; ranks() maps them to global ranks.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  virtual std::string backend() const = 0;
  /// This process's rank in the group (-1 when it is not a member).
  int rank() const { return rank_; }
  int size() const { return int(ranks_.size()); }
  bool is_member() const { return rank_ >= 0; }
  /// The global rank of each member, in group-rank order.
  const std::vector<int>& ranks() const { return ranks_; }
  /// The group rank of a global rank (-1 when it is not a member).
  int group_rank(int global_rank) const {
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (ranks_[i] == global_rank) return int(i);
    return -1;
  }
  std::chrono::milliseconds timeout() const { return timeout_; }
  /// "[0, 1, 2]": the members, for error messages.
  std::string describe() const {
    std::string s = "[";
    for (size_t i = 0; i < ranks_.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks_[i]);
    return s + "]";
  }

  virtual Work all_reduce(const AnyTensor& t, ReduceOp op, Finish f = {}) = 0;
  virtual Work broadcast(const AnyTensor& t, int root, Finish f = {}) = 0;
  virtual Work reduce(const AnyTensor& t, int root, ReduceOp op, Finish f = {}) = 0;
  /// out holds size() blocks of in's numel, block r from rank r.
  virtual Work all_gather(const AnyTensor& out, const AnyTensor& in, Finish f = {}) = 0;
  /// As all_gather, into out on root only (out is ignored elsewhere).
  virtual Work gather(const AnyTensor& out, const AnyTensor& in, int root, Finish f = {}) = 0;
  /// Block r of in (on root) goes to rank r's out.
  virtual Work scatter(const AnyTensor& out, const AnyTensor& in, int root, Finish f = {}) = 0;
  /// in holds size() blocks of out's numel; rank r's out = op over ranks of block r.
  virtual Work reduce_scatter(const AnyTensor& out, const AnyTensor& in, ReduceOp op, Finish f = {}) = 0;
  /// Block j of in goes to rank j; out's block j comes from rank j. Counts in elements per rank.
  virtual Work all_to_all(const AnyTensor& out, const AnyTensor& in, const std::vector<int64_t>& out_counts,
                          const std::vector<int64_t>& in_counts, Finish f = {}) = 0;
  virtual Work barrier() = 0;
  virtual Work send(const AnyTensor& t, int dst, int tag) = 0;
  /// src = -1: from any rank (Work::source_rank() says which).
  virtual Work recv(const AnyTensor& t, int src, int tag, Finish f = {}) = 0;
  /// A group of some of this group's members (global ranks, sorted), made collectively: every
  /// member calls it with the same ranks; non-members get a group with rank() == -1.
  virtual std::shared_ptr<ProcessGroup> new_subgroup(const std::vector<int>& global_ranks,
                                                     std::chrono::milliseconds timeout) = 0;

 protected:
  ProcessGroup(std::vector<int> ranks, int rank, std::chrono::milliseconds timeout)
      : ranks_(std::move(ranks)), rank_(rank), timeout_(timeout) {}

  std::vector<int> ranks_;
  int rank_ = -1;
  std::chrono::milliseconds timeout_;
};

/// A group handle; an empty one means the default group.
using Group = std::shared_ptr<ProcessGroup>;

namespace detail {
/// The default (world) group and how to shut its backend down.
struct DefaultGroup {
  Group group;
  std::function<void()> shutdown;  // frees the groups' resources and finalises the backend
};
inline DefaultGroup& default_group_slot() {
  static DefaultGroup slot;
  return slot;
}
}  // namespace detail

/// torch.distributed.is_initialized: init_process_group was called (and not destroyed).
inline bool is_initialized() { return bool(detail::default_group_slot().group); }

/// The default group; throws when init_process_group has not been called.
inline ProcessGroup& default_group() {
  const Group& g = detail::default_group_slot().group;
  DL_CHECK(g, "dl::distributed: the default process group is not initialized; call "
              "dl::distributed::init_process_group({.backend = \"mpi\"}) first (and start the program with mpirun)");
  return *g;
}

/// This process's rank in `group` (the default group when empty); -1 when it is not a member.
inline int get_rank(const Group& group = {}) { return group ? group->rank() : default_group().rank(); }
/// The number of processes in `group` (the default group when empty).
inline int get_world_size(const Group& group = {}) { return group ? group->size() : default_group().size(); }

}  // namespace dl::distributed

namespace dl {
namespace dist = distributed;  // the short name PyTorch code uses (torch.distributed as dist)
}
