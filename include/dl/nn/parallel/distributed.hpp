// dl/nn/parallel/distributed.hpp — DistributedDataParallel: data-parallel training over a process
// group, with gradient all-reduces that overlap backward (torch.nn.parallel.DistributedDataParallel).
//
//   dist::init_process_group({.backend = "mpi"});       // mpirun -np 4 ./train
//   Net net;
//   nn::parallel::DistributedDataParallel ddp(net);      // rank 0's parameters and buffers everywhere
//   optim::SGD opt(net.parameters(), {.lr = 0.1});
//   for (auto& [x, y] : loader) {                        // each rank: its own share (DistributedSampler)
//     opt.zero_grad();
//     F::cross_entropy(ddp(x), y).backward();            // returns with the gradients averaged
//     opt.step();
//   }
//
// How: the parameters (that require grad) are grouped into buckets of bucket_cap_mb, in reverse
// registration order (roughly the order backward produces their gradients; the first bucket is
// kept small, 1 MB, so communication starts early). A hook on each parameter's gradient
// accumulation copies the gradient into its bucket; a bucket whose gradients are all there starts
// its asynchronous all-reduce (average) on the group's communication thread while backward goes
// on. When backward ends (an autograd engine callback) the remaining buckets are reduced, every
// all-reduce is waited for, and the averaged gradients are written back into grad() (or grad()
// is a view of its bucket: gradient_as_bucket_view). Buckets start in the same order on every
// rank, so the collectives match.
#pragma once

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "../../autograd/engine.hpp"
#include "../../distributed/collectives.hpp"
#include "../module.hpp"
#include "comm_hooks.hpp"
#include "sync_batchnorm.hpp"

namespace dl::nn::parallel {

struct DistributedDataParallelOptions {
  /// The size of a gradient bucket (PyTorch's bucket_cap_mb).
  double bucket_cap_mb = 25;
  /// Rank 0's buffers (BatchNorm's running statistics) broadcast to every rank before each forward.
  bool broadcast_buffers = true;
  /// Parameters that get no gradient in a backward pass (a branch not taken) are reduced as zeros
  /// on that rank; without this option such a parameter is an error naming it.
  bool find_unused_parameters = false;
  /// grad() becomes a view of its bucket (no copy back after the all-reduce; grads must then be
  /// zeroed in place, zero_grad(false), to stay views).
  bool gradient_as_bucket_view = false;
  /// The group to average over (empty: the default group).
  distributed::Group process_group{};
};

/// When each bucket's all-reduce started during the last backward pass, and when backward's own
/// work ended (milliseconds since that iteration's forward started), to see the overlap.
struct DistributedDataParallelStats {
  std::vector<double> bucket_start_ms;
  double backward_end_ms = 0;
  size_t num_buckets = 0;
};

namespace detail {

/// The gradient machinery of DistributedDataParallel, independent of the module's type.
class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  struct Param {
    AnyTensor tensor;
    std::string name;
    size_t bucket = 0;
    int64_t offset = 0;  // in the bucket, in elements
    bool ready = false, used = false;
  };
  struct Bucket {
    ScalarType dtype = ScalarType::Float;
    Device device = kCPU;
    TensorImplPtr flat;
    std::vector<size_t> params;
    size_t pending = 0;
    bool launched = false;
    distributed::Work work;
  };

  Reducer(std::vector<std::pair<std::string, AnyTensor>> params, const DistributedDataParallelOptions& o) : options_(o) {
    for (auto& [name, t] : params) params_.push_back({t, name});
    build_buckets();
  }

  ~Reducer() {
    for (auto& p : params_) autograd::remove_post_accumulate_grad_hooks(p.tensor.impl(), this);
  }

  /// Installs the gradient hooks (after construction: they hold a weak pointer to the reducer).
  void install_hooks() {
    std::weak_ptr<Reducer> self = weak_from_this();
    for (size_t i = 0; i < params_.size(); ++i)
      autograd::add_post_accumulate_grad_hook(params_[i].tensor.impl(), this, [self, i] {
        if (auto r = self.lock()) r->mark_ready(i);
      });
  }

