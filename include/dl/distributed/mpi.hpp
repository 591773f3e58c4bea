// dl/distributed/mpi.hpp — the MPI process group (OpenMPI, or any MPI-3 library): CPU tensors, and
// the start-up of every run (mpirun starts the processes; NCCL's unique id travels over MPI).
//
// Each group owns a communication thread that runs the group's operations in the order they were
// issued, so an asynchronous all_reduce overlaps with the caller's computation (DDP's buckets
// during backward). Operations are MPI's non-blocking ones (MPI_Iallreduce, ...) polled with
// MPI_Test: while it waits, the thread answers the other ranks' questions on a second
// communicator, and when an operation outlives the group's timeout it asks every rank which
// operation it is in, and fails with an error that names the ranks that never arrived. MPI is
// initialised with MPI_THREAD_SERIALIZED; one process-wide mutex serialises the calls of several
// groups' threads.
//
// Header-only always (no compiled-mode split): a program that includes dl/distributed.hpp links MPI
// (Meson: dependency('mpi', language: 'cpp'); by hand: mpicxx, or `pkg-config --cflags --libs ompi-cxx`).
#pragma once

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

/// Serialises MPI calls across the threads of several groups (MPI_THREAD_SERIALIZED).
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
    {
      std::lock_guard lock(detail::mpi_mutex());
      MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
      MPI_Comm_rank(comm_, &rank_);
      MPI_Comm_dup(comm_, &ctl_);
      MPI_Comm_set_errhandler(ctl_, MPI_ERRORS_RETURN);
    }
    thread_ = std::thread([this] { loop(); });
  }

  ~ProcessGroupMPI() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(detail::mpi_mutex());
    if (orphans_.empty()) {  // an operation abandoned after a timeout may still write into comm_
      MPI_Comm_free(&ctl_);
      MPI_Comm_free(&comm_);
    }
  }

  std::string backend() const override { return "mpi"; }

  Work all_reduce(const AnyTensor& t, ReduceOp op, Finish f) override {
    const int64_t n = t.numel();
    auto impl = t.impl();
    return collective("all_reduce", n, {impl}, [=, this](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, impl->data(), detail::to_int_count(n, "all_reduce"), detail::mpi_type(impl->dtype),
                            detail::mpi_op(op, impl->dtype), comm_, r);
    }, avg_then(op, impl, std::move(f)));
  }

  Work broadcast(const AnyTensor& t, int root, Finish f) override {
    const int64_t n = t.numel();
    auto impl = t.impl();
    return collective("broadcast", n, {impl}, [=, this](MPI_Request* r) {
      return MPI_Ibcast(impl->data(), detail::to_int_count(n, "broadcast"), detail::mpi_type(impl->dtype), root, comm_, r);
    }, std::move(f));
  }

  Work reduce(const AnyTensor& t, int root, ReduceOp op, Finish f) override {
    const int64_t n = t.numel();
    auto impl = t.impl();
    const bool at_root = rank_ == root;
    return collective("reduce", n, {impl}, [=, this](MPI_Request* r) {
      return MPI_Ireduce(at_root ? MPI_IN_PLACE : impl->data(), at_root ? impl->data() : nullptr,
                         detail::to_int_count(n, "reduce"), detail::mpi_type(impl->dtype), detail::mpi_op(op, impl->dtype), root,
                         comm_, r);
    }, at_root ? avg_then(op, impl, std::move(f)) : std::move(f));
  }

  Work all_gather(const AnyTensor& out, const AnyTensor& in, Finish f) override {
    const int64_t n = in.numel();
    auto o = out.impl(), i = in.impl();
    return collective("all_gather", n, {o, i}, [=, this](MPI_Request* r) {
      const int c = detail::to_int_count(n, "all_gather");
      return MPI_Iallgather(i->data(), c, detail::mpi_type(i->dtype), o->data(), c, detail::mpi_type(o->dtype), comm_, r);
    }, std::move(f));
  }

  Work gather(const AnyTensor& out, const AnyTensor& in, int root, Finish f) override {
    const int64_t n = in.numel();
    auto o = out.impl(), i = in.impl();
    const bool at_root = rank_ == root;
    return collective("gather", n, {o, i}, [=, this](MPI_Request* r) {
      const int c = detail::to_int_count(n, "gather");
      return MPI_Igather(i->data(), c, detail::mpi_type(i->dtype), at_root ? o->data() : nullptr, c, detail::mpi_type(i->dtype),
                         root, comm_, r);
    }, std::move(f));
  }

  Work scatter(const AnyTensor& out, const AnyTensor& in, int root, Finish f) override {
    const int64_t n = out.numel();
    auto o = out.impl(), i = in.impl();
    const bool at_root = rank_ == root;
    return collective("scatter", n, {o, i}, [=, this](MPI_Request* r) {
      const int c = detail::to_int_count(n, "scatter");
      return MPI_Iscatter(at_root ? i->data() : nullptr, c, detail::mpi_type(o->dtype), o->data(), c, detail::mpi_type(o->dtype),
                          root, comm_, r);
    }, std::move(f));
  }

  Work reduce_scatter(const AnyTensor& out, const AnyTensor& in, ReduceOp op, Finish f) override {
    const int64_t n = out.numel();
    auto o = out.impl(), i = in.impl();
    return collective("reduce_scatter", n, {o, i}, [=, this](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(i->data(), o->data(), detail::to_int_count(n, "reduce_scatter"), detail::mpi_type(o->dtype),
                                       detail::mpi_op(op, o->dtype), comm_, r);
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
    return collective("all_to_all", in.numel(), {o, i}, [=, this](MPI_Request* r) {
      const int* c = counts->data();
      return MPI_Ialltoallv(i->data(), c, c + p, detail::mpi_type(i->dtype), o->data(), c + 2 * p, c + 3 * p,
                            detail::mpi_type(o->dtype), comm_, r);
    }, [counts, f = std::move(f)] { if (f) f(); });
  }

  Work barrier() override {
    return collective("barrier", 0, {}, [this](MPI_Request* r) { return MPI_Ibarrier(comm_, r); }, {});
  }

  Work send(const AnyTensor& t, int dst, int tag) override {
    auto impl = t.impl();
    const int64_t n = t.numel();
    return enqueue(dl::detail::cat("send to rank ", ranks_[size_t(dst)], " (tag ", tag, ")"), /*collective=*/false, n, {impl},
                   [=, this](MPI_Request* r) {
                     return MPI_Isend(impl->data(), detail::to_int_count(n, "send"), detail::mpi_type(impl->dtype), dst, tag,
                                      comm_, r);
                   }, {});
  }

  Work recv(const AnyTensor& t, int src, int tag, Finish f) override {
    auto impl = t.impl();
    const int64_t n = t.numel();
    const std::string from = src < 0 ? std::string("any rank") : dl::detail::cat("rank ", ranks_[size_t(src)]);
    return enqueue(dl::detail::cat("recv from ", from, " (tag ", tag, ")"), /*collective=*/false, n, {impl},
                   [=, this](MPI_Request* r) {
                     return MPI_Irecv(impl->data(), detail::to_int_count(n, "recv"), detail::mpi_type(impl->dtype),
                                      src < 0 ? MPI_ANY_SOURCE : src, tag, comm_, r);
                   }, std::move(f));
  }

  std::shared_ptr<ProcessGroup> new_subgroup(const std::vector<int>& global_ranks, std::chrono::milliseconds timeout) override {
    // MPI_Comm_split is blocking and collective over this group: it runs on the communication
    // thread, after the operations already queued, as every other operation does.
    std::vector<int> members;  // the members' ranks in this group, in the order of global_ranks
    for (int g : global_ranks) members.push_back(group_rank(g));
    const int my_index = int(std::find(members.begin(), members.end(), rank_) - members.begin());
    const bool member = my_index < int(members.size());
    auto result = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
    auto state = std::make_shared<detail::WorkState>();
    push({"new_group", [=, this] {
            std::lock_guard lock(detail::mpi_mutex());
            detail::mpi_check(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, my_index, result.get()), "MPI_Comm_split",
                              "new_group");
          }, state});
    Work(state).wait();
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
      {
        std::lock_guard lock(detail::mpi_mutex());
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
      }
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

  using Start = std::function<int(MPI_Request*)>;
  struct Task {
    std::string name;
    std::function<void()> run;
    std::shared_ptr<detail::WorkState> work;
  };
  /// A posted request with the buffers it writes (kept alive after a timeout until it completes).
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<TensorImplPtr> keep;
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

  Work collective(const char* name, int64_t numel, std::vector<TensorImplPtr> keep, Start start, Finish f) {
    return enqueue(name, /*collective=*/true, numel, std::move(keep), std::move(start), std::move(f));
  }

  Work enqueue(std::string name, bool is_collective, int64_t numel, std::vector<TensorImplPtr> keep, Start start, Finish f) {
    auto state = std::make_shared<detail::WorkState>();
    state->name = name;
    push({name, [=, this, keep = std::move(keep)]() mutable {
            Pending p{MPI_REQUEST_NULL, std::move(keep)};
            if (is_collective) {
              const int64_t s = seq_.fetch_add(1) + 1;
              std::lock_guard lock(status_mutex_);
              current_ = {s, numel, name};
            }
            {
              std::lock_guard lock(detail::mpi_mutex());
              detail::mpi_check(start(&p.request), "MPI", name);
            }
            int source = -1;
            wait_request(p, name, is_collective, &source);
            if (f) f();
            state->source = source >= 0 && source < size() ? ranks_[size_t(source)] : -1;
          }, state});
    return Work(state);
  }

  void push(Task t) {
    {
      std::lock_guard lock(mutex_);
      DL_CHECK(!stop_, "dl::distributed: ", t.name, " on a destroyed process group");
      queue_.push_back(std::move(t));
    }
    cv_.notify_all();
  }

  void loop() {
    for (;;) {
      Task t;
      {
        std::unique_lock lock(mutex_);
        // Idle: wake now and then to answer other ranks' questions and drive abandoned requests.
        while (queue_.empty() && !stop_) {
          if (cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return !queue_.empty() || stop_; })) break;
          lock.unlock();
          idle_work();
          lock.lock();
        }
        if (queue_.empty()) {  // stop_ and nothing left
          lock.unlock();
          linger();
          return;
        }
        t = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        t.run();
        t.work->finish();
      } catch (...) {
        t.work->finish(std::current_exception());
      }
    }
  }

  /// After a timeout the other ranks may still be asking where this one is: answer them for a
  /// few seconds (or until the abandoned operation completes) before the group goes away.
  void linger() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!orphans_.empty() && std::chrono::steady_clock::now() < until) {
      idle_work();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  void idle_work() {
    try {
      service_control();
      poll_orphans();
    } catch (...) {
    }
  }

  void poll_orphans() {
    std::lock_guard lock(detail::mpi_mutex());
    for (size_t i = 0; i < orphans_.size();) {
      int done = 0;
      MPI_Test(&orphans_[i].request, &done, MPI_STATUS_IGNORE);
      if (done) orphans_.erase(orphans_.begin() + long(i));
      else ++i;
    }
  }

  /// Polls p until it completes; answers control queries meanwhile; after the timeout, finds out
  /// which ranks are missing and throws.
  void wait_request(Pending& p, const std::string& name, bool is_collective, int* source) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    MPI_Status status;
    for (int64_t spins = 0;; ++spins) {
      int done = 0;
      {
        std::lock_guard lock(detail::mpi_mutex());
        detail::mpi_check(MPI_Test(&p.request, &done, &status), "MPI_Test", name);
      }
      if (done) {
        if (source) *source = status.MPI_SOURCE;
        if (is_collective) {
          std::lock_guard lock(status_mutex_);
          current_.waiting = false;
        }
        return;
      }
      if ((spins & 63) == 63) {
        service_control();
        if (clock::now() - start > timeout_) {
          orphans_.push_back(std::move(p));
          throw Error(timeout_message(name, is_collective));
        }
      }
      // Spin briefly (a small collective completes in microseconds), then sleep between polls.
      if (spins < 2000) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(spins < 20000 ? 20 : 200));
    }
  }

  struct Current {
    int64_t seq = 0, numel = 0;
    std::string op;
    bool waiting = true;
  };

  void service_control() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      detail::ControlQuery q{};
      {
        std::lock_guard lock(detail::mpi_mutex());
        MPI_Iprobe(MPI_ANY_SOURCE, detail::kTagQuery, ctl_, &flag, &st);
        if (!flag) return;
        MPI_Recv(&q, sizeof q, MPI_BYTE, st.MPI_SOURCE, detail::kTagQuery, ctl_, MPI_STATUS_IGNORE);
      }
      detail::ControlReply r{};
      {
        std::lock_guard lock(status_mutex_);
        r.id = q.id;
        r.seq = current_.seq;
        r.numel = current_.numel;
        r.waiting = current_.waiting ? 1 : 0;
        std::strncpy(r.op, current_.op.c_str(), sizeof r.op - 1);
      }
      std::lock_guard lock(detail::mpi_mutex());
      MPI_Send(&r, sizeof r, MPI_BYTE, st.MPI_SOURCE, detail::kTagReply, ctl_);
    }
  }

  std::string timeout_message(const std::string& name, bool is_collective) {
    const auto ms = timeout_.count();
    std::string head = dl::detail::cat("dl::distributed: ", name, is_collective ? dl::detail::cat(" (collective #", seq_.load(), ")") : std::string(),
                           " on the group of ranks ", describe(), " (backend mpi) did not complete within ", ms, " ms");
    if (!is_collective) return head + ": the peer did not post the matching operation";
    // Ask every other rank where it is.
    const int64_t id = ++query_id_;
    const int64_t my_seq = seq_.load();
    std::vector<MPI_Request> sends;
    detail::ControlQuery q{id};
    {
      std::lock_guard lock(detail::mpi_mutex());
      for (int r = 0; r < size(); ++r) {
        if (r == rank_) continue;
        sends.emplace_back();
        MPI_Isend(&q, sizeof q, MPI_BYTE, r, detail::kTagQuery, ctl_, &sends.back());
      }
    }
    std::vector<std::optional<detail::ControlReply>> replies(static_cast<size_t>(size()));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    int missing_replies = size() - 1;
    while (missing_replies > 0 && std::chrono::steady_clock::now() < deadline) {
      service_control();  // they may be asking us at the same time
      int flag = 0;
      MPI_Status st;
      detail::ControlReply r{};
      {
        std::lock_guard lock(detail::mpi_mutex());
        MPI_Iprobe(MPI_ANY_SOURCE, detail::kTagReply, ctl_, &flag, &st);
        if (flag) MPI_Recv(&r, sizeof r, MPI_BYTE, st.MPI_SOURCE, detail::kTagReply, ctl_, MPI_STATUS_IGNORE);
      }
      if (!flag) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      if (r.id != id || replies[size_t(st.MPI_SOURCE)]) continue;  // a late answer to an earlier question
      replies[size_t(st.MPI_SOURCE)] = r;
      --missing_replies;
    }
    {
      std::lock_guard lock(detail::mpi_mutex());
      for (auto& s : sends) {  // queries nobody received are cancelled
        int done = 0;
        MPI_Test(&s, &done, MPI_STATUS_IGNORE);
        if (!done) {
          MPI_Cancel(&s);
          MPI_Request_free(&s);
        }
      }
    }
    std::vector<std::string> absent, waiting;
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
                                       : dl::detail::cat("rank ", g, " has not called it (its last collective on this group is #", rep->seq, " ",
                                             rep->op, ", ", rep->waiting ? "still running" : "done", ")"));
      } else if (rep->seq == my_seq && std::string(rep->op) != name) {
        absent.push_back(dl::detail::cat("rank ", g, " called ", rep->op, " instead (its collective #", rep->seq, ")"));
      } else if (rep->seq == my_seq && rep->numel != numel_of_current()) {
        absent.push_back(dl::detail::cat("rank ", g, " called it with ", rep->numel, " elements, this rank with ", numel_of_current()));
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

  int64_t numel_of_current() {
    std::lock_guard lock(status_mutex_);
    return current_.numel;
  }

  MPI_Comm comm_ = MPI_COMM_NULL, ctl_ = MPI_COMM_NULL;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  std::atomic<int64_t> seq_{0};
  std::mutex status_mutex_;
  Current current_;
  int64_t query_id_ = 0;
  std::vector<Pending> orphans_;  // only touched by the communication thread
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
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    DL_CHECK(provided >= MPI_THREAD_SERIALIZED, "dl::distributed: the MPI library provides thread level ", provided,
             "; dl's communication threads need MPI_THREAD_SERIALIZED");
    ours = true;
  } else {
    int provided = 0;
    MPI_Query_thread(&provided);
    DL_CHECK(provided >= MPI_THREAD_SERIALIZED, "dl::distributed: MPI was initialized with thread level ", provided,
             "; initialize it with MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...) or let dl do it");
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
