// dl/expr/device.hpp — what evaluation needs to know about devices: PyTorch's same-device check,
// and the errors for a tensor on a device whose backend is not in the program, or an expression
// whose CUDA kernel no .cu file generated. The device table itself is dl/backend/dispatch.hpp.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#include "../backend/dispatch.hpp"
#include "../device.hpp"
#include "../dtype.hpp"
#include "../error.hpp"

#if defined(__GNUG__)
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#endif

namespace dl::detail {

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
