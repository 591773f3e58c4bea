// dl/any_tensor.hpp — dl::AnyTensor: a tensor handle whose element type is a run-time value, for
// the places where tensors of several dtypes travel together (state dicts, module buffers, hooks).
//
//   dl::AnyTensor a = dl::zeros<int64_t>({});      // any Tensor<T> converts
//   if (a.is<int64_t>()) a.as<int64_t>().fill_(3);  // typed access, checked
#pragma once

#include <ostream>
#include <utility>

#include "tensor.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

class AnyTensor {
 public:
  /// An undefined tensor.
  AnyTensor() = default;
  template <scalar_type T>
  AnyTensor(const Tensor<T>& t) : impl_(t.impl()) {}
  explicit AnyTensor(TensorImplPtr impl) : impl_(std::move(impl)) {}

  bool defined() const { return bool(impl_); }
  ScalarType dtype() const { return impl_->dtype; }
  const Shape& shape() const { return impl_->shape; }
  int dim() const { return impl_->shape.size(); }
  int64_t numel() const { return dl::numel(impl_->shape); }
  Device device() const { return impl_->storage->device(); }
  const TensorImplPtr& impl() const { return impl_; }
  /// Whether the element type is T.
  template <scalar_type T>
  bool is() const { return impl_ && impl_->dtype == dtype_of<T>; }
  /// The typed handle (shares storage); throws naming both dtypes when the element type is not T.
  template <scalar_type T>
  Tensor<T> as() const;
  /// A copy converted to element type T (the same tensor when it already is T).
  template <scalar_type T>
  Tensor<T> to() const;
  AnyTensor to(Device device) const;
  AnyTensor contiguous() const;
  AnyTensor detach() const;
  /// Calls f(Tensor<T>) with the typed handle and returns its result.
  template <class F>
  decltype(auto) visit(F&& f) const;
  /// True when both handles refer to the same tensor.
  bool is_same(const AnyTensor& other) const { return impl_ == other.impl_; }

 private:
  TensorImplPtr impl_;
};

std::ostream& operator<<(std::ostream& os, const AnyTensor& t);

// ------------------------------------------------------------------------------ implementation

template <scalar_type T>
Tensor<T> AnyTensor::as() const {
  DL_CHECK(impl_, "AnyTensor::as<", dtype_name(dtype_of<T>), ">: the tensor is undefined");
  DL_CHECK(impl_->dtype == dtype_of<T>, "expected a tensor of dtype ", dtype_name(dtype_of<T>), " but got ",
           dtype_name(impl_->dtype), " (shape ", impl_->shape, ")");
  return Tensor<T>(impl_);
}

template <class F>
decltype(auto) AnyTensor::visit(F&& f) const {
  DL_CHECK(impl_, "AnyTensor::visit: the tensor is undefined");
  switch (impl_->dtype) {
    case ScalarType::Bool: return f(Tensor<bool>(impl_));
    case ScalarType::UInt8: return f(Tensor<uint8_t>(impl_));
    case ScalarType::Int32: return f(Tensor<int32_t>(impl_));
    case ScalarType::Int64: return f(Tensor<int64_t>(impl_));
    case ScalarType::Float: return f(Tensor<float>(impl_));
    default: return f(Tensor<double>(impl_));
  }
}

template <scalar_type T>
Tensor<T> AnyTensor::to() const {
  return visit([](const auto& t) { return t.template to<T>(); });
}

inline AnyTensor AnyTensor::to(Device device) const {
  return visit([&](const auto& t) { return AnyTensor(t.to(device)); });
}
inline AnyTensor AnyTensor::contiguous() const {
  return visit([](const auto& t) { return AnyTensor(t.contiguous()); });
}
inline AnyTensor AnyTensor::detach() const {
  return visit([](const auto& t) { return AnyTensor(t.detach()); });
}

inline std::ostream& operator<<(std::ostream& os, const AnyTensor& t) {
  if (!t.defined()) return os << "AnyTensor(undefined)";
  return t.visit([&](const auto& typed) -> std::ostream& { return os << typed; });
}

}  // namespace dl
