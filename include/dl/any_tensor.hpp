// dl/any_tensor.hpp — dl::AnyTensor: a tensor handle whose element type is a run-time value, for
// the places where tensors of several dtypes travel together (state dicts, module buffers, hooks).
//
//   dl::AnyTensor a = dl::zeros<int64_t>({});      // any Tensor<T> converts
//   if (a.is<int64_t>()) a.as<int64_t>().fill_(3);  // typed access, checked
#pragma once

#include <concepts>
#include <cstring>
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
  /// A copy converted to a dtype tag's element type: libtorch's x.to(torch::kFloat) (dl/torch.hpp).
  template <class Tag>
    requires requires { typename Tag::dl_element_type; }
  Tensor<typename Tag::dl_element_type> to(Tag) const {
    return to<typename Tag::dl_element_type>();
  }
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

/// Prints as the typed tensor does (a template, so that the six printers compile only where used).
template <class A>
  requires std::same_as<A, AnyTensor>
std::ostream& operator<<(std::ostream& os, const A& t);

namespace detail {
/// dst <- src, same shape and dtype, any strides, element by element as bytes (no typed kernels:
/// generic code over AnyTensor stays cheap to compile).
void copy_bytes(const TensorImpl& dst, const TensorImpl& src);
/// Sets every element of t to zero bits (0 for every dtype), in place; bumps its version.
void zero_bytes(const TensorImpl& t);
}  // namespace detail

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
    case ScalarType::Half: return f(Tensor<Half>(impl_));
    case ScalarType::BFloat16: return f(Tensor<BFloat16>(impl_));
    default: return f(Tensor<double>(impl_));
  }
}

template <scalar_type T>
Tensor<T> AnyTensor::to() const {
  return visit([](const auto& t) { return t.template to<T>(); });
}

inline AnyTensor AnyTensor::to(Device device) const {
  DL_CHECK(impl_, "AnyTensor::to: the tensor is undefined");
  if (device == this->device()) return *this;
  throw Error(detail::cat("to(", device, "): dl was built without CUDA support; include <dl/cuda.hpp> in a CUDA-enabled build"));
}

inline AnyTensor AnyTensor::contiguous() const {
  DL_CHECK(impl_, "AnyTensor::contiguous: the tensor is undefined");
  if (dl::is_contiguous(impl_->shape, impl_->strides)) return *this;
  AnyTensor out(detail::make_impl(impl_->dtype, impl_->shape, device()));
  detail::copy_bytes(*out.impl_, *impl_);
  return out;
}

inline AnyTensor AnyTensor::detach() const {
  DL_CHECK(impl_, "AnyTensor::detach: the tensor is undefined");
  auto v = std::make_shared<TensorImpl>();
  v->storage = impl_->storage;
  v->shape = impl_->shape;
  v->strides = impl_->strides;
  v->offset = impl_->offset;
  v->dtype = impl_->dtype;
  return AnyTensor(v);
}

template <class A>
  requires std::same_as<A, AnyTensor>
std::ostream& operator<<(std::ostream& os, const A& t) {
  if (!t.defined()) return os << "AnyTensor(undefined)";
  return t.visit([&](const auto& typed) -> std::ostream& { return os << typed; });
}

namespace detail {
inline void zero_bytes(const TensorImpl& t) {
  DL_CHECK(t.storage->device().is_cpu(), "zero_bytes: CPU tensors only");
  const int64_t es = int64_t(element_size(t.dtype)), n = numel(t.shape);
  char* d = static_cast<char*>(t.data());
  if (is_contiguous(t.shape, t.strides)) {
    std::memset(d, 0, size_t(n * es));
  } else {
    Dims idx = Dims::filled(t.shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t o = 0;
      for (int i = 0; i < t.shape.size(); ++i) o += idx[i] * t.strides[i];
      std::memset(d + o * es, 0, size_t(es));
      for (int i = t.shape.size() - 1; i >= 0 && ++idx[i] == t.shape[i]; --i) idx[i] = 0;
    }
  }
  t.storage->bump_version();
}

inline void copy_bytes(const TensorImpl& dst, const TensorImpl& src) {
  DL_CHECK(dst.shape == src.shape && dst.dtype == src.dtype, "copy_bytes: ", dtype_name(src.dtype), " ", src.shape, " into ",
           dtype_name(dst.dtype), " ", dst.shape);
  DL_CHECK(dst.storage->device().is_cpu() && src.storage->device().is_cpu(), "copy_bytes: CPU tensors only");
  const int64_t es = int64_t(element_size(dst.dtype)), n = numel(dst.shape);
  if (n == 0) return;
  char* d = static_cast<char*>(dst.data());
  const char* p = static_cast<const char*>(src.data());
  if (is_contiguous(dst.shape, dst.strides) && is_contiguous(src.shape, src.strides)) {
    std::memcpy(d, p, size_t(n * es));
    return;
  }
  // Rows along the last dim, each row a strided run.
  const int nd = dst.shape.size();
  const int64_t inner = nd ? dst.shape[nd - 1] : 1, dsi = nd ? dst.strides[nd - 1] : 0, ssi = nd ? src.strides[nd - 1] : 0;
  Dims idx = Dims::filled(std::max(nd - 1, 0), 0);
  for (int64_t row = 0; row < n / std::max<int64_t>(inner, 1); ++row) {
    int64_t od = 0, os = 0;
    for (int i = 0; i + 1 < nd; ++i) od += idx[i] * dst.strides[i], os += idx[i] * src.strides[i];
    for (int64_t k = 0; k < inner; ++k) std::memcpy(d + (od + k * dsi) * es, p + (os + k * ssi) * es, size_t(es));
    for (int i = nd - 2; i >= 0 && ++idx[i] == dst.shape[i]; --i) idx[i] = 0;
  }
}
}  // namespace detail

}  // namespace dl
