// dl/cuda/runtime.hpp — devices and errors: dl::cuda::is_available, device_count, current_device,
// set_device, get_device_name, get_device_properties, synchronize, DeviceGuard, and the
// DL_CUDA_CHECK macro that turns a failed CUDA call into a dl::cuda::CudaError naming the call.
// Host code only: it compiles with g++ (linking libcudart) and with nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "../device.hpp"
#include "../error.hpp"

namespace dl::cuda {

/// A failed CUDA runtime call (or a kernel fault reported by one).
class CudaError : public dl::Error {
 public:
  CudaError(cudaError_t code, const std::string& what) : dl::Error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

namespace detail {
/// True when DL_CUDA_LAUNCH_BLOCKING=1 (or PyTorch's CUDA_LAUNCH_BLOCKING=1) is set: every kernel
/// launch then waits for the kernel, so a fault is reported by the op that launched it.
inline bool launch_blocking() {
  static const bool on = [] {
    for (const char* name : {"DL_CUDA_LAUNCH_BLOCKING", "CUDA_LAUNCH_BLOCKING"}) {
      const char* v = std::getenv(name);
      if (v && std::strcmp(v, "1") == 0) return true;
    }
    return false;
  }();
  return on;
}

[[noreturn]] inline void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a sticky-free error so later calls are not blamed for it
  std::string msg = ::dl::detail::cat("CUDA error: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ") in ", call,
                                      " at ", file, ":", line);
  if (!launch_blocking())
    msg += "\nCUDA kernel errors might be asynchronously reported at some other API call; for debugging set "
           "DL_CUDA_LAUNCH_BLOCKING=1.";
  throw CudaError(e, msg);
}

/// After a kernel launch: reports a bad launch at once, and with DL_CUDA_LAUNCH_BLOCKING=1 waits
/// for the kernel and names `op` if it faulted.
inline void check_launch(const char* op) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && launch_blocking()) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw_cuda_error(e, op, "kernel launch", 0);
}
}  // namespace detail

}  // namespace dl::cuda

/// DL_CUDA_CHECK(cudaMalloc(...)): throws dl::cuda::CudaError naming the call, the CUDA error and
/// where it was made.
#define DL_CUDA_CHECK(call)                                                               \
  do {                                                                                    \
    const cudaError_t dl_cuda_err_ = (call);                                              \
    if (dl_cuda_err_ != cudaSuccess) [[unlikely]]                                         \
      ::dl::cuda::detail::throw_cuda_error(dl_cuda_err_, #call, __FILE__, __LINE__);      \
  } while (0)

namespace dl::cuda {

/// Number of CUDA devices; 0 when there is no device or no driver (never throws).
inline int device_count() {
  static const int n = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return count;
  }();
  return n;
}

/// True when at least one CUDA device can be used.
inline bool is_available() { return device_count() > 0; }

namespace detail {
inline void check_device_index(int device) {
  DL_CHECK(device >= 0 && device < device_count(), "CUDA device ", device, " is not available: ",
           device_count() == 0 ? std::string("no CUDA device was found")
                               : ::dl::detail::cat("the machine has ", device_count(), " CUDA device(s)"));
}
}  // namespace detail

/// Index of the device that new CUDA work goes to (per host thread, as in CUDA).
inline int current_device() {
  int d = 0;
  DL_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

inline void set_device(int device) {
  detail::check_device_index(device);
  DL_CUDA_CHECK(cudaSetDevice(device));
}

/// What torch.cuda.get_device_properties reports.
struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;        ///< compute capability
  size_t total_memory = 0;         ///< bytes
  int multi_processor_count = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multi_processor = 0;
  int warp_size = 32;
  size_t l2_cache_size = 0;        ///< bytes
  size_t shared_memory_per_block = 0;
  int pci_bus_id = 0;
};

inline DeviceProperties get_device_properties(int device = -1) {
  if (device < 0) device = current_device();
  detail::check_device_index(device);
  cudaDeviceProp p{};
  DL_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceProperties r;
  r.name = p.name;
  r.major = p.major;
  r.minor = p.minor;
  r.total_memory = p.totalGlobalMem;
  r.multi_processor_count = p.multiProcessorCount;
  r.max_threads_per_block = p.maxThreadsPerBlock;
  r.max_threads_per_multi_processor = p.maxThreadsPerMultiProcessor;
  r.warp_size = p.warpSize;
  r.l2_cache_size = size_t(p.l2CacheSize);
  r.shared_memory_per_block = p.sharedMemPerBlock;
  r.pci_bus_id = p.pciBusID;
  return r;
}
inline DeviceProperties get_device_properties(Device d) { return get_device_properties(d.index); }

inline std::string get_device_name(int device = -1) { return get_device_properties(device).name; }
inline std::string get_device_name(Device d) { return get_device_name(d.index); }

/// (major, minor) compute capability.
inline std::pair<int, int> get_device_capability(int device = -1) {
  const DeviceProperties p = get_device_properties(device);
  return {p.major, p.minor};
}

/// Waits for all work on `device` (the current one by default).
inline void synchronize(int device = -1) {
  int prev = -1;
  if (device >= 0) {
    detail::check_device_index(device);
    DL_CUDA_CHECK(cudaGetDevice(&prev));
    DL_CUDA_CHECK(cudaSetDevice(device));
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (prev >= 0) (void)cudaSetDevice(prev);
  if (e != cudaSuccess) detail::throw_cuda_error(e, "cudaDeviceSynchronize()", __FILE__, __LINE__);
}

/// Makes `device` current for the scope, restoring the previous device after (torch.cuda.device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    DL_CUDA_CHECK(cudaGetDevice(&prev_));
    if (device != prev_) {
      detail::check_device_index(device);
      DL_CUDA_CHECK(cudaSetDevice(device));
    }
  }
  explicit DeviceGuard(Device device) : DeviceGuard(device.is_cuda() ? device.index : current_device()) {}
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() { (void)cudaSetDevice(prev_); }

 private:
  int prev_ = 0;
};

}  // namespace dl::cuda
