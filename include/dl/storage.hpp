// dl/storage.hpp — dl::Storage: a reference-counted block of device memory shared by a tensor and
// all its views, with the version counter that autograd uses to detect in-place changes.
#pragma once

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>

#include "allocator.hpp"
#include "backend/dispatch.hpp"
#include "device.hpp"

namespace dl {

class Storage {
 public:
  using Deleter = std::function<void(void*)>;

  /// nbytes of fresh memory on `device` from its caching allocator.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device = kCPU) {
    auto s = std::shared_ptr<Storage>(new Storage);
    s->device_ = device;
    s->nbytes_ = nbytes;
    if (device.is_cpu()) {
      s->data_ = detail::CpuAllocator::instance().allocate(nbytes, &s->block_size_);
    } else {
      auto& hooks = detail::device_backend(device.type);
      DL_CHECK(hooks.allocate, "cannot allocate on ", device,
               ": dl was built without CUDA support (include <dl/cuda.hpp> in a CUDA-enabled build)");
      s->data_ = hooks.allocate(nbytes, &s->block_size_, device.index);
    }
    return s;
  }

  /// Wraps memory the caller owns; `deleter` (may be empty) runs when the last tensor lets go.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device, Deleter deleter) {
    auto s = std::shared_ptr<Storage>(new Storage);
    s->data_ = data;
    s->nbytes_ = nbytes;
    s->device_ = device;
    s->deleter_ = std::move(deleter);
    s->external_ = true;
    return s;
  }

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (external_) {
      if (deleter_) deleter_(data_);
    } else if (device_.is_cpu()) {
      detail::CpuAllocator::instance().deallocate(data_, block_size_);
    } else {
      detail::device_backend(device_.type).deallocate(data_, block_size_, device_.index);
    }
  }

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  /// Incremented by every in-place write through any tensor that shares this storage.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Storage() = default;

  void* data_ = nullptr;
  size_t nbytes_ = 0;
  size_t block_size_ = 0;
  Device device_;
  Deleter deleter_;
  bool external_ = false;
  std::atomic<uint32_t> version_{0};
};

}  // namespace dl
