// dl/distributed/collectives.hpp — torch.distributed's functions over a process group: all_reduce,
// broadcast, reduce, all_gather (into a list or one tensor), gather, scatter, reduce_scatter,
// all_to_all, barrier, send / recv / isend / irecv, broadcast_object, and flatten_dense_tensors /
// unflatten_dense_tensors.
//
//   dist::all_reduce(t);                                    // sum, in place, on the default group
//   dist::all_reduce(t, {.op = dist::ReduceOp::AVG});
//   dist::Work w = dist::all_reduce(t, {.async_op = true}); // runs on the group's thread
//   ...                                                     // compute meanwhile
//   w.wait();
//
// Each function checks its arguments here (dtypes, sizes, ranks) and throws a dl::Error naming
// them; non-contiguous tensors are copied to a staging buffer and the result copied back. With
// DL_DISTRIBUTED_DEBUG=DETAIL (or TORCH_DISTRIBUTED_DEBUG=DETAIL) in the environment every
// collective first compares its name, dtype and sizes across the ranks, and a mismatch is an error
// on every rank instead of a hang or wrong data.
#pragma once

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "../tensor.hpp"
#include "process_group.hpp"

namespace dl::distributed {

/// The options every collective takes (torch.distributed's keyword arguments).
struct CollectiveOptions {
  ReduceOp op = ReduceOp::SUM;  ///< for the reducing collectives
  Group group{};                ///< empty: the default group
  bool async_op = false;        ///< return at once; Work::wait() blocks until done
};

namespace detail {

inline ProcessGroup& group_of(const Group& g) { return g ? *g : default_group(); }

/// "DETAIL" in DL_DISTRIBUTED_DEBUG or TORCH_DISTRIBUTED_DEBUG.
inline bool debug_detail() {
  static const bool on = [] {
    for (const char* v : {"DL_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"})
      if (const char* s = std::getenv(v); s && std::strcmp(s, "DETAIL") == 0) return true;
    return false;
  }();
  return on;
}

inline void check_tensor(const AnyTensor& t, ProcessGroup& g, const char* op, const char* what = "tensor") {
  DL_CHECK(t.defined(), "dl::distributed::", op, ": the ", what, " is undefined");
  const bool cuda = t.device().is_cuda();
  DL_CHECK(!cuda || g.backend() == "nccl", "dl::distributed::", op, ": the ", what, " is on ", t.device(), " but the group's backend is ",
           g.backend(), "; CUDA tensors go through a group made with {.backend = \"nccl\"}");
  DL_CHECK(cuda || g.backend() != "nccl", "dl::distributed::", op, ": the ", what,
           " is on the CPU but the group's backend is nccl; CPU tensors go through an MPI group (dist::new_group(ranks, {.backend = \"mpi\"}))");
}

inline void check_rank(ProcessGroup& g, int global_rank, const char* op, const char* what) {
  DL_CHECK(g.group_rank(global_rank) >= 0, "dl::distributed::", op, ": ", what, " rank ", global_rank, " is not in the group ",
           g.describe());
}

/// A contiguous buffer for t: t itself when it is contiguous, else a copy (copied back on finish).
struct Staged {
  TensorImplPtr user, buf;
  bool copied() const { return user != buf; }
  /// After an operation that wrote buf: copy it back into the user's tensor, mark it modified.
  void write_back() const {
    if (copied()) dl::detail::copy_bytes(*user, *buf);
    user->storage->bump_version();
  }
};
inline Staged stage(const AnyTensor& t, bool copy_in = true) {
  const TensorImplPtr& impl = t.impl();
  if (dl::is_contiguous(impl->shape, impl->strides)) return {impl, impl};
  DL_CHECK(impl->storage->device().is_cpu(), "dl::distributed: non-contiguous CUDA tensors are not staged yet; call .contiguous() first");
  auto buf = dl::detail::make_impl(impl->dtype, impl->shape, kCPU);
  if (copy_in) dl::detail::copy_bytes(*buf, *impl);
  return {impl, buf};
}

inline Work finish(Work w, const CollectiveOptions& o) {
  if (!o.async_op) w.wait();
  return w;
}

/// A flat [n] tensor of dtype on device.
inline AnyTensor flat_buffer(ScalarType dtype, int64_t n, Device device) { return AnyTensor(dl::detail::make_impl(dtype, {n}, device)); }

/// DL_DISTRIBUTED_DEBUG=DETAIL: every rank shows the others what it is about to call.
inline void debug_compare(ProcessGroup& g, const char* op, const AnyTensor& t, int64_t extra = 0) {
  if (!debug_detail()) return;
  int64_t code = 0;
  for (const char* c = op; *c; ++c) code = code * 131 + *c;
  const int64_t mine[4] = {code, t.defined() ? int64_t(t.dtype()) : -1, t.defined() ? t.numel() : 0, extra};
  auto all = dl::detail::make_impl(ScalarType::Int64, {int64_t(g.size()) * 4}, kCPU);
  auto me = dl::detail::make_impl(ScalarType::Int64, {4}, kCPU);
  std::memcpy(me->data(), mine, sizeof mine);
  g.all_gather(AnyTensor(all), AnyTensor(me)).wait();
  const int64_t* a = static_cast<const int64_t*>(all->data());
  std::string diffs;
  for (int r = 0; r < g.size(); ++r) {
    const int64_t* x = a + 4 * r;
    if (x[0] != mine[0]) diffs += dl::detail::cat("; rank ", g.ranks()[size_t(r)], " called another collective");
    else if (x[1] != mine[1]) diffs += dl::detail::cat("; rank ", g.ranks()[size_t(r)], " passed a ", x[1] < 0 ? "none" : std::string(dtype_name(ScalarType(x[1]))),
                                           " tensor");
    else if (x[2] != mine[2] || x[3] != mine[3])
      diffs += dl::detail::cat("; rank ", g.ranks()[size_t(r)], " passed ", x[2], " elements (argument ", x[3], ")");
  }
  DL_CHECK(diffs.empty(), "dl::distributed::", op, " (DL_DISTRIBUTED_DEBUG=DETAIL): the ranks disagree. Rank ", g.ranks()[size_t(g.rank())],
           " passed a ", t.defined() ? std::string(dtype_name(t.dtype())) : std::string("none"), " tensor of ", mine[2], " elements",
           diffs);
}

template <class T>
std::vector<AnyTensor> any_list(const std::vector<Tensor<T>>& v) {
  return {v.begin(), v.end()};
}

inline void check_list(const std::vector<AnyTensor>& list, const AnyTensor& like, ProcessGroup& g, const char* op, const char* what) {
  DL_CHECK(int(list.size()) == g.size(), "dl::distributed::", op, ": ", what, " has ", list.size(), " tensors; the group has ", g.size(),
           " ranks, one tensor each");
  for (size_t i = 0; i < list.size(); ++i) {
    DL_CHECK(list[i].defined(), "dl::distributed::", op, ": ", what, "[", i, "] is undefined");
    DL_CHECK(list[i].dtype() == like.dtype() && list[i].shape() == like.shape(), "dl::distributed::", op, ": ", what, "[", i, "] is ",
             dtype_name(list[i].dtype()), " ", list[i].shape(), ", the tensor is ", dtype_name(like.dtype()), " ", like.shape(),
             "; every entry must match it");
  }
}

/// Copies block i of the flat `src` into each list[i] (contiguous or not).
inline void scatter_blocks(const TensorImplPtr& src, const std::vector<AnyTensor>& list) {
  int64_t off = 0;
  for (const AnyTensor& t : list) {
    TensorImpl block = *src;
    block.shape = t.shape();
    block.strides = dl::contiguous_strides(t.shape());
    block.offset = src->offset + off;
    dl::detail::copy_bytes(*t.impl(), block);
    t.impl()->storage->bump_version();
    off += t.numel();
  }
}
/// The entries of list, one after the other, in a new flat tensor.
inline TensorImplPtr gather_blocks(const std::vector<AnyTensor>& list, ScalarType dtype, Device device) {
  int64_t n = 0;
  for (const AnyTensor& t : list) n += t.numel();
  auto out = dl::detail::make_impl(dtype, {n}, device);
  int64_t off = 0;
  for (const AnyTensor& t : list) {
    TensorImpl block = *out;
    block.shape = t.shape();
    block.strides = dl::contiguous_strides(t.shape());
    block.offset = off;
    dl::detail::copy_bytes(block, *t.impl());
    off += t.numel();
  }
  return out;
}

}  // namespace detail

// ----------------------------------------------------------------------------------------------
// Collectives on one tensor
// ----------------------------------------------------------------------------------------------

/// Reduces t across the group in place: every rank ends with op(t of rank 0, t of rank 1, ...).
inline Work all_reduce(const AnyTensor& t, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(t, g, "all_reduce");
  detail::debug_compare(g, "all_reduce", t, int64_t(o.op));
  auto s = detail::stage(t);
  return detail::finish(g.all_reduce(AnyTensor(s.buf), o.op, [s] { s.write_back(); }), o);
}

/// Copies src's t into t on every other rank (src: a global rank).
inline Work broadcast(const AnyTensor& t, int src, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(t, g, "broadcast");
  detail::check_rank(g, src, "broadcast", "source");
  detail::debug_compare(g, "broadcast", t, src);
  auto s = detail::stage(t, g.rank() == g.group_rank(src));
  return detail::finish(g.broadcast(AnyTensor(s.buf), g.group_rank(src), [s] { s.write_back(); }), o);
}

/// Reduces t into dst's t (a global rank); the other ranks' tensors are unchanged.
inline Work reduce(const AnyTensor& t, int dst, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(t, g, "reduce");
  detail::check_rank(g, dst, "reduce", "destination");
  detail::debug_compare(g, "reduce", t, dst);
  auto s = detail::stage(t);
  const bool at_root = g.rank() == g.group_rank(dst);
  return detail::finish(g.reduce(AnyTensor(s.buf), g.group_rank(dst), o.op, [s, at_root] { if (at_root) s.write_back(); }), o);
}

/// torch.distributed.all_gather_into_tensor: out (numel = world size x in's) gets every rank's
/// `in`, rank 0's first (out may be [world * n0, ...] or [world, n0, ...]).
inline Work all_gather_into_tensor(const AnyTensor& out, const AnyTensor& in, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(in, g, "all_gather_into_tensor", "input");
  detail::check_tensor(out, g, "all_gather_into_tensor", "output");
  DL_CHECK(out.dtype() == in.dtype(), "dl::distributed::all_gather_into_tensor: output is ", dtype_name(out.dtype()), ", input is ",
           dtype_name(in.dtype()));
  DL_CHECK(out.numel() == in.numel() * g.size(), "dl::distributed::all_gather_into_tensor: output ", out.shape(), " has ", out.numel(),
           " elements; it needs the group's ", g.size(), " ranks x the input's ", in.numel(), " (", in.shape(), ")");
  detail::debug_compare(g, "all_gather", in);
  auto si = detail::stage(in), so = detail::stage(out, false);
  return detail::finish(g.all_gather(AnyTensor(so.buf), AnyTensor(si.buf), [so] { so.write_back(); }), o);
}

/// Every rank's `in` into out_list[rank] (torch.distributed.all_gather). An empty out_list is
/// filled with new tensors shaped like `in`.
template <scalar_type T>
Work all_gather(std::vector<Tensor<T>>& out_list, const Tensor<T>& in, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(in, g, "all_gather", "input");
  if (out_list.empty())
    for (int r = 0; r < g.size(); ++r) out_list.push_back(dl::empty<T>(in.shape(), in.device()));
  auto list = detail::any_list(out_list);
  detail::check_list(list, in, g, "all_gather", "the output list");
  detail::debug_compare(g, "all_gather", in);
  auto si = detail::stage(in);
  auto flat = dl::detail::make_impl(in.dtype(), {in.numel() * g.size()}, in.device());
  return detail::finish(g.all_gather(AnyTensor(flat), AnyTensor(si.buf), [flat, list] { detail::scatter_blocks(flat, list); }), o);
}

/// Every rank's `in` into gather_list on dst only (elsewhere gather_list may be empty).
template <scalar_type T>
Work gather(const Tensor<T>& in, std::vector<Tensor<T>>& gather_list, int dst = 0, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(in, g, "gather", "input");
  detail::check_rank(g, dst, "gather", "destination");
  const bool at_root = g.rank() == g.group_rank(dst);
  std::vector<AnyTensor> list;
  if (at_root) {
    if (gather_list.empty())
      for (int r = 0; r < g.size(); ++r) gather_list.push_back(dl::empty<T>(in.shape(), in.device()));
    list = detail::any_list(gather_list);
    detail::check_list(list, in, g, "gather", "gather_list");
  }
  detail::debug_compare(g, "gather", in, dst);
  auto si = detail::stage(in);
  auto flat = dl::detail::make_impl(in.dtype(), {at_root ? in.numel() * g.size() : 0}, in.device());
  return detail::finish(g.gather(AnyTensor(flat), AnyTensor(si.buf), g.group_rank(dst), [flat, list] {
                          if (!list.empty()) detail::scatter_blocks(flat, list);
                        }),
                        o);
}

/// scatter_list[r] on src goes to rank r's out (elsewhere scatter_list may be empty).
template <scalar_type T>
Work scatter(const Tensor<T>& out, const std::vector<Tensor<T>>& scatter_list, int src = 0, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(out, g, "scatter", "output");
  detail::check_rank(g, src, "scatter", "source");
  const bool at_root = g.rank() == g.group_rank(src);
  TensorImplPtr flat = dl::detail::make_impl(out.dtype(), {0}, out.device());
  if (at_root) {
    auto list = detail::any_list(scatter_list);
    detail::check_list(list, out, g, "scatter", "scatter_list");
    flat = detail::gather_blocks(list, out.dtype(), out.device());
  }
  detail::debug_compare(g, "scatter", out, src);
  auto so = detail::stage(out, false);
  return detail::finish(g.scatter(AnyTensor(so.buf), AnyTensor(flat), g.group_rank(src), [so] { so.write_back(); }), o);
}

/// torch.distributed.reduce_scatter_tensor: in holds world-size blocks of out's size; rank r's out
/// is op over the ranks of block r.
inline Work reduce_scatter_tensor(const AnyTensor& out, const AnyTensor& in, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(in, g, "reduce_scatter_tensor", "input");
  detail::check_tensor(out, g, "reduce_scatter_tensor", "output");
  DL_CHECK(out.dtype() == in.dtype(), "dl::distributed::reduce_scatter_tensor: output is ", dtype_name(out.dtype()), ", input is ",
           dtype_name(in.dtype()));
  DL_CHECK(in.numel() == out.numel() * g.size(), "dl::distributed::reduce_scatter_tensor: input ", in.shape(), " has ", in.numel(),
           " elements; it needs the group's ", g.size(), " ranks x the output's ", out.numel(), " (", out.shape(), ")");
  detail::debug_compare(g, "reduce_scatter", out, int64_t(o.op));
  auto si = detail::stage(in), so = detail::stage(out, false);
  return detail::finish(g.reduce_scatter(AnyTensor(so.buf), AnyTensor(si.buf), o.op, [so, si] { so.write_back(); }), o);
}

/// torch.distributed.reduce_scatter: rank r's out is op over the ranks of in_list[r].
template <scalar_type T>
Work reduce_scatter(const Tensor<T>& out, const std::vector<Tensor<T>>& in_list, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(out, g, "reduce_scatter", "output");
  auto list = detail::any_list(in_list);
  detail::check_list(list, out, g, "reduce_scatter", "the input list");
  auto flat = detail::gather_blocks(list, out.dtype(), out.device());
  detail::debug_compare(g, "reduce_scatter", out, int64_t(o.op));
  auto so = detail::stage(out, false);
  return detail::finish(g.reduce_scatter(AnyTensor(so.buf), AnyTensor(flat), o.op, [so, flat] { so.write_back(); }), o);
}

/// torch.distributed.all_to_all_single: in's rows (dim 0) split among the ranks (in_splits rows
/// each, equal when empty) are sent to them; out receives out_splits rows from each.
inline Work all_to_all_single(const AnyTensor& out, const AnyTensor& in, std::vector<int64_t> out_splits = {},
                              std::vector<int64_t> in_splits = {}, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::check_tensor(in, g, "all_to_all_single", "input");
  detail::check_tensor(out, g, "all_to_all_single", "output");
  DL_CHECK(out.dtype() == in.dtype(), "dl::distributed::all_to_all_single: output is ", dtype_name(out.dtype()), ", input is ",
           dtype_name(in.dtype()));
  const int p = g.size();
  auto rows_to_counts = [&](std::vector<int64_t>& splits, const AnyTensor& t, const char* what) {
    const int64_t rows = t.dim() ? t.shape()[0] : 1, row = rows ? t.numel() / rows : 0;
    if (splits.empty()) {
      DL_CHECK(rows % p == 0, "dl::distributed::all_to_all_single: the ", what, "'s ", rows, " rows do not split evenly among ", p,
               " ranks; pass the split sizes");
      splits.assign(size_t(p), rows / p);
    }
    DL_CHECK(int(splits.size()) == p, "dl::distributed::all_to_all_single: ", splits.size(), " ", what, " split sizes for ", p, " ranks");
    int64_t sum = 0;
    for (int64_t s : splits) sum += s;
    DL_CHECK(sum == rows, "dl::distributed::all_to_all_single: the ", what, " split sizes add up to ", sum, " rows; the ", what, " has ",
             rows);
    std::vector<int64_t> counts;
    for (int64_t s : splits) counts.push_back(s * row);
    return counts;
  };
  auto in_counts = rows_to_counts(in_splits, in, "input"), out_counts = rows_to_counts(out_splits, out, "output");
  detail::debug_compare(g, "all_to_all", in);
  auto si = detail::stage(in), so = detail::stage(out, false);
  return detail::finish(g.all_to_all(AnyTensor(so.buf), AnyTensor(si.buf), out_counts, in_counts, [so] { so.write_back(); }), o);
}

/// torch.distributed.all_to_all: in_list[r] goes to rank r; out_list[r] comes from rank r.
template <scalar_type T>
Work all_to_all(std::vector<Tensor<T>>& out_list, const std::vector<Tensor<T>>& in_list, const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  DL_CHECK(int(in_list.size()) == g.size() && int(out_list.size()) == g.size(), "dl::distributed::all_to_all: ", in_list.size(),
           " input and ", out_list.size(), " output tensors for a group of ", g.size(), " ranks; one each per rank");
  std::vector<int64_t> in_counts, out_counts;
  for (const auto& t : in_list) {
    detail::check_tensor(t, g, "all_to_all", "input");
    in_counts.push_back(t.numel());
  }
  for (const auto& t : out_list) {
    detail::check_tensor(t, g, "all_to_all", "output");
    out_counts.push_back(t.numel());
  }
  auto ins = detail::any_list(in_list), outs = detail::any_list(out_list);
  const Device dev = in_list[0].device();
  auto in_flat = detail::gather_blocks(ins, dtype_of<T>, dev);
  auto out_flat = dl::detail::make_impl(dtype_of<T>, {std::accumulate(out_counts.begin(), out_counts.end(), int64_t(0))}, dev);
  detail::debug_compare(g, "all_to_all", AnyTensor(in_flat));
  return detail::finish(g.all_to_all(AnyTensor(out_flat), AnyTensor(in_flat), out_counts, in_counts,
                                     [out_flat, outs, in_flat] { detail::scatter_blocks(out_flat, outs); }),
                        o);
}

/// Returns when every rank of the group called it.
inline Work barrier(const CollectiveOptions& o = {}) {
  ProcessGroup& g = detail::group_of(o.group);
  detail::debug_compare(g, "barrier", AnyTensor());
  return detail::finish(g.barrier(), o);
}

// ----------------------------------------------------------------------------------------------
// Point to point
// ----------------------------------------------------------------------------------------------

/// Sends t to dst (a global rank) without waiting: the Work completes when t may be reused.
inline Work isend(const AnyTensor& t, int dst, int tag = 0, const Group& group = {}) {
  ProcessGroup& g = detail::group_of(group);
  detail::check_tensor(t, g, "isend");
  detail::check_rank(g, dst, "isend", "destination");
  auto s = detail::stage(t);
  return g.send(AnyTensor(s.buf), g.group_rank(dst), tag);
}
/// Receives into t from src (a global rank; -1: any) without waiting.
inline Work irecv(const AnyTensor& t, int src = -1, int tag = 0, const Group& group = {}) {
  ProcessGroup& g = detail::group_of(group);
  detail::check_tensor(t, g, "irecv");
  if (src >= 0) detail::check_rank(g, src, "irecv", "source");
  auto s = detail::stage(t, false);
  return g.recv(AnyTensor(s.buf), src < 0 ? -1 : g.group_rank(src), tag, [s] { s.write_back(); });
}
inline void send(const AnyTensor& t, int dst, int tag = 0, const Group& group = {}) { isend(t, dst, tag, group).wait(); }
/// Returns the sender's global rank.
inline int recv(const AnyTensor& t, int src = -1, int tag = 0, const Group& group = {}) { return irecv(t, src, tag, group).source_rank(); }

// ----------------------------------------------------------------------------------------------
// Host values and flat gradient lists
// ----------------------------------------------------------------------------------------------

/// Copies src's value of obj to every rank (torch.distributed.broadcast_object_list, for C++
/// values): a trivially copyable value, a std::string, or a std::vector of trivially copyable values.
template <class V>
void broadcast_object(V& obj, int src = 0, const Group& group = {}) {
  ProcessGroup& g = detail::group_of(group);
  detail::check_rank(g, src, "broadcast_object", "source");
  const bool at_root = g.rank() == g.group_rank(src);
  if constexpr (std::is_trivially_copyable_v<V>) {
    auto buf = dl::detail::make_impl(ScalarType::UInt8, {int64_t(sizeof(V))}, kCPU);
    if (at_root) std::memcpy(buf->data(), &obj, sizeof(V));
    g.broadcast(AnyTensor(buf), g.group_rank(src)).wait();
    if (!at_root) std::memcpy(&obj, buf->data(), sizeof(V));
  } else {
    static_assert(requires { obj.data(); obj.size(); obj.resize(0); } &&
                      std::is_trivially_copyable_v<std::remove_cvref_t<decltype(*obj.data())>>,
                  "broadcast_object: pass a trivially copyable value, a std::string or a std::vector of trivially copyable values");
    using E = std::remove_cvref_t<decltype(*obj.data())>;
    int64_t n = at_root ? int64_t(obj.size()) : 0;
    broadcast_object(n, src, group);
    auto buf = dl::detail::make_impl(ScalarType::UInt8, {n * int64_t(sizeof(E))}, kCPU);
    if (at_root && n) std::memcpy(buf->data(), obj.data(), size_t(n) * sizeof(E));
    g.broadcast(AnyTensor(buf), g.group_rank(src)).wait();
    if (!at_root) {
      obj.resize(size_t(n));
      if (n) std::memcpy(obj.data(), buf->data(), size_t(n) * sizeof(E));
    }
  }
}

/// The tensors' elements one after the other in one flat tensor (torch._utils._flatten_dense_tensors).
template <scalar_type T>
Tensor<T> flatten_dense_tensors(const std::vector<Tensor<T>>& tensors) {
  DL_CHECK(!tensors.empty(), "flatten_dense_tensors: no tensors");
  for (const auto& t : tensors) DL_CHECK(t.defined(), "flatten_dense_tensors: an undefined tensor");
  return Tensor<T>(detail::gather_blocks(detail::any_list(tensors), dtype_of<T>, tensors[0].device()));
}

/// Views of flat shaped like `like`, one after the other (torch._utils._unflatten_dense_tensors);
/// they share flat's storage.
template <scalar_type T>
std::vector<Tensor<T>> unflatten_dense_tensors(const Tensor<T>& flat, const std::vector<Tensor<T>>& like) {
  int64_t n = 0;
  for (const auto& t : like) n += t.numel();
  DL_CHECK(flat.numel() == n, "unflatten_dense_tensors: the flat tensor has ", flat.numel(), " elements, the tensors ", n);
  std::vector<Tensor<T>> out;
  int64_t off = 0;
  for (const auto& t : like) {
    out.push_back(flat.narrow(0, off, t.numel()).view(t.shape()));
    off += t.numel();
  }
  return out;
}

}  // namespace dl::distributed
