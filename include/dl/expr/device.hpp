// dl/expr/device.hpp — how the core reaches a GPU without including a CUDA header.
//
// The core (tensors, expressions, autograd) is plain C++ compiled by g++ or nvcc. Two things
// connect it to CUDA, both filled in by <dl/cuda.hpp>:
//   - CudaRuntimeHooks: byte copies between devices, pinned memory and cuBLAS: the runtime calls a
//     host-only (g++) translation unit may make on CUDA tensors;
//   - KernelRegistry: the generated kernels. A fused expression's kernel is a template instantiated
//     for the expression's type, which only nvcc can compile. Every translation unit compiled by
//     nvcc that evaluates an expression registers its kernel (a static initializer); evaluation
//     looks the kernel up by type, so a g++ translation unit can run a kernel that some .cu file of
//     the same program instantiated, and otherwise gets a dl::Error that says what to do.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#include "../device.hpp"
#include "../dtype.hpp"
#include "../error.hpp"

#if defined(__GNUG__)
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#endif

namespace dl::detail {

/// Runtime entry points installed by <dl/cuda.hpp> (null until then).
struct CudaRuntimeHooks {
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
};
inline CudaRuntimeHooks& cuda_runtime_hooks() {
  static CudaRuntimeHooks hooks;
  return hooks;
}

/// PyTorch's error for operands (tensors) on different devices.
template <class... Ts>
void check_devices(const char* what, const Ts&... ts) {
  const Device first = [](const auto& t, const auto&...) { return t.device(); }(ts...);
  auto one = [&](const auto& t) {
    DL_CHECK(t.device() == first, "Expected all tensors to be on the same device, but found at least two devices, ",
             first, " and ", t.device(), "! (when checking arguments for ", what, ")");
  };
  (one(ts), ...);
}

[[noreturn]] inline void no_cuda_runtime(Device d) {
  throw Error(cat("cannot use a tensor on ", d,
                  ": this program was built without CUDA support (include <dl/cuda.hpp> and build with the CUDA "
                  "toolkit: Meson option -Dcuda=enabled)"));
}

/// The readable name of a type (demangled where the compiler allows).
inline std::string type_name(const std::type_info& t) {
#if defined(__GNUG__)
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  if (status == 0 && s) return s.get();
#endif
  return t.name();
}

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

[[noreturn]] inline void no_cuda_kernel(const char* what, const std::type_info& work) {
  throw Error(cat("no CUDA kernel for this ", what,
                  " in this program: dl generates a kernel from the expression's type in a translation unit "
                  "compiled by nvcc. Evaluate the expression in a .cu file that includes <dl/cuda.hpp> (a g++ "
                  "translation unit can then run the same expression too). The work: ",
                  type_name(work)));
}

}  // namespace dl::detail

namespace dl::backends::cuda::matmul {
/// Lets cuBLAS run float products on TF32 tensor cores (faster, 10-bit mantissa inputs). Off by
/// default, as torch.backends.cuda.matmul.allow_tf32.
inline bool allow_tf32 = false;
}  // namespace dl::backends::cuda::matmul
