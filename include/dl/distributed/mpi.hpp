// dl/distributed/mpi.hpp — the MPI process group (OpenMPI, or any MPI-3 library): CPU tensors, and
// the start-up of every run (mpirun starts the processes; NCCL's unique id travels over MPI).
//
// Each group owns a communication thread that runs the group's operations in the order they were
// issued, so an asynchronous all_reduce overlaps with the caller's computation (DDP's buckets
// during backward). Collectives are MPI's blocking calls (its tuned algorithms: the non-blocking
// MPI_Iallreduce of OpenMPI's libnbc is about 2x slower on large buffers); sends and receives are
// posted and completed by polling, so neither waits for the other. A watchdog thread per group
// answers the other ranks' questions on a second communicator and, when a collective outlives the
// group's timeout, asks every rank which collective it is in and fails the operation's Work with an
// error naming the ranks that never arrived. MPI runs with MPI_THREAD_MULTIPLE.
//
// Header-only always (no compiled-mode split): a program that includes dl/distributed.hpp links MPI
// (Meson: dependency('mpi', language: 'cpp'); by hand: mpicxx, or `pkg-config --cflags --libs ompi-cxx`).
#pragma once

// dl uses MPI's C interface only: skip the deprecated C++ bindings (parse time, and -Wextra
// warnings inside OpenMPI's own headers).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <optional>
#include <thread>

#include "../half.hpp"
#include "process_group.hpp"

namespace dl::distributed {

namespace detail {

/// Serialises dl's initialisation and finalisation of MPI.
inline std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

inline void mpi_check(int rc, const char* call, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(dl::detail::cat("dl::distributed (mpi): ", call, " failed in ", what, ": ", std::string(msg, size_t(len))));
}

/// Reductions of 16-bit floats, which MPI has no type for: each element widened to float.
template <class H, ReduceOp Op>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = float(a[i]), y = float(b[i]);
    float r = 0;
    if constexpr (Op == ReduceOp::SUM || Op == ReduceOp::AVG) r = x + y;
    else if constexpr (Op == ReduceOp::PRODUCT) r = x * y;
    else if constexpr (Op == ReduceOp::MIN) r = y < x ? y : x;
    else r = y > x ? y : x;
    b[i] = H(r);
  }
}

struct MpiOps {
  MPI_Op half[5] = {}, bf16[5] = {};
};
/// Created at initialisation (under the MPI mutex), freed by MPI_Finalize.
inline MpiOps& mpi_ops() {
  static MpiOps ops;
  return ops;
}
inline void create_mpi_ops() {
  auto& o = mpi_ops();
  MPI_Op_create(&half_reduce<Half, ReduceOp::SUM>, 1, &o.half[0]);
  MPI_Op_create(&half_reduce<Half, ReduceOp::AVG>, 1, &o.half[1]);
  MPI_Op_create(&half_reduce<Half, ReduceOp::PRODUCT>, 1, &o.half[2]);
  MPI_Op_create(&half_reduce<Half, ReduceOp::MIN>, 1, &o.half[3]);
  MPI_Op_create(&half_reduce<Half, ReduceOp::MAX>, 1, &o.half[4]);
  MPI_Op_create(&half_reduce<BFloat16, ReduceOp::SUM>, 1, &o.bf16[0]);
  MPI_Op_create(&half_reduce<BFloat16, ReduceOp::AVG>, 1, &o.bf16[1]);
  MPI_Op_create(&half_reduce<BFloat16, ReduceOp::PRODUCT>, 1, &o.bf16[2]);
  MPI_Op_create(&half_reduce<BFloat16, ReduceOp::MIN>, 1, &o.bf16[3]);
  MPI_Op_create(&half_reduce<BFloat16, ReduceOp::MAX>, 1, &o.bf16[4]);
}