  /// Called by forward: the next backward pass reduces the gradients.
  void prepare() {
    armed_ = true;
    callback_queued_ = false;
    next_bucket_ = 0;
    for (auto& p : params_) p.ready = p.used = false;
    for (auto& b : buckets_) {
      b.pending = b.params.size();
      b.launched = false;
      b.work = {};
    }
    stats_.bucket_start_ms.clear();
    stats_.backward_end_ms = 0;
    start_ = std::chrono::steady_clock::now();
  }

  bool require_sync = true;
  /// Replaces the average all-reduce of each bucket (set once, before training).
  void set_comm_hook(CommHook hook) {
    DL_CHECK(!comm_hook_, "DistributedDataParallel: register_comm_hook can only be called once");
    DL_CHECK(hook, "DistributedDataParallel: register_comm_hook was given an empty hook");
    comm_hook_ = std::move(hook);
  }
  const DistributedDataParallelStats& stats() const { return stats_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<Param>& params() const { return params_; }

 private:
  void build_buckets() {
    const double first_cap = 1.0 * 1024 * 1024, cap = options_.bucket_cap_mb * 1024 * 1024;
    // Reverse registration order; one open bucket per (dtype, device).
    std::vector<size_t> open;
    for (size_t k = params_.size(); k-- > 0;) {
      Param& p = params_[k];
      size_t bi = buckets_.size();
      for (size_t o : open)
        if (buckets_[o].dtype == p.tensor.dtype() && buckets_[o].device == p.tensor.device()) bi = o;
      if (bi == buckets_.size()) {
        Bucket fresh;
        fresh.dtype = p.tensor.dtype();
        fresh.device = p.tensor.device();
        buckets_.push_back(std::move(fresh));
        open.push_back(bi);
      }
      Bucket& b = buckets_[bi];
      int64_t size = 0;
      for (size_t q : b.params) size += params_[q].tensor.numel();
      p.bucket = bi;
      p.offset = size;
      b.params.push_back(k);
      const double bytes = double(size + p.tensor.numel()) * double(element_size(p.tensor.dtype()));
      if (bytes >= (bi == 0 ? std::min(first_cap, cap) : cap)) open.erase(std::find(open.begin(), open.end(), bi));
    }
    for (Bucket& b : buckets_) {
      int64_t n = 0;
      for (size_t q : b.params) n += params_[q].tensor.numel();
      b.flat = dl::detail::make_impl(b.dtype, {n}, b.device);
    }
    stats_.num_buckets = buckets_.size();
  }

  /// The slot of parameter i in its bucket, shaped like the parameter.
  TensorImplPtr slot(size_t i) const {
    const Param& p = params_[i];
    auto v = std::make_shared<TensorImpl>(*buckets_[p.bucket].flat);
    v->shape = p.tensor.shape();
    v->strides = contiguous_strides(v->shape);
    v->offset = buckets_[p.bucket].flat->offset + p.offset;
    v->is_view = true;
    v->autograd = nullptr;
    return v;
  }

  void mark_ready(size_t i) {
    if (!armed_ || !require_sync) return;
    Param& p = params_[i];
    DL_CHECK(!p.ready, "DistributedDataParallel: parameter ", p.name, " received its gradient twice in one backward pass. Each forward "
             "through DistributedDataParallel allows one backward; accumulate over several with no_sync()");
    if (!callback_queued_) {
      callback_queued_ = true;
      std::weak_ptr<Reducer> self = weak_from_this();
      autograd::queue_callback([self] {
        if (auto r = self.lock()) r->finalize();
      });
    }
    p.ready = p.used = true;
    copy_in(i);
    Bucket& b = buckets_[p.bucket];
    if (--b.pending == 0) launch_ready();
  }

  void copy_in(size_t i) {
    Param& p = params_[i];
    auto& m = autograd::detail::meta(p.tensor.impl());
    TensorImplPtr s = slot(i);
    if (m.sparse_grad) {  // an Embedding(sparse = true): averaged as a dense gradient
      m.grad = m.sparse_grad->to_dense(*m.sparse_grad);
      m.sparse_grad.reset();
    }
    if (m.grad && m.grad->storage == s->storage && m.grad->offset == s->offset) return;  // already a view of the bucket
    if (m.grad) dl::detail::copy_bytes(*s, *m.grad);
    else dl::detail::zero_bytes(*s);
    if (options_.gradient_as_bucket_view) m.grad = s;
  }

  void launch_ready() {
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
      Bucket& b = buckets_[next_bucket_++];
      stats_.bucket_start_ms.push_back(ms_since_start());
      b.launched = true;
      if (comm_hook_) {
        std::vector<AnyTensor> grads, params;
        for (size_t i : b.params) {
          grads.push_back(AnyTensor(slot(i)));
          params.push_back(params_[i].tensor);
        }
        GradBucket gb(next_bucket_ - 1, next_bucket_ == buckets_.size(), AnyTensor(b.flat), std::move(grads), std::move(params),
                      options_.process_group);
        b.work = comm_hook_(gb);
      } else {
        b.work = distributed::all_reduce(AnyTensor(b.flat),
                                         {.op = distributed::ReduceOp::AVG, .group = options_.process_group, .async_op = true});
      }
    }
  }

