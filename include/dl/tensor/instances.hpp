// dl/tensor/instances.hpp — what compiled mode takes out of a user's translation unit at the tensor
// level (see DL_EXTERN_TEMPLATE in dl/config.hpp): the Tensor<T> classes of the common element
// types, every single-op expression of tensors and numbers (x * 2, a + b, relu(x), x == y, casts)
// and the reductions of tensors (sum, mean, max, argmax...). A user's fused expression of two or more
// ops is still compiled where it is written: that is the fused engine's point.
// Included last by dl/tensor.hpp; in header-only mode it declares nothing.
#pragma once

#include "../config.hpp"

#if defined(DL_COMPILED_KERNELS)

// The element types whose Tensor<T> class libdl_kernels holds. src/tensor.cpp instantiates each at
// its end, after every header that defines a member (views, in-place ops, indexing, sorting...).
#define DL_TENSOR_TYPES(X) X(float) X(double) X(int64_t) X(bool)

#if !defined(DL_EXTERN_TENSOR_DEFINITIONS)
namespace dl {
#define DL_EXTERN_TENSOR_CLASS(T) extern template class Tensor<T>;
DL_TENSOR_TYPES(DL_EXTERN_TENSOR_CLASS)
#undef DL_EXTERN_TENSOR_CLASS
}  // namespace dl
#endif

// Single-op expressions, evaluated by Tensor's converting constructor: the functors of dl/expr/ops.hpp
// (dl/nn/functional/activation.hpp lists the activations').
#define DL_UNARY_FLOAT_OPS(X, T)                                                                           \
  X(T, Neg) X(T, Copy) X(T, Abs) X(T, Sign) X(T, Floor) X(T, Ceil) X(T, Trunc) X(T, Round) X(T, Exp)      \
  X(T, Expm1) X(T, Log) X(T, Log1p) X(T, Log2) X(T, Log10) X(T, Sqrt) X(T, Sin) X(T, Cos) X(T, Tan)       \
  X(T, Asin) X(T, Acos) X(T, Atan) X(T, Sinh) X(T, Cosh) X(T, Tanh) X(T, Erf) X(T, Rsqrt) X(T, Sigmoid)    \
  X(T, Reciprocal) X(T, Relu) X(T, Square) X(T, Clamp<T>)
#define DL_BINARY_FLOAT_OPS(X, T) X(T, Add) X(T, Sub) X(T, Mul) X(T, Div) X(T, Maximum) X(T, Minimum) X(T, Pow)
#define DL_COMPARE_OPS(X, T) X(T, Eq) X(T, Ne) X(T, Lt) X(T, Le) X(T, Gt) X(T, Ge)

// One single-op expression of a T tensor (also used by dl/nn/functional/activation.hpp).
#define DL_EXTERN_UNARY(T, Op) \
  DL_EXTERN_TEMPLATE(unary, dl::Tensor<T>::Tensor(const dl::expr::Apply<dl::expr::Op, dl::expr::Leaf<T>>&, dl::SourceLocation))
#define DL_EXTERN_BINARY(T, Op)                                                                                     \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>::Tensor(const dl::expr::Apply<dl::expr::Op, dl::expr::Leaf<T>, dl::expr::Leaf<T>>&, \
                                                 dl::SourceLocation))                                              \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>::Tensor(                                                                  \
                               const dl::expr::Apply<dl::expr::Op, dl::expr::Leaf<T>, dl::expr::Scalar<T>>&, dl::SourceLocation)) \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>::Tensor(                                                                  \
                               const dl::expr::Apply<dl::expr::Op, dl::expr::Scalar<T>, dl::expr::Leaf<T>>&, dl::SourceLocation))
#define DL_EXTERN_COMPARE(T, Op)                                                                                         \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<bool>::Tensor(                                                                    \
                               const dl::expr::Apply<dl::expr::Op, dl::expr::Leaf<T>, dl::expr::Leaf<T>>&, dl::SourceLocation)) \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<bool>::Tensor(                                                                    \
                               const dl::expr::Apply<dl::expr::Op, dl::expr::Leaf<T>, dl::expr::Scalar<T>>&, dl::SourceLocation))
#define DL_EXTERN_CAST(From, To)                                                                                          \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<To>::Tensor(const dl::expr::Apply<dl::expr::Cast<To>, dl::expr::Leaf<From>>&, \
                                                  dl::SourceLocation))

// float: every op. double (tests, numerics), int64_t (labels, indices) and bool: the common ones.
DL_UNARY_FLOAT_OPS(DL_EXTERN_UNARY, float)
DL_BINARY_FLOAT_OPS(DL_EXTERN_BINARY, float)
DL_COMPARE_OPS(DL_EXTERN_COMPARE, float)
DL_EXTERN_UNARY(double, Copy)
DL_EXTERN_UNARY(double, Neg)
DL_EXTERN_BINARY(double, Add)
DL_EXTERN_BINARY(double, Sub)
DL_EXTERN_BINARY(double, Mul)
DL_EXTERN_BINARY(double, Div)
DL_EXTERN_UNARY(int64_t, Copy)
DL_EXTERN_UNARY(bool, Copy)
DL_EXTERN_COMPARE(int64_t, Eq)
DL_EXTERN_COMPARE(int64_t, Ne)
DL_EXTERN_CAST(float, double)
DL_EXTERN_CAST(double, float)
DL_EXTERN_CAST(float, int64_t)
DL_EXTERN_CAST(int64_t, float)
DL_EXTERN_CAST(int64_t, double)
DL_EXTERN_CAST(bool, float)
DL_EXTERN_CAST(bool, int64_t)
DL_EXTERN_CAST(uint8_t, float)