inline MPI_Datatype mpi_type(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return MPI_C_BOOL;
    case ScalarType::UInt8: return MPI_UINT8_T;
    case ScalarType::Int32: return MPI_INT32_T;
    case ScalarType::Int64: return MPI_INT64_T;
    case ScalarType::Float: return MPI_FLOAT;
    case ScalarType::Double: return MPI_DOUBLE;
    case ScalarType::Half:
    case ScalarType::BFloat16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

inline MPI_Op mpi_op(ReduceOp op, ScalarType t) {
  const int i = int(op);
  if (t == ScalarType::Half) return mpi_ops().half[i];
  if (t == ScalarType::BFloat16) return mpi_ops().bf16[i];
  if (t == ScalarType::Bool) {  // PyTorch: SUM and MAX of bools are "or", PRODUCT and MIN "and"
    DL_CHECK(op != ReduceOp::AVG, "dl::distributed: ReduceOp::AVG of a bool tensor; use SUM (logical or) or MIN (and)");
    return op == ReduceOp::SUM || op == ReduceOp::MAX ? MPI_LOR : MPI_LAND;
  }
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return MPI_SUM;
    case ReduceOp::PRODUCT: return MPI_PROD;
    case ReduceOp::MIN: return MPI_MIN;
    case ReduceOp::MAX: return MPI_MAX;
  }
  return MPI_SUM;
}

/// t *= 1 / n for the floating dtypes (AVG); t is contiguous.
inline void scale_by(const TensorImpl& t, double s) {
  const int64_t n = numel(t.shape);
  void* p = t.data();
  switch (t.dtype) {
    case ScalarType::Float: for (int64_t i = 0; i < n; ++i) static_cast<float*>(p)[i] *= float(s); break;
    case ScalarType::Double: for (int64_t i = 0; i < n; ++i) static_cast<double*>(p)[i] *= s; break;
    case ScalarType::Half:
      for (int64_t i = 0; i < n; ++i) static_cast<Half*>(p)[i] = Half(float(static_cast<Half*>(p)[i]) * float(s));
      break;
    case ScalarType::BFloat16:
      for (int64_t i = 0; i < n; ++i)
        static_cast<BFloat16*>(p)[i] = BFloat16(float(static_cast<BFloat16*>(p)[i]) * float(s));
      break;
    default:
      throw Error(dl::detail::cat("dl::distributed: ReduceOp::AVG needs a floating tensor, got ", dtype_name(t.dtype),
                      "; use ReduceOp::SUM and divide"));
  }
}

inline int to_int_count(int64_t n, const char* what) {
  DL_CHECK(n <= int64_t(INT32_MAX), "dl::distributed (mpi): ", what, " of ", n, " elements is more than MPI's int count allows; split it");
  return int(n);
}

/// Thrown inside the communication thread's tasks (never reaches users): a send/recv was posted
/// and completes later; a collective's Work was already failed by the timeout.
struct Posted {};
struct AlreadyReported {};
/// Set when a group had to abandon a blocked operation: MPI_Finalize would wait for it forever.
inline bool& mpi_unclean() {
  static bool unclean = false;
  return unclean;
}

// Control messages on a group's second communicator.
constexpr int kTagQuery = 101, kTagReply = 102;
struct ControlQuery {
  int64_t id;
};
struct ControlReply {
  int64_t id;
  int64_t seq;      // collectives this rank has started on the group
  int64_t numel;    // elements of the collective it is in (or last started)
  int32_t waiting;  // 1 while it waits in collective #seq
  char op[44];
};

}  // namespace detail

