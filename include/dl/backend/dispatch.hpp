// dl/backend/dispatch.hpp — how the core reaches a device other than the CPU: one table of entry
// points per device type (device_backend(DeviceType::CUDA)), filled in at start-up by that
// device's backend (<dl/cuda.hpp> for CUDA) and null until then, and the registry of kernels
// generated for expression types. Storage allocates through it, ops copy, multiply, index and draw
// random numbers through it; nothing below dl/cuda/ names a CUDA header or function.
//
// Adding a CUDA op: a field here (what the op needs from the device, in plain C++ types), its
// implementation in dl/cuda/ installed by dl/cuda.hpp's install_hooks(), and the op's device branch
// calling device_backend(x.device().type).field (see docs/architecture.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#include "../device.hpp"
#include "../dtype.hpp"

namespace dl {
class Storage;
}  // namespace dl

namespace dl::detail {

struct IndexGeometry;     // dl/ops/index_geometry.hpp
enum class IndexMode : int;

/// A device's entry points. Every field is optional: callers check for null and say what to do.
struct DeviceBackend {
  // ---------------------------------------------------------------- memory (dl/storage.hpp)
  /// n bytes from the device's caching allocator; *block_size gets the block's size.
  void* (*allocate)(size_t n, size_t* block_size, int device) = nullptr;
  void (*deallocate)(void* p, size_t block_size, int device) = nullptr;

  /// Copies nbytes between any two devices (cpu <-> cuda, cuda <-> cuda) on the current stream;
  /// blocks the host unless non_blocking (pinned or device memory only).
  void (*copy)(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
               bool non_blocking) = nullptr;
  /// Page-locked host memory from the pinned caching allocator, and the test for it.
  void* (*pinned_alloc)(size_t nbytes) = nullptr;
  void (*pinned_free)(void* p) = nullptr;
  bool (*is_pinned)(const void* p) = nullptr;
  /// cuBLAS: C (M x N, row stride ldc, unit column stride) = alpha * A @ B + beta * C for float or
  /// double, A and B given by (data, row stride, column stride) with one unit stride each.
  void (*gemm)(ScalarType dtype, int device, int64_t M, int64_t N, int64_t K, double alpha, const void* A, int64_t a_rs,
               int64_t a_cs, const void* B, int64_t b_rs, int64_t b_cs, double beta, void* C, int64_t ldc) = nullptr;
  /// Philox fills of n contiguous elements on the device, the CPU's values element for element
  /// (kind: a dl::detail::RandomKind): uniform in [a, b); normal with mean a and std b; integers
  /// i + r % c; a keep mask of value a where the word is below c (else 0). `first` is the first
  /// counter reserved from the generator. Installed by .cu files only (nvcc), hence optional: the
  /// creation functions draw on the host and copy without it.
  /// cuBLASLt for F::linear: C [M, N] = act(X [M, K] @ W [N, K]^T + bias) with the bias (or null)
  /// and act (0 none, 1 ReLU) in the GEMM epilogue; X and W row-major with row strides ldx, ldw.
  /// Returns false where it does not apply (not float; no algorithm).
  bool (*linear)(ScalarType dtype, int device, int64_t M, int64_t N, int64_t K, const void* X, int64_t ldx, const void* W,
                 int64_t ldw, const void* bias, int act, void* C) = nullptr;
  /// Number of CUDA devices (0 without a device or driver; never throws).
  int (*device_count)() = nullptr;
  void (*philox)(int kind, ScalarType dtype, int device, uint64_t seed, uint64_t first, int64_t n, double a, double b,
                 int64_t i, uint64_t c, void* out) = nullptr;

  // ---------------------------------------------------------------- indexing (dl/ops/indexing.hpp)
  /// The indexed copy g in `mode` on elements of `dtype`. `value` (host memory, one element of
  /// `dtype`, or null) is the scalar written when `dense` is null, and a factor on the dense
  /// operand of an Add otherwise. Throws "index K is out of bounds for dimension D with size N"
  /// (prefixed by what) when an index is out of range (this waits for the kernel).
  void (*indexed_copy)(ScalarType dtype, int device, IndexMode mode, const IndexGeometry& g, void* indexed, void* dense,
                       const void* value, const char* what) = nullptr;
  /// The flat positions (ascending) of the nonzero elements of n contiguous elements at src, in
  /// a new device buffer; *count gets how many (this waits for the device, as torch.nonzero).
  std::shared_ptr<Storage> (*nonzero_positions)(ScalarType dtype, int device, const void* src, int64_t n,
                                                int64_t* count) = nullptr;
  /// out[c * nd + d] = the coordinate along d of flat position pos[c] in a row-major `size`.
  void (*unravel)(int device, const int64_t* pos, int64_t count, int nd, const int64_t* size, int64_t* out) = nullptr;
  /// Values and indices of the max (or min) along the middle dim of a contiguous [outer, R, inner]
  /// tensor (NaN is the largest value; the first index wins ties), as dl::max(x, dim).
  void (*arg_reduce)(ScalarType dtype, int device, bool is_max, const void* src, int64_t outer, int64_t R,
                     int64_t inner, void* values, int64_t* indices) = nullptr;
};

/// The table of device type t.
inline DeviceBackend& device_backend(DeviceType t) {
  static DeviceBackend tables[2];
  return tables[int(t)];
}
inline DeviceBackend& cuda_backend() { return device_backend(DeviceType::CUDA); }

// The names the three tables had before they were one (tests and older code name them).
using CudaRuntimeHooks = DeviceBackend;
using CudaIndexHooks = DeviceBackend;
using DeviceAllocator = DeviceBackend;
inline DeviceBackend& cuda_runtime_hooks() { return cuda_backend(); }
inline DeviceBackend& cuda_index_hooks() { return cuda_backend(); }
inline DeviceBackend& cuda_allocator_hooks() { return cuda_backend(); }

/// Generated kernels by the type of the work they run (see the file comment).
class KernelRegistry {
 public:
  static KernelRegistry& instance() {
    static KernelRegistry r;
    return r;
  }
  bool add(const std::type_info& key, void* fn) {
    std::lock_guard lock(mutex_);
    map_.emplace(std::type_index(key), fn);
    return true;
  }
  void* find(const std::type_info& key) const {
    std::lock_guard lock(mutex_);
    const auto it = map_.find(std::type_index(key));
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::type_index, void*> map_;
};

}  // namespace dl::detail