// In-place ops with a tensor or a number of the same type (x.copy_(y), x.add_(y), x.mul_(2)...).
#define DL_EXTERN_INPLACE(T)                                                                    \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>& dl::Tensor<T>::copy_(const dl::Tensor<T>&))       \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>& dl::Tensor<T>::add_(const dl::Tensor<T>&))        \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>& dl::Tensor<T>::sub_(const dl::Tensor<T>&))        \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>& dl::Tensor<T>::mul_(const dl::Tensor<T>&))        \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>& dl::Tensor<T>::div_(const dl::Tensor<T>&))        \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>& dl::Tensor<T>::add_(const T&))                    \
  DL_EXTERN_TEMPLATE(binary, dl::Tensor<T>& dl::Tensor<T>::mul_(const T&))
DL_EXTERN_INPLACE(float)
DL_EXTERN_INPLACE(double)
DL_EXTERN_TEMPLATE(binary, dl::Tensor<int64_t>& dl::Tensor<int64_t>::copy_(const dl::Tensor<int64_t>&))
DL_EXTERN_TEMPLATE(binary, dl::Tensor<int64_t>& dl::Tensor<int64_t>::add_(const int64_t&))
#undef DL_EXTERN_INPLACE

// Reductions of tensors (dl/expr/boundaries.hpp's functions with E = Tensor<T>).
#define DL_EXTERN_REDUCTIONS(T)                                                                                  \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<dl::sum_t<T>> dl::sum(const dl::Tensor<T>&))                               \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<dl::sum_t<T>> dl::sum(const dl::Tensor<T>&, dl::Dims, bool))               \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<dl::sum_t<T>> dl::sum(const dl::Tensor<T>&, int64_t, bool))                \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<dl::sum_t<T>> dl::prod(const dl::Tensor<T>&))                              \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<dl::sum_t<T>> dl::prod(const dl::Tensor<T>&, int64_t, bool))               \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::max(const dl::Tensor<T>&))                                          \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::min(const dl::Tensor<T>&))                                          \
  DL_EXTERN_TEMPLATE(reduce, dl::MaxResult<T> dl::max(const dl::Tensor<T>&, int64_t, bool))                        \
  DL_EXTERN_TEMPLATE(reduce, dl::MaxResult<T> dl::min(const dl::Tensor<T>&, int64_t, bool))                        \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::amax(const dl::Tensor<T>&, dl::Dims, bool))                         \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::amin(const dl::Tensor<T>&, dl::Dims, bool))                         \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<int64_t> dl::argmax(const dl::Tensor<T>&))                                 \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<int64_t> dl::argmax(const dl::Tensor<T>&, int64_t, bool))                  \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<int64_t> dl::argmin(const dl::Tensor<T>&))                                 \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<int64_t> dl::argmin(const dl::Tensor<T>&, int64_t, bool))
#define DL_EXTERN_FLOAT_REDUCTIONS(T)                                                                            \
  DL_EXTERN_REDUCTIONS(T)                                                                                        \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::mean(const dl::Tensor<T>&))                                         \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::mean(const dl::Tensor<T>&, dl::Dims, bool))                         \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::mean(const dl::Tensor<T>&, int64_t, bool))                          \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::var(const dl::Tensor<T>&, dl::Dims, bool, bool))                    \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::std(const dl::Tensor<T>&, dl::Dims, bool, bool))                    \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::norm(const dl::Tensor<T>&, double, dl::Dims, bool))                 \
  DL_EXTERN_TEMPLATE(reduce, dl::Tensor<T> dl::logsumexp(const dl::Tensor<T>&, dl::Dims, bool))

DL_EXTERN_FLOAT_REDUCTIONS(float)
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<double> dl::sum(const dl::Tensor<double>&))
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<double> dl::mean(const dl::Tensor<double>&))
DL_EXTERN_REDUCTIONS(int64_t)
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<int64_t> dl::sum(const dl::Tensor<bool>&))
// Counting matches, the accuracy of a classifier: dl::sum(logits.argmax(1) == labels).
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<int64_t> dl::sum(
                               const dl::expr::Apply<dl::expr::Eq, dl::expr::Leaf<int64_t>, dl::expr::Leaf<int64_t>>&))
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<bool> dl::all(const dl::Tensor<bool>&))
DL_EXTERN_TEMPLATE(reduce, dl::Tensor<bool> dl::any(const dl::Tensor<bool>&))

// where(mask, x, y): relu's and clamp's derivatives, masked selections.
DL_EXTERN_TEMPLATE(binary, dl::Tensor<float>::Tensor(const dl::expr::Apply<dl::expr::Where, dl::expr::Leaf<bool>, dl::expr::Leaf<float>,
                                                                           dl::expr::Scalar<float>>&,
                                                     dl::SourceLocation))
DL_EXTERN_TEMPLATE(binary, dl::Tensor<float>::Tensor(const dl::expr::Apply<dl::expr::Where, dl::expr::Leaf<bool>, dl::expr::Leaf<float>,
                                                                           dl::expr::Leaf<float>>&,
                                                     dl::SourceLocation))
#undef DL_EXTERN_BINARY
#undef DL_EXTERN_COMPARE
#undef DL_EXTERN_CAST
#undef DL_EXTERN_REDUCTIONS
#undef DL_EXTERN_FLOAT_REDUCTIONS

#endif  // DL_COMPILED_KERNELS