/// The MPI process group. Made by init_process_group({.backend = "mpi"}) and new_group().
class ProcessGroupMPI final : public ProcessGroup {
 public:
  /// Takes ownership of comm (freed in the destructor). global_ranks: the members' global ranks.
  ProcessGroupMPI(MPI_Comm comm, std::vector<int> global_ranks, std::chrono::milliseconds timeout)
      : ProcessGroup(std::move(global_ranks), -1, timeout), comm_(comm) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_dup(comm_, &ctl_);
    MPI_Comm_set_errhandler(ctl_, MPI_ERRORS_RETURN);
    thread_ = std::thread([this, abandoned = abandoned_] { loop(abandoned); });
    watchdog_ = std::thread([this] { watch(); });
  }

  /// Finishes the queued operations. An operation that timed out and still waits for a rank that
  /// never comes is abandoned after a few seconds (its thread is left blocked in MPI, and the
  /// group's communicators are not freed), so that a failed run can still end.
  ~ProcessGroupMPI() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    std::optional<std::chrono::steady_clock::time_point> timed_out_since;
    while (!loop_done_.load()) {
      if (timed_out_.load() && !timed_out_since) timed_out_since = std::chrono::steady_clock::now();
      if (timed_out_since && std::chrono::steady_clock::now() - *timed_out_since > std::chrono::seconds(3)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const bool stuck = !loop_done_.load();
    if (stuck) {
      abandoned_->store(true);
      thread_.detach();
    } else {
      thread_.join();
    }
    watch_stop_.store(true);
    watchdog_.join();
    if (stuck) {
      detail::mpi_unclean() = true;  // MPI_Finalize would wait for the blocked operation
    } else {
      MPI_Comm_free(&ctl_);
      MPI_Comm_free(&comm_);
    }
  }

  std::string backend() const override { return "mpi"; }

  Work all_reduce(const AnyTensor& t, ReduceOp op, Finish f) override {
    const int64_t n = t.numel();
    auto impl = t.impl();
    return collective("all_reduce", n, {impl}, [=](MPI_Comm comm) {
      return MPI_Allreduce(MPI_IN_PLACE, impl->data(), detail::to_int_count(n, "all_reduce"), detail::mpi_type(impl->dtype),
                           detail::mpi_op(op, impl->dtype), comm);
    }, avg_then(op, impl, std::move(f)));
  }

  Work broadcast(const AnyTensor& t, int root, Finish f) override {
    const int64_t n = t.numel();
    auto impl = t.impl();
    return collective("broadcast", n, {impl}, [=](MPI_Comm comm) {
      return MPI_Bcast(impl->data(), detail::to_int_count(n, "broadcast"), detail::mpi_type(impl->dtype), root, comm);
    }, std::move(f));
  }

  Work reduce(const AnyTensor& t, int root, ReduceOp op, Finish f) override {
    const int64_t n = t.numel();
    auto impl = t.impl();
    const bool at_root = rank_ == root;
    return collective("reduce", n, {impl}, [=](MPI_Comm comm) {
      return MPI_Reduce(at_root ? MPI_IN_PLACE : impl->data(), at_root ? impl->data() : nullptr,
                        detail::to_int_count(n, "reduce"), detail::mpi_type(impl->dtype), detail::mpi_op(op, impl->dtype), root,
                        comm);
    }, at_root ? avg_then(op, impl, std::move(f)) : std::move(f));
  }

  Work all_gather(const AnyTensor& out, const AnyTensor& in, Finish f) override {
    const int64_t n = in.numel();
    auto o = out.impl(), i = in.impl();
    return collective("all_gather", n, {o, i}, [=](MPI_Comm comm) {
      const int c = detail::to_int_count(n, "all_gather");
      return MPI_Allgather(i->data(), c, detail::mpi_type(i->dtype), o->data(), c, detail::mpi_type(o->dtype), comm);
    }, std::move(f));
  }

  Work gather(const AnyTensor& out, const AnyTensor& in, int root, Finish f) override {
    const int64_t n = in.numel();
    auto o = out.impl(), i = in.impl();
    const bool at_root = rank_ == root;
    return collective("gather", n, {o, i}, [=](MPI_Comm comm) {
      const int c = detail::to_int_count(n, "gather");
      return MPI_Gather(i->data(), c, detail::mpi_type(i->dtype), at_root ? o->data() : nullptr, c, detail::mpi_type(i->dtype),
                        root, comm);
    }, std::move(f));
  }

  Work scatter(const AnyTensor& out, const AnyTensor& in, int root, Finish f) override {
    const int64_t n = out.numel();
    auto o = out.impl(), i = in.impl();
    const bool at_root = rank_ == root;
    return collective("scatter", n, {o, i}, [=](MPI_Comm comm) {
      const int c = detail::to_int_count(n, "scatter");
      return MPI_Scatter(at_root ? i->data() : nullptr, c, detail::mpi_type(o->dtype), o->data(), c, detail::mpi_type(o->dtype),
                         root, comm);
    }, std::move(f));
  }

  Work reduce_scatter(const AnyTensor& out, const AnyTensor& in, ReduceOp op, Finish f) override {
    const int64_t n = out.numel();
    auto o = out.impl(), i = in.impl();
    return collective("reduce_scatter", n, {o, i}, [=](MPI_Comm comm) {
      return MPI_Reduce_scatter_block(i->data(), o->data(), detail::to_int_count(n, "reduce_scatter"), detail::mpi_type(o->dtype),
                                      detail::mpi_op(op, o->dtype), comm);
    }, avg_then(op, o, std::move(f)));
  }

  Work all_to_all(const AnyTensor& out, const AnyTensor& in, const std::vector<int64_t>& out_counts,
                  const std::vector<int64_t>& in_counts, Finish f) override {
    auto o = out.impl(), i = in.impl();
    auto counts = std::make_shared<std::vector<int>>(4 * size_t(size()));  // send counts, send displs, recv counts, recv displs
    const size_t p = size_t(size());
    int64_t sd = 0, rd = 0;
    for (size_t r = 0; r < p; ++r) {
      (*counts)[r] = detail::to_int_count(in_counts[r], "all_to_all");
      (*counts)[p + r] = detail::to_int_count(sd, "all_to_all");
      (*counts)[2 * p + r] = detail::to_int_count(out_counts[r], "all_to_all");
      (*counts)[3 * p + r] = detail::to_int_count(rd, "all_to_all");
      sd += in_counts[r];
      rd += out_counts[r];
    }
    return collective("all_to_all", in.numel(), {o, i}, [=](MPI_Comm comm) {
      const int* c = counts->data();
      return MPI_Alltoallv(i->data(), c, c + p, detail::mpi_type(i->dtype), o->data(), c + 2 * p, c + 3 * p,
                           detail::mpi_type(o->dtype), comm);
    }, [counts, f = std::move(f)] { if (f) f(); });
  }

  Work barrier() override {
    return collective("barrier", 0, {}, [](MPI_Comm comm) { return MPI_Barrier(comm); }, {});
  }

  Work send(const AnyTensor& t, int dst, int tag) override {
    auto impl = t.impl();
    const int64_t n = t.numel();
    return point_to_point(dl::detail::cat("send to rank ", ranks_[size_t(dst)], " (tag ", tag, ")"), {impl}, [=](MPI_Comm comm, MPI_Request* r) {
      return MPI_Isend(impl->data(), detail::to_int_count(n, "send"), detail::mpi_type(impl->dtype), dst, tag, comm, r);
    }, {});
  }

  Work recv(const AnyTensor& t, int src, int tag, Finish f) override {
    auto impl = t.impl();
    const int64_t n = t.numel();
    const std::string from = src < 0 ? std::string("any rank") : dl::detail::cat("rank ", ranks_[size_t(src)]);
    return point_to_point(dl::detail::cat("recv from ", from, " (tag ", tag, ")"), {impl}, [=](MPI_Comm comm, MPI_Request* r) {
      return MPI_Irecv(impl->data(), detail::to_int_count(n, "recv"), detail::mpi_type(impl->dtype), src < 0 ? MPI_ANY_SOURCE : src,
                       tag, comm, r);
    }, std::move(f));
  }

  std::shared_ptr<ProcessGroup> new_subgroup(const std::vector<int>& global_ranks, std::chrono::milliseconds timeout) override {
    // MPI_Comm_split is collective over this group: it runs on the communication thread after the
    // operations already queued, as every other collective does.
    std::vector<int> members;  // the members' ranks in this group, in the order of global_ranks
    for (int g : global_ranks) members.push_back(group_rank(g));
    const int my_index = int(std::find(members.begin(), members.end(), rank_) - members.begin());
    const bool member = my_index < int(members.size());
    auto result = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
    collective("new_group", 0, {}, [=](MPI_Comm comm) { return MPI_Comm_split(comm, member ? 0 : MPI_UNDEFINED, my_index, result.get()); },
               {}).wait();
    if (!member) return std::shared_ptr<ProcessGroup>(new NonMember(global_ranks, timeout));
    return std::make_shared<ProcessGroupMPI>(*result, global_ranks, timeout);
  }

  /// Collectives this rank has started on the group (the number in timeout errors).
  int64_t sequence_number() const { return seq_.load(); }

 private:
  /// What a non-member of a subgroup holds: every operation is an error.
  class NonMember final : public ProcessGroup {
   public:
    NonMember(std::vector<int> ranks, std::chrono::milliseconds timeout) : ProcessGroup(std::move(ranks), -1, timeout) {}
    std::string backend() const override { return "mpi"; }
    [[noreturn]] void fail() const {
      int me = -1;
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      throw Error(dl::detail::cat("dl::distributed: rank ", me, " is not a member of the group ", describe(),
                      "; only its members may call its operations"));
    }
    Work all_reduce(const AnyTensor&, ReduceOp, Finish) override { fail(); }
    Work broadcast(const AnyTensor&, int, Finish) override { fail(); }
    Work reduce(const AnyTensor&, int, ReduceOp, Finish) override { fail(); }
    Work all_gather(const AnyTensor&, const AnyTensor&, Finish) override { fail(); }
    Work gather(const AnyTensor&, const AnyTensor&, int, Finish) override { fail(); }
    Work scatter(const AnyTensor&, const AnyTensor&, int, Finish) override { fail(); }
    Work reduce_scatter(const AnyTensor&, const AnyTensor&, ReduceOp, Finish) override { fail(); }
    Work all_to_all(const AnyTensor&, const AnyTensor&, const std::vector<int64_t>&, const std::vector<int64_t>&, Finish) override {
      fail();
    }
    Work barrier() override { fail(); }
    Work send(const AnyTensor&, int, int) override { fail(); }
    Work recv(const AnyTensor&, int, int, Finish) override { fail(); }
    std::shared_ptr<ProcessGroup> new_subgroup(const std::vector<int>&, std::chrono::milliseconds) override { fail(); }
  };

  using Blocking = std::function<int(MPI_Comm)>;
  using Post = std::function<int(MPI_Comm, MPI_Request*)>;
  struct Task {
    std::string name;
    std::function<void()> run;  // on the communication thread
    std::shared_ptr<detail::WorkState> work;
  };
  /// A posted point-to-point request, completed by the communication thread's polling.
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<TensorImplPtr> keep;
    std::shared_ptr<detail::WorkState> work;
    Finish finish;
    std::string name;
    std::chrono::steady_clock::time_point posted;
    bool reported = false;
  };
  /// The collective the communication thread is in (for the watchdog and other ranks' questions).
  struct Current {
    int64_t seq = 0, numel = 0;
    std::string op;
    bool waiting = false;
    std::chrono::steady_clock::time_point since;
    std::shared_ptr<detail::WorkState> work;
    bool reported = false;
  };

  Finish avg_then(ReduceOp op, const TensorImplPtr& t, Finish f) const {
    if (op != ReduceOp::AVG) return f;
    if (t->dtype != ScalarType::Float && t->dtype != ScalarType::Double && t->dtype != ScalarType::Half &&
        t->dtype != ScalarType::BFloat16)
      throw Error(dl::detail::cat("dl::distributed: ReduceOp::AVG needs a floating tensor, got ", dtype_name(t->dtype),
                                  "; use ReduceOp::SUM and divide"));
    const double s = 1.0 / size();
    return [t, s, f = std::move(f)] {
      detail::scale_by(*t, s);
      if (f) f();
    };
  }

  /// A collective: MPI's blocking call (its tuned algorithms) on the communication thread; the
  /// watchdog fails the Work when it outlives the timeout.
  Work collective(std::string name, int64_t numel, std::vector<TensorImplPtr> keep, Blocking call, Finish f) {
    auto state = std::make_shared<detail::WorkState>();
    state->name = name;
    push({name, [=, this, keep = std::move(keep)] {
            const MPI_Comm comm = comm_;
            std::shared_ptr<std::atomic<bool>> abandoned = abandoned_;
            {
              std::lock_guard lock(status_mutex_);
              current_ = {seq_.fetch_add(1) + 1, numel, name, true, std::chrono::steady_clock::now(), state, false};
            }
            const int rc = call(comm);
            if (abandoned->load()) return;  // the group is gone: touch nothing of it
            bool reported = false;
            {
              std::lock_guard lock(status_mutex_);
              current_.waiting = false;
              current_.work = nullptr;
              reported = current_.reported;
            }
            if (reported) throw detail::AlreadyReported{};  // the watchdog failed the Work already
            detail::mpi_check(rc, "MPI", name);
            if (f) f();
            (void)keep;
          }, state});
    return Work(state);
  }

  /// Send or receive: posted in order on the communication thread, completed when MPI says so
  /// (a send and a receive between the same ranks never wait for each other).
  Work point_to_point(std::string name, std::vector<TensorImplPtr> keep, Post post, Finish f) {
    auto state = std::make_shared<detail::WorkState>();
    state->name = name;
    push({name, [=, this, keep = std::move(keep)]() mutable {
            Pending p{MPI_REQUEST_NULL, std::move(keep), state, std::move(f), name, std::chrono::steady_clock::now()};
            detail::mpi_check(post(comm_, &p.request), "MPI", name);
            pending_.push_back(std::move(p));
            throw detail::Posted{};  // completed later by poll_pending
          }, state});
    return Work(state);
  }

  void push(Task t) {
    {
      std::lock_guard lock(mutex_);
      DL_CHECK(!stop_, "dl::distributed: ", t.name, " on a destroyed process group");
      queue_.push_back(std::move(t));
    }
    cv_.notify_one();
  }

  void loop(std::shared_ptr<std::atomic<bool>> abandoned) {
    for (;;) {
      Task t;
      {
        std::unique_lock lock(mutex_);
        // Right after an operation another one often follows (DDP's buckets, a loop of collectives):
        // look for it without sleeping for a moment before waiting on the condition variable.
        for (int i = 0; i < 200 && queue_.empty() && !stop_; ++i) {
          lock.unlock();
          if (!pending_.empty()) poll_pending();
          std::this_thread::yield();
          lock.lock();
        }
        while (queue_.empty() && !(stop_ && pending_.empty())) {
          if (pending_.empty()) {
            cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
          } else {
            lock.unlock();
            poll_pending();
            std::this_thread::yield();
            lock.lock();
          }
        }
        if (queue_.empty()) break;  // stopped, and nothing pending
        t = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        t.run();
        if (abandoned->load()) return;
        t.work->finish();
      } catch (const detail::Posted&) {
      } catch (const detail::AlreadyReported&) {
      } catch (...) {
        if (abandoned->load()) return;
        t.work->finish(std::current_exception());
      }
      if (!pending_.empty()) poll_pending();
    }
    loop_done_.store(true);
  }

  void poll_pending() {
    for (size_t i = 0; i < pending_.size();) {
      Pending& p = pending_[i];
      int done = 0;
      MPI_Status st;
      const int rc = MPI_Test(&p.request, &done, &st);
      if (rc != MPI_SUCCESS || done) {
        try {
          detail::mpi_check(rc, "MPI_Test", p.name);
          if (!p.reported) {
            if (p.finish) p.finish();
            p.work->finish(nullptr, st.MPI_SOURCE >= 0 && st.MPI_SOURCE < size() ? ranks_[size_t(st.MPI_SOURCE)] : -1);
          }
        } catch (...) {
          if (!p.reported) p.work->finish(std::current_exception());
        }
        pending_.erase(pending_.begin() + long(i));
        continue;
      }
      if (!p.reported && std::chrono::steady_clock::now() - p.posted > timeout_) {
        p.reported = true;  // the request stays posted (a late peer still completes it)
        p.work->finish(std::make_exception_ptr(Error(dl::detail::cat(
            "dl::distributed: ", p.name, " on the group of ranks ", describe(), " (backend mpi) did not complete within ", timeout_.count(),
            " ms: the peer did not post the matching operation"))));
      }
      ++i;
    }
  }

  /// Answers the other ranks' questions and fails a collective that outlived the timeout.
  void watch() {
    while (!watch_stop_.load()) {
      try {
        service_control();
        std::shared_ptr<detail::WorkState> overdue;
        std::string name;
        {
          std::lock_guard lock(status_mutex_);
          if (current_.waiting && !current_.reported && std::chrono::steady_clock::now() - current_.since > timeout_) {
            current_.reported = true;
            overdue = current_.work;
            name = current_.op;
          }
        }
        if (overdue) {
          timed_out_.store(true);
          overdue->finish(std::make_exception_ptr(Error(timeout_message(name))));
        }
      } catch (...) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  void service_control() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      detail::ControlQuery q{};
      MPI_Iprobe(MPI_ANY_SOURCE, detail::kTagQuery, ctl_, &flag, &st);
      if (!flag) return;
      MPI_Recv(&q, sizeof q, MPI_BYTE, st.MPI_SOURCE, detail::kTagQuery, ctl_, MPI_STATUS_IGNORE);
      detail::ControlReply r{};
      {
        std::lock_guard lock(status_mutex_);
        r.id = q.id;
        r.seq = current_.seq;
        r.numel = current_.numel;
        r.waiting = current_.waiting ? 1 : 0;
        std::strncpy(r.op, current_.op.c_str(), sizeof r.op - 1);
      }
      MPI_Send(&r, sizeof r, MPI_BYTE, st.MPI_SOURCE, detail::kTagReply, ctl_);
    }
  }

  /// Asks every other rank where it is and says which ranks are missing from collective `name`.
  std::string timeout_message(const std::string& name) {
    int64_t my_seq = 0, my_numel = 0;
    {
      std::lock_guard lock(status_mutex_);
      my_seq = current_.seq;
      my_numel = current_.numel;
    }
    std::string head = dl::detail::cat("dl::distributed: ", name, " (collective #", my_seq, ") on the group of ranks ", describe(),
                                       " (backend mpi) did not complete within ", timeout_.count(), " ms");
    const int64_t id = ++query_id_;
    std::vector<MPI_Request> sends;
    detail::ControlQuery q{id};
    for (int r = 0; r < size(); ++r) {
      if (r == rank_) continue;
      sends.emplace_back();
      MPI_Isend(&q, sizeof q, MPI_BYTE, r, detail::kTagQuery, ctl_, &sends.back());
    }
    std::vector<std::optional<detail::ControlReply>> replies(static_cast<size_t>(size()));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    int missing_replies = size() - 1;
    while (missing_replies > 0 && std::chrono::steady_clock::now() < deadline) {
      service_control();  // they may be asking us at the same time
      int flag = 0;
      MPI_Status st;
      detail::ControlReply r{};
      MPI_Iprobe(MPI_ANY_SOURCE, detail::kTagReply, ctl_, &flag, &st);
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      MPI_Recv(&r, sizeof r, MPI_BYTE, st.MPI_SOURCE, detail::kTagReply, ctl_, MPI_STATUS_IGNORE);
      if (r.id != id || replies[size_t(st.MPI_SOURCE)]) continue;  // a late answer to an earlier question
      replies[size_t(st.MPI_SOURCE)] = r;
      --missing_replies;
    }
    for (auto& s : sends) {  // questions nobody received are cancelled
      int done = 0;
      MPI_Test(&s, &done, MPI_STATUS_IGNORE);
      if (!done) {
        MPI_Cancel(&s);
        MPI_Request_free(&s);
      }
    }
    std::vector<std::string> absent;
    std::vector<int> waiting_ranks;
    for (int r = 0; r < size(); ++r) {
      const int g = ranks_[size_t(r)];
      if (r == rank_) {
        waiting_ranks.push_back(g);
        continue;
      }
      const auto& rep = replies[size_t(r)];
      if (!rep) {
        absent.push_back(dl::detail::cat("rank ", g, " did not answer (it may have exited or be stuck outside dl)"));
      } else if (rep->seq < my_seq) {
        absent.push_back(rep->seq == 0 ? dl::detail::cat("rank ", g, " has not called it (no collective on this group yet)")
                                       : dl::detail::cat("rank ", g, " has not called it (its last collective on this group is #",
                                                         rep->seq, " ", rep->op, ", ", rep->waiting ? "still running" : "done", ")"));
      } else if (rep->seq == my_seq && std::string(rep->op) != name) {
        absent.push_back(dl::detail::cat("rank ", g, " called ", rep->op, " instead (its collective #", rep->seq, ")"));
      } else if (rep->seq == my_seq && rep->numel != my_numel) {
        absent.push_back(dl::detail::cat("rank ", g, " called it with ", rep->numel, " elements, this rank with ", my_numel));
      } else if (rep->seq == my_seq) {
        waiting_ranks.push_back(g);
      } else {
        absent.push_back(dl::detail::cat("rank ", g, " is past it (at collective #", rep->seq, " ", rep->op, ")"));
      }
    }
    std::string msg = head + ". ";
    for (size_t i = 0; i < absent.size(); ++i) msg += (i ? "; " : "") + absent[i];
    if (absent.empty()) msg += "every rank is in it: the transport is stalled";
    msg += ". Waiting in it: rank" + std::string(waiting_ranks.size() > 1 ? "s " : " ");
    for (size_t i = 0; i < waiting_ranks.size(); ++i) msg += (i ? ", " : "") + std::to_string(waiting_ranks[i]);
    return msg + ". (Every rank must call the group's collectives in the same order; the timeout is init_process_group's .timeout.)";
  }

  MPI_Comm comm_ = MPI_COMM_NULL, ctl_ = MPI_COMM_NULL;
  std::thread thread_, watchdog_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  std::vector<Pending> pending_;  // only touched by the communication thread
  std::atomic<int64_t> seq_{0};
  std::mutex status_mutex_;
  Current current_;
  int64_t query_id_ = 0;  // only touched by the watchdog
  std::atomic<bool> loop_done_{false}, timed_out_{false}, watch_stop_{false};
  std::shared_ptr<std::atomic<bool>> abandoned_ = std::make_shared<std::atomic<bool>>(false);
};

namespace detail {
/// MPI_Init_thread unless the program initialised MPI itself; returns whether dl did.
inline bool ensure_mpi_initialized() {
  std::lock_guard lock(mpi_mutex());
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  DL_CHECK(!finalized, "dl::distributed: MPI was already finalized; a process can initialize it once");
  bool ours = false;
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    DL_CHECK(provided >= MPI_THREAD_MULTIPLE, "dl::distributed: the MPI library provides thread level ", provided,
             "; dl's communication and watchdog threads need MPI_THREAD_MULTIPLE (OpenMPI 4 has it)");
    ours = true;
  } else {
    int provided = 0;
    MPI_Query_thread(&provided);
    DL_CHECK(provided >= MPI_THREAD_MULTIPLE, "dl::distributed: MPI was initialized with thread level ", provided,
             "; initialize it with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or let dl do it");
  }
  static bool ops_created = false;
  if (!ops_created) {
    create_mpi_ops();
    ops_created = true;
  }
  return ours;
}
}  // namespace detail

}  // namespace dl::distributed
