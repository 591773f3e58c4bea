// dl/cuda/stream.hpp — streams and events, as torch.cuda.Stream / Event: Stream (with priority),
// current_stream, default_stream, set_stream, StreamGuard, Event (record, synchronize, query,
// elapsed_time, wait), Stream::wait_stream. Every dl op on a CUDA tensor runs on the current stream
// of the tensor's device.
#pragma once

#include <array>
#include <memory>
#include <utility>

#include "runtime.hpp"

namespace dl::cuda {

class Event;

/// A CUDA stream. Copies share the stream; the stream is destroyed with its last copy (streams
/// wrapping an external handle, such as the default stream, are never destroyed).
class Stream {
 public:
  /// A new stream on the current device. Lower numbers are higher priorities (CUDA's convention,
  /// as in PyTorch); 0 is the default priority.
  explicit Stream(int priority = 0) : device_(current_device()), priority_(priority) {
    cudaStream_t s = nullptr;
    DL_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
    owner_ = std::shared_ptr<void>(s, [](void* p) { (void)cudaStreamDestroy(static_cast<cudaStream_t>(p)); });
    handle_ = s;
  }
  /// Wraps a stream the caller owns (not destroyed by dl).
  static Stream wrap(cudaStream_t handle, int device) { return Stream(handle, device); }

  cudaStream_t handle() const { return handle_; }
  cudaStream_t stream() const { return handle_; }
  int device_index() const { return device_; }
  Device device() const { return Device(kCUDA, device_); }
  int priority() const { return priority_; }
  /// (least, greatest) priority values the device accepts; greatest is numerically lowest.
  static std::pair<int, int> priority_range() {
    int least = 0, greatest = 0;
    DL_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    return {least, greatest};
  }

  /// True when all work submitted to the stream has completed.
  bool query() const {
    const cudaError_t e = cudaStreamQuery(handle_);
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    if (e != cudaSuccess) detail::throw_cuda_error(e, "cudaStreamQuery", __FILE__, __LINE__);
    return true;
  }
  /// Waits for all work submitted to the stream.
  void synchronize() const { DL_CUDA_CHECK(cudaStreamSynchronize(handle_)); }
  /// Work submitted to this stream later waits for `event`.
  void wait_event(const Event& event) const;
  /// Work submitted to this stream later waits for the work submitted to `other` so far.
  void wait_stream(const Stream& other) const;
  /// Records a new event on this stream.
  Event record_event() const;

  friend bool operator==(const Stream& a, const Stream& b) { return a.handle_ == b.handle_ && a.device_ == b.device_; }

 private:
  Stream(cudaStream_t handle, int device) : handle_(handle), device_(device) {}

  cudaStream_t handle_ = nullptr;
  int device_ = 0;
  int priority_ = 0;
  std::shared_ptr<void> owner_;
};

namespace detail {
inline constexpr int kMaxDevices = 64;
/// The current stream of each device, per host thread (empty: the default stream).
inline std::array<std::unique_ptr<Stream>, kMaxDevices>& current_streams() {
  thread_local std::array<std::unique_ptr<Stream>, kMaxDevices> streams;
  return streams;
}
inline int resolve_device(int device) {
  if (device < 0) device = current_device();
  DL_CHECK(device < kMaxDevices, "CUDA device index ", device, " is out of range");
  return device;
}
}  // namespace detail

/// The default (legacy, null) stream of `device`.
inline Stream default_stream(int device = -1) { return Stream::wrap(nullptr, detail::resolve_device(device)); }

/// The stream dl's ops on `device` use in this thread (the default stream unless set).
inline Stream current_stream(int device = -1) {
  device = detail::resolve_device(device);
  const auto& s = detail::current_streams()[size_t(device)];
  return s ? *s : default_stream(device);
}

/// Makes `s` the current stream of its device for this thread.
inline void set_stream(const Stream& s) {
  detail::current_streams()[size_t(detail::resolve_device(s.device_index()))] = std::make_unique<Stream>(s);
}

/// Makes `s` (and its device) current for the scope (torch.cuda.stream(s)).
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s) : device_(s.device_index()), prev_(current_stream(s.device_index())) {
    DL_CUDA_CHECK(cudaGetDevice(&prev_device_));
    if (prev_device_ != device_) DL_CUDA_CHECK(cudaSetDevice(device_));
    set_stream(s);
  }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  ~StreamGuard() {
    set_stream(prev_);
    if (prev_device_ != device_) (void)cudaSetDevice(prev_device_);
  }

 private:
  int device_;
  Stream prev_;
  int prev_device_ = 0;
};

/// A CUDA event (torch.cuda.Event). Created lazily on first record, on the recording stream's
/// device.
class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false) : timing_(enable_timing), blocking_(blocking) {}

  /// Records the event on `s` (the current stream by default).
  void record(const Stream& s) {
    if (!event_) {
      DeviceGuard g(s.device_index());
      cudaEvent_t e = nullptr;
      unsigned flags = (timing_ ? cudaEventDefault : cudaEventDisableTiming) | (blocking_ ? cudaEventBlockingSync : 0);
      DL_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
      event_ = std::shared_ptr<CUevent_st>(e, [](cudaEvent_t p) { (void)cudaEventDestroy(p); });
      device_ = s.device_index();
    }
    DL_CHECK(s.device_index() == device_, "Event recorded on device ", device_, " cannot be recorded on a stream of device ",
             s.device_index());
    DL_CUDA_CHECK(cudaEventRecord(event_.get(), s.handle()));
    recorded_ = true;
  }
  void record() { record(current_stream()); }

  /// True when the work before the event has completed (or it was never recorded).
  bool query() const {
    if (!recorded_) return true;
    const cudaError_t e = cudaEventQuery(event_.get());
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    if (e != cudaSuccess) detail::throw_cuda_error(e, "cudaEventQuery", __FILE__, __LINE__);
    return true;
  }
  /// Waits on the host until the event has completed.
  void synchronize() const {
    if (recorded_) DL_CUDA_CHECK(cudaEventSynchronize(event_.get()));
  }
  /// Makes future work on `s` wait for this event.
  void wait(const Stream& s) const {
    if (recorded_) DL_CUDA_CHECK(cudaStreamWaitEvent(s.handle(), event_.get(), 0));
  }
  void wait() const { wait(current_stream()); }
  /// Milliseconds between this event and `end` (both recorded, created with enable_timing).
  float elapsed_time(const Event& end) const {
    DL_CHECK(timing_ && end.timing_, "Event::elapsed_time: both events must be created with enable_timing=true");
    DL_CHECK(recorded_ && end.recorded_, "Event::elapsed_time: both events must be recorded before calling elapsed_time");
    float ms = 0;
    DL_CUDA_CHECK(cudaEventElapsedTime(&ms, event_.get(), end.event_.get()));
    return ms;
  }
  cudaEvent_t handle() const { return event_.get(); }

 private:
  bool timing_, blocking_;
  bool recorded_ = false;
  int device_ = -1;
  std::shared_ptr<CUevent_st> event_;
};

inline void Stream::wait_event(const Event& event) const { event.wait(*this); }
inline void Stream::wait_stream(const Stream& other) const {
  Event e;
  e.record(other);
  wait_event(e);
}
inline Event Stream::record_event() const {
  Event e;
  e.record(*this);
  return e;
}

}  // namespace dl::cuda
