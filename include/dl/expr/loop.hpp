// dl/expr/loop.hpp — the CPU loop driver shared by elementwise evaluation, reductions and fused
// backward passes. Dimensions are coalesced (adjacent dims that every operand walks with matching
// strides merge into one), the innermost dimension becomes the "row", and rows are split across
// threads. Each row runs one of three loops (Access): SIMD with plain loads, SIMD with broadcast
// operands, or a scalar strided loop.
#pragma once

#include <array>
#include <span>

#include "../parallel.hpp"
#include "../tensor_impl.hpp"
#include "device.hpp"
#include "kernel.hpp"

namespace dl::expr {

/// Elements per thread chunk below which a loop stays on one thread.
inline constexpr int64_t kElementwiseGrain = 16384;

struct LoopPlan {
  int nd = 1;                    // dimensions after coalescing, >= 1
  int64_t size[kMaxDims] = {1};  // their sizes; size[nd-1] is the row length
  int64_t numel = 0;
  Access access = Access::Contig;
};

/// Merges adjacent dimensions that every operand walks with matching strides, and drops size-1
/// dimensions, rewriting `size` (nd entries) and each operand's stride array in place.
/// Returns the new number of dimensions (at least 1).
inline int coalesce(int nd, int64_t* size, std::span<int64_t* const> operands) {
  int k = 0;
  for (int d = 0; d < nd; ++d) {
    const int64_t n = size[d];
    if (n == 1) continue;
    bool merge = k > 0;
    for (int64_t* st : operands) merge = merge && st[k - 1] == st[d] * n;
    if (merge) {
      size[k - 1] *= n;
      for (int64_t* st : operands) st[k - 1] = st[d];
    } else {
      size[k] = n;
      for (int64_t* st : operands) st[k] = st[d];
      ++k;
    }
  }
  if (k == 0) {
    size[0] = 1;
    for (int64_t* st : operands) st[0] = 0;
    k = 1;
  }
  return k;
}

/// The row loop that fits the operands' inner strides (outputs must have inner stride 1 to use
/// SIMD stores).
inline Access pick_access(int nd, std::span<int64_t* const> inputs, std::span<int64_t* const> outputs) {
  bool contig = true, mixed = true;
  for (int64_t* st : inputs) {
    contig = contig && st[nd - 1] == 1;
    mixed = mixed && (st[nd - 1] == 0 || st[nd - 1] == 1);
  }
  for (int64_t* st : outputs) {
    contig = contig && st[nd - 1] == 1;
    mixed = mixed && st[nd - 1] == 1;
  }
  return contig ? Access::Contig : mixed ? Access::Mixed : Access::Strided;
}

/// Coalesces `shape` and the stride arrays (all aligned to shape, rewritten in place) and picks
/// the row loop. `outputs` are written, `inputs` are read.
inline LoopPlan plan_loop(const Shape& shape, std::span<int64_t* const> inputs,
                          std::span<int64_t* const> outputs) {
  LoopPlan p;
  p.numel = numel(shape);
  for (int d = 0; d < shape.size(); ++d) p.size[d] = shape[d];
  std::array<int64_t*, 80> all;
  size_t n = 0;
  for (int64_t* st : inputs) all[n++] = st;
  for (int64_t* st : outputs) all[n++] = st;
  p.nd = coalesce(shape.size(), p.size, std::span(all.data(), n));
  p.access = pick_access(p.nd, inputs, outputs);
  return p;
}

/// Runs body.seek(idx, nouter) / body.run<K>(j0, j1, lanes) over every row segment of the plan,
/// splitting the flattened element range across threads. Body is copied per chunk. `lanes` is
/// false for a Strided plan run by the Mixed loop: the body then takes its scalar path only.
template <Access K, class Body>
void run_rows(const LoopPlan& p, const Body& body, int64_t grain) {
  const int64_t row = p.size[p.nd - 1];
  const int nouter = p.nd - 1;
  const bool lanes = p.access != Access::Strided;
  detail::parallel_for(0, p.numel, grain, [&](int64_t b, int64_t e) {
    Body local = body;
    int64_t idx[kMaxDims] = {};
    int64_t q = b / row, j = b % row;
    for (int d = nouter - 1; d >= 0; --d) {
      idx[d] = q % p.size[d];
      q /= p.size[d];
    }
    while (b < e) {
      const int64_t n = std::min(row - j, e - b);
      local.seek(idx, nouter);
      local.template run<K>(j, j + n, lanes);
      b += n;
      j = 0;
      for (int d = nouter - 1; d >= 0; --d) {
        if (++idx[d] < p.size[d]) break;
        idx[d] = 0;
      }
    }
    stream_fence();
  });
}

/// Runs the body over the plan. A Strided plan runs the Mixed loop on its scalar path (the scalar
/// reads of the Mixed loop take any stride), so that a body has no third instantiation. With
/// Contig = false the all-contiguous case runs the broadcast loop too (one predictable branch per
/// operand load), which halves the code a body instantiates again; backward passes use that, the
/// forward elementwise hot path does not.
template <bool Contig = true, class Body>
void run_loop(const LoopPlan& p, const Body& body, int64_t grain = kElementwiseGrain) {
  if (p.numel == 0) return;
  switch (p.access) {
    case Access::Contig:
      if constexpr (Contig) run_rows<Access::Contig>(p, body, grain);
      else run_rows<Access::Mixed>(p, body, grain);
      break;
    case Access::Mixed: run_rows<Access::Mixed>(p, body, grain); break;
    case Access::Strided: run_rows<Access::Mixed>(p, body, grain); break;
  }
}

/// The CUDA side of run_loop: dl/cuda/kernels.hpp (compiled by nvcc) defines it and registers a
/// launcher for every Body it sees evaluated (see dl/expr/device.hpp).
template <class Body>
struct DeviceRows;
template <class Body>
struct DeviceRowsKey {};

/// Runs the body over the plan on CUDA device `device` (one generated kernel). Body must be
/// trivially copyable and its seek/run __host__ __device__.
template <class Body>
void run_loop_device(const LoopPlan& p, const Body& body, Device device) {
  if (p.numel == 0) return;
  using Fn = void (*)(const LoopPlan&, const Body&, int);
#if defined(__CUDACC__)
  (void)DeviceRows<Body>::registered;
#endif
  static const Fn fn = reinterpret_cast<Fn>(dl::detail::KernelRegistry::instance().find(typeid(DeviceRowsKey<Body>)));
  if (!fn) dl::detail::no_cuda_kernel("expression", typeid(Body));
  fn(p, body, device.index);
}

/// Throws PyTorch's error when a leaf of `n` is not on `device`.
template <node N>
void check_same_device(const N& n, Device device) {
  for_each_leaf(n, [&](const auto& t) {
    if (t.device() != device) [[unlikely]]
      throw Error(dl::detail::cat("Expected all tensors to be on the same device, but found at least two devices, ",
                                  device.is_cuda() ? device : t.device(), " and ", device.is_cuda() ? t.device() : device,
                                  "!"));
  });
}

/// The device an expression's leaves live on (the CPU when it has none).
template <node N>
Device device_of(const N& n) {
  Device d = kCPU;
  bool first = true;
  for_each_leaf(n, [&](const auto& t) {
    if (first) d = t.device();
    first = false;
  });
  return d;
}

/// A strided output pointer that follows the loop's rows.
template <class T>
struct OutView {
  T* base;
  T* row;
  int64_t inner;
  int64_t st[kMaxDims];

