// dl/tensor_impl.hpp — dl::TensorImpl, what a tensor handle points to (storage, shape, strides,
// offset, dtype, autograd slot), and make_impl. Below autograd and Tensor: the autograd graph and the
// device dispatch table speak TensorImplPtr.
#pragma once

#include <memory>

#include "device.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "shape.hpp"
#include "storage.hpp"

namespace dl {

namespace autograd {
struct AutogradMeta;
}  // namespace autograd

/// What a tensor handle points to. Copies of a Tensor share one TensorImpl; views have their own
/// TensorImpl sharing the Storage.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // in elements
  ScalarType dtype = ScalarType::Float;
  bool is_view = false;  // shares storage with the tensor it was made from
  /// For a view made under grad mode: the tensor at the root of its view chain (never a view
  /// itself). Autograd uses it to route in-place changes of the view into the base's history
  /// (CopySlices) and to re-derive the view's history after the base changed in place.
  std::shared_ptr<TensorImpl> view_base;
  std::shared_ptr<autograd::AutogradMeta> autograd;  // null until autograd needs it

  void* data() const { return static_cast<char*>(storage->data()) + offset * int64_t(element_size(dtype)); }
};
using TensorImplPtr = std::shared_ptr<TensorImpl>;

namespace detail {
[[noreturn]] inline void host_data_of_device_tensor(Device d) {
  throw Error(cat("this operation reads the tensor's elements on the host, but the tensor is on ", d,
                  ": it has no CUDA implementation yet. Copy the tensor with .cpu() first (data_ptr() gives the raw ",
                  "device pointer)"));
}

/// A fresh contiguous TensorImpl of `shape` (uninitialised memory).
inline TensorImplPtr make_impl(ScalarType dtype, const Shape& shape, Device device = kCPU) {
  auto impl = std::make_shared<TensorImpl>();
  const int64_t n = numel(shape);
  for (int64_t s : shape) DL_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", shape);
  impl->storage = Storage::allocate(size_t(n) * element_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return impl;
}
}  // namespace detail

}  // namespace dl