  double ms_since_start() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

  void finalize() {
    if (!armed_) return;
    armed_ = false;
    stats_.backward_end_ms = ms_since_start();
    std::vector<std::string> unused;
    for (size_t i = 0; i < params_.size(); ++i)
      if (!params_[i].ready) unused.push_back(params_[i].name);
    if (!unused.empty() && !options_.find_unused_parameters) {
      for (auto& b : buckets_)
        if (b.launched) b.work.wait();
      std::string names;
      for (size_t k = 0; k < unused.size(); ++k) names += (k ? ", " : "") + unused[k];
      throw Error(dl::detail::cat("DistributedDataParallel: ", unused.size(), " parameter(s) received no gradient in this backward pass: ", names,
                      ". Construct it with {.find_unused_parameters = true} when some parameters do not take part in every "
                      "iteration's loss (or set requires_grad_(false) on those that never do)"));
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      Param& p = params_[i];
      if (p.ready) continue;
      p.ready = true;
      dl::detail::zero_bytes(*slot(i));
      if (--buckets_[p.bucket].pending == 0) launch_ready();
    }
    for (auto& b : buckets_) b.work.wait();
    std::vector<char> globally_used(params_.size(), 1);
    if (options_.find_unused_parameters) {
      auto used = dl::detail::make_impl(ScalarType::Int32, {int64_t(params_.size())}, kCPU);
      for (size_t i = 0; i < params_.size(); ++i) static_cast<int32_t*>(used->data())[i] = params_[i].used ? 1 : 0;
      distributed::all_reduce(AnyTensor(used), {.op = distributed::ReduceOp::MAX, .group = options_.process_group});
      for (size_t i = 0; i < params_.size(); ++i) globally_used[i] = static_cast<int32_t*>(used->data())[i] != 0;
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!globally_used[i]) continue;  // no rank used it: its grad stays as it was (PyTorch's behaviour)
      auto& m = autograd::detail::meta(params_[i].tensor.impl());
      TensorImplPtr s = slot(i);
      if (options_.gradient_as_bucket_view) {
        m.grad = s;
      } else if (m.grad && !(m.grad->storage == s->storage)) {
        dl::detail::copy_bytes(*m.grad, *s);
        m.grad->storage->bump_version();
      } else {
        auto g = dl::detail::make_impl(s->dtype, s->shape, s->storage->device());
        dl::detail::copy_bytes(*g, *s);
        m.grad = g;
      }
    }
  }

  DistributedDataParallelOptions options_;
  CommHook comm_hook_;
  std::vector<Param> params_;
  std::vector<Bucket> buckets_;
  size_t next_bucket_ = 0;
  bool armed_ = false, callback_queued_ = false;
  std::chrono::steady_clock::time_point start_;
  DistributedDataParallelStats stats_;
};