  DL_HD DL_INLINE void seek(const int64_t* idx, int nouter) {
    T* p = base;
    for (int d = 0; d < nouter; ++d) p += idx[d] * st[d];
    row = p;
    inner = st[nouter];
  }
};

template <class T>
OutView<T> out_view(T* data, const Strides& strides) {
  OutView<T> o{};
  o.base = o.row = data;
  for (int d = 0; d < strides.size(); ++d) o.st[d] = strides[d];
  return o;
}

/// Stores a lane (batch or mask) at p.
template <class T, class V>
DL_INLINE void store_lanes(T* p, const V& v) {
  if constexpr (std::is_same_v<T, bool>) xsimd::store_as(p, v, xsimd::unaligned_mode{});
  else v.store_unaligned(p);
}

/// out[i] = view[i] for every element.
template <class View, class O>
struct AssignBody {
  View src;
  OutView<O> out;
  bool stream = false;  // streaming stores (large outputs, see kStreamBytes)

  DL_HD DL_INLINE void seek(const int64_t* idx, int nouter) {
    src.seek(idx, nouter);
    out.seek(idx, nouter);
  }
  /// Elements [j0, j1) of the current row; `lanes` false keeps to the scalar loop (Strided rows).
  template <Access K>
  DL_HD DL_INLINE void run(int64_t j0, int64_t j1, bool lanes = true) {
    using E = typename View::simd_type;
    int64_t j = j0;
    if constexpr (K != Access::Strided && !std::is_void_v<E>) {
      constexpr int64_t W = batch<E>::size;
      if constexpr (std::is_same_v<O, E>) {
        // One SIMD loop for both kinds of store (a second copy of the expression would double
        // its code): streaming stores start at an aligned element.
        if (lanes && stream)
          for (const int64_t peel = std::min(j1, j + align_peel(out.row + j)); j < peel; ++j)
            out.row[j] = static_cast<O>(src.template at<K, false>(j));
        if (lanes)
          for (; j + W <= j1; j += W) {
            if (stream) stream_store(out.row + j, src.template at<K, true>(j));
            else store_lanes(out.row + j, src.template at<K, true>(j));
          }
      }
      if constexpr (std::is_same_v<O, bool>)
        if (lanes)
          for (; j + W <= j1; j += W) store_lanes(out.row + j, src.template at<K, true>(j));
#if !defined(__CUDACC__)
      if constexpr (half_float<O> && std::is_same_v<E, float>)
        if (lanes)
          for (; j + W <= j1; j += W) narrow_lanes(out.row + j, src.template at<K, true>(j));
#endif
    }
    for (; j < j1; ++j) out.row[j * out.inner] = static_cast<O>(src.template at<K, false>(j));
  }
};

/// Writes the expression into `out` (any strides). @pre shape_of(n) broadcasts to out.shape().
template <class T, node N>
void assign(const Tensor<T>& out, const N& n) {
  auto view = lower(n, out.shape());
  auto sink = out_view(out.data_ptr(), out.strides());
  static_assert(decltype(view)::leaves < 64, "expressions are limited to 63 tensor operands");
  std::array<int64_t*, 64> inputs;
  size_t count = 0;
  view.for_each_stride([&](int64_t* st) { inputs[count++] = st; });
  int64_t* outputs[1] = {sink.st};
  const LoopPlan plan = plan_loop(out.shape(), std::span(inputs.data(), count), outputs);
  const Device device = out.device();
  check_same_device(n, device);
  if (device.is_cuda()) {
    run_loop_device(plan, AssignBody<decltype(view), T>{view, sink, false}, device);
    return;
  }
  const bool stream = size_t(plan.numel) * sizeof(T) >= kStreamBytes;
  run_loop(plan, AssignBody<decltype(view), T>{view, sink, stream});
}

/// A new contiguous tensor holding the expression's value, without recording autograd history
/// (internal: gradient bookkeeping and copies the engine makes for itself).
template <node N>
auto evaluate_raw(const N& n) {
  using T = value_type_t<N>;
  Tensor<T> out(dl::detail::make_impl(dtype_of<T>, shape_of(n), device_of(n)));
  assign(out, n);
  return out;
}

}  // namespace dl::expr