/// Every parameter that requires grad, each once, with its name, in registration order.
inline std::vector<std::pair<std::string, AnyTensor>> ddp_parameters(Module& m) {
  std::vector<std::pair<std::string, AnyTensor>> out;
  std::unordered_set<TensorImpl*> seen;
  for (auto& [prefix, mod] : m.named_modules()) {
    struct V : nn::detail::MemberVisitor {
      std::vector<std::pair<std::string, AnyTensor>>* out;
      std::unordered_set<TensorImpl*>* seen;
      std::string prefix;
      void parameter(const std::string& name, const nn::detail::TensorSlot& s) override {
        AnyTensor t = s.get();
        if (!t.defined() || !seen->insert(t.impl().get()).second) return;
        if (!(t.impl()->autograd && t.impl()->autograd->requires_grad)) return;
        out->push_back({prefix.empty() ? name : prefix + "." + name, t});
      }
    } v;
    v.out = &out;
    v.seen = &seen;
    v.prefix = prefix;
    mod->visit_members(v);
  }
  return out;
}

/// Fails on every rank when the ranks' parameter lists differ (count, dtype or shape).
inline void check_same_parameters(const std::vector<std::pair<std::string, AnyTensor>>& params, const distributed::Group& group) {
  distributed::ProcessGroup& g = group ? *group : distributed::default_group();
  const int world = g.size();
  auto counts = dl::detail::make_impl(ScalarType::Int64, {world}, kCPU), mine = dl::detail::make_impl(ScalarType::Int64, {1}, kCPU);
  *static_cast<int64_t*>(mine->data()) = int64_t(params.size());
  g.all_gather(AnyTensor(counts), AnyTensor(mine)).wait();
  const int64_t* c = static_cast<const int64_t*>(counts->data());
  for (int r = 0; r < world; ++r)
    if (c[r] != int64_t(params.size())) {
      std::string all;
      for (int q = 0; q < world; ++q) all += dl::detail::cat(q ? ", " : "", "rank ", g.ranks()[size_t(q)], ": ", c[q]);
      throw Error(dl::detail::cat("DistributedDataParallel: the ranks' models have different numbers of parameters that require grad (", all,
                      "); every rank must build the same model"));
    }
  constexpr int kRec = 10;  // dtype, ndim, up to 8 sizes
  const int64_t n = int64_t(params.size());
  auto recs = dl::detail::make_impl(ScalarType::Int64, {n * kRec * world}, kCPU), own = dl::detail::make_impl(ScalarType::Int64, {n * kRec}, kCPU);
  int64_t* o = static_cast<int64_t*>(own->data());
  for (int64_t i = 0; i < n; ++i) {
    const AnyTensor& t = params[size_t(i)].second;
    int64_t* rec = o + i * kRec;
    std::fill(rec, rec + kRec, -1);
    rec[0] = int64_t(t.dtype());
    rec[1] = t.dim();
    for (int d = 0; d < std::min(t.dim(), 8); ++d) rec[2 + d] = t.shape()[d];
  }
  if (n) g.all_gather(AnyTensor(recs), AnyTensor(own)).wait();
  const int64_t* all = static_cast<const int64_t*>(recs->data());
  auto describe = [&](const int64_t* rec) {
    std::string s = std::string(dtype_name(ScalarType(rec[0]))) + " [";
    for (int d = 0; d < rec[1] && d < 8; ++d) s += (d ? ", " : "") + std::to_string(rec[2 + d]);
    return s + "]";
  };
  for (int64_t i = 0; i < n; ++i)
    for (int r = 1; r < world; ++r) {
      const int64_t* a = all + i * kRec;                       // rank 0's
      const int64_t* b = all + (int64_t(r) * n + i) * kRec;    // rank r's
      if (!std::equal(a, a + kRec, b))
        throw Error(dl::detail::cat("DistributedDataParallel: the ranks' models differ: parameter ", i, " (", params[size_t(i)].first, " here) is ",
                        describe(a), " on rank ", g.ranks()[0], " and ", describe(b), " on rank ", g.ranks()[size_t(r)],
                        "; every rank must build the same model"));
    }
}

}  // namespace detail

/// torch.nn.parallel.DistributedDataParallel over any module (a DL_MODULE struct, a run-time
/// Sequential, a Module&). Calling it calls the module; see the header comment.
template <class M>
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(M& module, DistributedDataParallelOptions options = {}) : module_(module), options_(options) {
    DL_CHECK(options.bucket_cap_mb > 0, "DistributedDataParallel: bucket_cap_mb must be positive, got ", options.bucket_cap_mb);
    distributed::ProcessGroup& g = options.process_group ? *options.process_group : distributed::default_group();
    DL_CHECK(g.is_member(), "DistributedDataParallel: this rank is not in the process group ", g.describe());
    auto params = detail::ddp_parameters(module_);
    detail::check_same_parameters(params, options.process_group);
    // Rank 0's parameters and buffers everywhere.
    const int root = g.ranks()[0];
    std::vector<distributed::Work> works;
    for (auto& [name, t] : params) works.push_back(distributed::broadcast(t, root, {.group = options.process_group, .async_op = true}));
    for (AnyTensor& b : module_.buffers()) works.push_back(distributed::broadcast(b, root, {.group = options.process_group, .async_op = true}));
    for (auto& w : works) w.wait();
    reducer_ = std::make_shared<detail::Reducer>(std::move(params), options);
    reducer_->install_hooks();
  }

  /// Runs the module's forward (after broadcasting rank 0's buffers); the next backward averages
  /// the gradients across the group.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    before_forward();
    return module_(std::forward<Args>(args)...);
  }
  template <class... Args>
  decltype(auto) forward(Args&&... args) {
    before_forward();
    return module_.forward(std::forward<Args>(args)...);
  }

  /// The wrapped module (PyTorch's ddp.module): save its state_dict, not the wrapper's.
  M& module() { return module_; }
  template <scalar_type T = float>
  std::vector<Tensor<T>> parameters(bool recurse = true) {
    return module_.template parameters<T>(recurse);
  }
  DistributedDataParallel& train(bool on = true) {
    module_.train(on);
    return *this;
  }
  DistributedDataParallel& eval() { return train(false); }

  /// Gradient accumulation: backward passes inside the guard's scope keep their gradients local;
  /// the first backward after it averages the accumulated total.
  ///   { auto guard = ddp.no_sync(); loss(ddp(x1)).backward(); }   loss(ddp(x2)).backward();
  class NoSync {
   public:
    explicit NoSync(detail::Reducer& r) : r_(&r), prev_(r.require_sync) { r.require_sync = false; }
    NoSync(NoSync&& o) noexcept : r_(std::exchange(o.r_, nullptr)), prev_(o.prev_) {}
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;
    ~NoSync() {
      if (r_) r_->require_sync = prev_;
    }

   private:
    detail::Reducer* r_;
    bool prev_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*reducer_); }

  /// Replaces the all-reduce (average) of each gradient bucket by `hook` (PyTorch's
  /// register_comm_hook; state is captured by the callable): e.g. comm_hooks::fp16_compress_hook
  /// sends half the bytes. Call it once, before the first backward.
  void register_comm_hook(CommHook hook) { reducer_->set_comm_hook(std::move(hook)); }

  /// Bucket start times and the end of backward in the last iteration.
  const DistributedDataParallelStats& stats() const { return reducer_->stats(); }
  /// The buckets' parameter names, first bucket (reduced first) first.
  std::vector<std::vector<std::string>> bucket_parameter_names() const {
    std::vector<std::vector<std::string>> out;
    for (const auto& b : reducer_->buckets()) {
      out.emplace_back();
      for (size_t i : b.params) out.back().push_back(reducer_->params()[i].name);
    }
    return out;
  }

 private:
  void before_forward() {
    if (is_grad_enabled() && module_.is_training()) reducer_->prepare();
    if (options_.broadcast_buffers) {
      auto bufs = module_.buffers();
      if (bufs.empty()) return;
      distributed::ProcessGroup& g = options_.process_group ? *options_.process_group : distributed::default_group();
      if (g.size() == 1) return;
      std::vector<distributed::Work> works;
      for (AnyTensor& b : bufs)
        works.push_back(distributed::broadcast(b, g.ranks()[0], {.group = options_.process_group, .async_op = true}));
      for (auto& w : works) w.wait();
    }
  }

  M& module_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<detail::Reducer> reducer_;
};

template <class M>
DistributedDataParallel(M&, DistributedDataParallelOptions = {}) -> DistributedDataParallel<M>;

}  // namespace dl::nn::parallel
