// dl/tensor/creation.hpp — making tensors: empty, zeros, ones, full, arange, linspace, eye, rand, randn,
// randint, randperm, the *_like forms, dl::tensor<T>({...}) from nested initializer lists (copies)
// and from_blob (wraps user memory without a copy).
#pragma once

#include <cmath>
#include <initializer_list>
#include <numbers>
#include <optional>
#include <vector>

#include "../expr/device.hpp"
#include "../random.hpp"
#include "tensor.hpp"

namespace dl {

// ------------------------------------------------------------------------------ declarations

/// Creation options as libtorch writes them: `dl::ones({2, 2}, dl::requires_grad())` or
/// `dl::ones<double>({2, 2}, {.device = dev, .requires_grad = true})`. dl's tensors are typed, so
/// the element type is the template argument; `dtype`, when given, must agree with it (a ported
/// `{.dtype = dl::kFloat64}` on a float call fails loudly instead of silently making floats).
struct TensorOptions {
  std::optional<ScalarType> dtype = std::nullopt;
  Device device = kCPU;
  bool requires_grad = false;
};
/// Options with only requires_grad set (torch::requires_grad()).
inline TensorOptions requires_grad(bool requires_grad = true) { return {.requires_grad = requires_grad}; }
/// Options with only the dtype set (torch::dtype(torch::kFloat64)); it must match the element type.
inline TensorOptions dtype(ScalarType dtype) { return {.dtype = dtype}; }
/// Options with only the device set (torch::device(torch::kCUDA)).
inline TensorOptions device(Device device) { return {.device = device}; }

// libtorch's dtype constants.
inline constexpr ScalarType kFloat32 = ScalarType::Float, kFloat = ScalarType::Float, kFloat64 = ScalarType::Double,
                            kDouble = ScalarType::Double, kInt64 = ScalarType::Int64, kLong = ScalarType::Int64,
                            kInt32 = ScalarType::Int32, kInt = ScalarType::Int32, kUInt8 = ScalarType::UInt8,
                            kByte = ScalarType::UInt8, kBool = ScalarType::Bool, kFloat16 = ScalarType::Half,
                            kHalf = ScalarType::Half, kBFloat16 = ScalarType::BFloat16;

/// Uninitialised tensor.
template <scalar_type T = float>
Tensor<T> empty(Shape shape, Device device = kCPU);
template <scalar_type T = float>
Tensor<T> zeros(Shape shape, Device device = kCPU);
template <scalar_type T = float>
Tensor<T> ones(Shape shape, Device device = kCPU);
/// Tensor filled with `value`; the element type defaults to int64 for integral values, bool for
/// bool and float otherwise (PyTorch's rules), or is given: dl::full<double>({2}, 1).
template <class T = void, expr::number V>
auto full(Shape shape, V value, Device device = kCPU);
/// Values start, start + step, ... below end. Integral arguments give int64, others float.
template <class T = void, expr::number A, expr::number B, expr::number C = int>
auto arange(A start, B end, C step = 1);
template <class T = void, expr::number B>
auto arange(B end);
/// `steps` values evenly spaced from start to end inclusive.
template <scalar_type T = float>
Tensor<T> linspace(double start, double end, int64_t steps);
/// n x m identity matrix (m defaults to n).
template <scalar_type T = float>
Tensor<T> eye(int64_t n, int64_t m = -1);
/// Uniform in [0, 1).
template <scalar_type T = float>
Tensor<T> rand(Shape shape, Generator* gen = nullptr);
/// Standard normal.
template <scalar_type T = float>
Tensor<T> randn(Shape shape, Generator* gen = nullptr);
/// Integers uniform in [low, high).
template <scalar_type T = int64_t>
Tensor<T> randint(int64_t low, int64_t high, Shape shape, Generator* gen = nullptr);
template <scalar_type T = int64_t>
Tensor<T> randint(int64_t high, Shape shape, Generator* gen = nullptr);
/// A random permutation of 0 .. n-1.
template <scalar_type T = int64_t>
Tensor<T> randperm(int64_t n, Generator* gen = nullptr);
/// A 0-d tensor holding v.
template <scalar_type T>
Tensor<T> scalar_tensor(T v);
/// Wraps memory the caller owns (no copy); `deleter`, if given, runs when the last user lets go.
template <scalar_type T>
Tensor<T> from_blob(T* data, Shape shape, Storage::Deleter deleter = {});
template <scalar_type T>
Tensor<T> from_blob(T* data, Shape shape, Strides strides, Storage::Deleter deleter = {});

template <scalar_type T> Tensor<T> empty_like(const Tensor<T>& t) { return empty<T>(t.shape(), t.device()); }
template <scalar_type T> Tensor<T> zeros_like(const Tensor<T>& t) { return zeros<T>(t.shape(), t.device()); }
template <scalar_type T> Tensor<T> ones_like(const Tensor<T>& t) { return ones<T>(t.shape(), t.device()); }
template <scalar_type T, expr::number V> Tensor<T> full_like(const Tensor<T>& t, V v) { return full<T>(t.shape(), v, t.device()); }
namespace detail {
/// A random tensor of `shape` drawn on a CUDA device by the Philox kernels (dl/cuda/random.hpp),
/// element for element the CPU's values from the same counters; undefined when `device` is the
/// CPU or the program has no .cu file to provide the kernels (the caller then draws on the host
/// and copies: the same values, slower).
template <scalar_type T>
Tensor<T> philox_on_device(RandomKind kind, const Shape& shape, Device device, Generator* gen, double a, double b = 0,
                           int64_t i = 0, uint64_t c = 0) {
  const auto fill = cuda_backend().philox;
  if (!device.is_cuda() || !fill) return {};
  Tensor<T> out = empty<T>(shape, device);
  const int64_t n = out.numel();
  if (n == 0) return out;
  const auto [seed, first] = (gen ? *gen : default_generator()).reserve(philox_blocks(kind, std::is_same_v<T, float>, n));
  fill(int(kind), dtype_of<T>, device.index, seed, first, n, a, b, i, c, out.data_ptr());
  return out;
}
}  // namespace detail

// Random tensors on a device: the same Philox counters as the CPU functions, so manual_seed(s)
// gives the same tensor on every device (drawn by the GPU where a .cu file provides the kernels,
// else on the host and copied). randperm is sequential (Fisher-Yates): drawn on the host.
template <scalar_type T = float>
Tensor<T> rand(Shape shape, Device device, Generator* gen = nullptr) {
  static_assert(floating_scalar<T>, "rand / uniform_ make floating tensors (float, double, dl::Half, dl::BFloat16); random integers: dl::randint");
  if (auto t = detail::philox_on_device<T>(detail::RandomKind::Uniform, shape, device, gen, 0.0, 1.0); t.defined()) return t;
  return rand<T>(shape, gen).to(device);
}
template <scalar_type T = float>
Tensor<T> randn(Shape shape, Device device, Generator* gen = nullptr) {
  static_assert(floating_scalar<T>, "randn / normal_ make floating tensors (float, double, dl::Half, dl::BFloat16); random integers: dl::randint");
  if (auto t = detail::philox_on_device<T>(detail::RandomKind::Normal, shape, device, gen, 0.0, 1.0); t.defined()) return t;
  return randn<T>(shape, gen).to(device);
}
template <scalar_type T = int64_t>
Tensor<T> randint(int64_t low, int64_t high, Shape shape, Device device, Generator* gen = nullptr) {
  DL_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  if (auto t = detail::philox_on_device<T>(detail::RandomKind::Int, shape, device, gen, 0.0, 0.0, low, uint64_t(high - low));
      t.defined())
    return t;
  return randint<T>(low, high, shape, gen).to(device);
}
template <scalar_type T = int64_t>
Tensor<T> randperm(int64_t n, Device device, Generator* gen = nullptr) { return randperm<T>(n, gen).to(device); }

template <scalar_type T> Tensor<T> rand_like(const Tensor<T>& t, Generator* g = nullptr) { return rand<T>(t.shape(), t.device(), g); }
template <scalar_type T> Tensor<T> randn_like(const Tensor<T>& t, Generator* g = nullptr) { return randn<T>(t.shape(), t.device(), g); }
template <scalar_type T> Tensor<T> randint_like(const Tensor<T>& t, int64_t low, int64_t high, Generator* g = nullptr) {
  return randint<T>(low, high, t.shape(), g).to(t.device());
}

// The same with options (device, requires_grad; a dtype must match T).
template <scalar_type T = float>
Tensor<T> empty(Shape shape, const TensorOptions& options);
template <scalar_type T = float>
Tensor<T> zeros(Shape shape, const TensorOptions& options);
template <scalar_type T = float>
Tensor<T> ones(Shape shape, const TensorOptions& options);
template <class T = void, expr::number V>
auto full(Shape shape, V value, const TensorOptions& options);
template <scalar_type T = float>
Tensor<T> eye(int64_t n, const TensorOptions& options);
template <scalar_type T = float>
Tensor<T> eye(int64_t n, int64_t m, const TensorOptions& options);
template <scalar_type T = float>
Tensor<T> rand(Shape shape, const TensorOptions& options);
template <scalar_type T = float>
Tensor<T> randn(Shape shape, const TensorOptions& options);
template <scalar_type T>
Tensor<T> tensor(std::initializer_list<T> values, const TensorOptions& options);
template <scalar_type T>
Tensor<T> tensor(std::initializer_list<std::initializer_list<T>> values, const TensorOptions& options);

// Nested initializer lists, copied: dl::tensor<float>({{1, 2}, {3, 4}}).
template <scalar_type T> Tensor<T> tensor(std::initializer_list<T> values);
template <scalar_type T> Tensor<T> tensor(std::initializer_list<std::initializer_list<T>> values);
template <scalar_type T> Tensor<T> tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> values);
template <scalar_type T>
Tensor<T> tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> values);
/// A 1-d copy of a vector.
template <scalar_type T> Tensor<T> tensor(const std::vector<T>& values);

// ------------------------------------------------------------------------------ implementation

namespace detail {
template <class T>
using default_full_t = std::conditional_t<std::is_same_v<T, bool>, bool, std::conditional_t<std::is_integral_v<T>, int64_t, float>>;
}  // namespace detail

template <scalar_type T>
Tensor<T> empty(Shape shape, Device device) {
  return Tensor<T>(detail::make_impl(dtype_of<T>, shape, device));
}
namespace detail {
/// A fresh tensor filled with v (no in-place bookkeeping: its version stays 0, as in PyTorch).
template <class T>
Tensor<T> filled(const Shape& shape, T v, Device device) {
  Tensor<T> t = empty<T>(shape, device);
  expr::assign(t, expr::Scalar<T>{v});
  return t;
}
}  // namespace detail

template <scalar_type T>
Tensor<T> zeros(Shape shape, Device device) {
  return detail::filled(shape, T(0), device);
}
template <scalar_type T>
Tensor<T> ones(Shape shape, Device device) {
  return detail::filled(shape, T(1), device);
}
template <class T, expr::number V>
auto full(Shape shape, V value, Device device) {
  using R = std::conditional_t<std::is_void_v<T>, detail::default_full_t<V>, T>;
  return detail::filled(shape, R(value), device);
}

template <class T, expr::number A, expr::number B, expr::number C>
auto arange(A start, B end, C step) {
  constexpr bool integral = std::is_integral_v<A> && std::is_integral_v<B> && std::is_integral_v<C>;
  using R = std::conditional_t<std::is_void_v<T>, std::conditional_t<integral, int64_t, float>, T>;
  DL_CHECK(step != 0, "arange: step must be nonzero");
  DL_CHECK(std::isfinite(double(start)) && std::isfinite(double(end)), "arange: unsupported range: ", start, " -> ", end);
  DL_CHECK((step > 0 && end >= start) || (step < 0 && end <= start),
           "arange: upper bound and larger bound inconsistent with step sign (start ", start, ", end ", end, ", step ", step, ")");
  int64_t n;
  if constexpr (integral) {
    const int64_t s = int64_t(start), e = int64_t(end), st = int64_t(step);
    n = st > 0 ? (e - s + st - 1) / st : (s - e - st - 1) / -st;
  } else {
    n = int64_t(std::ceil((double(end) - double(start)) / double(step)));
  }
  Tensor<R> out = empty<R>({n});
  R* p = out.data();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (integral) p[i] = R(int64_t(start) + i * int64_t(step));
    else p[i] = R(double(start) + double(step) * double(i));
  }
  return out;
}
template <class T, expr::number B>
auto arange(B end) {
  return arange<T>(B(0), end, 1);
}

template <scalar_type T>
Tensor<T> linspace(double start, double end, int64_t steps) {
  DL_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  Tensor<T> out = empty<T>({steps});
  T* p = out.data();
  if (steps == 1) p[0] = T(start);
  if (steps > 1) {
    // Symmetric evaluation (from both ends), as PyTorch does, so the end point is exact.
    const double step = (end - start) / double(steps - 1);
    const int64_t half = steps / 2;
    for (int64_t i = 0; i < steps; ++i)
      p[i] = i < half ? T(start + step * double(i)) : T(end - step * double(steps - i - 1));
  }
  return out;
}

template <scalar_type T>
Tensor<T> eye(int64_t n, int64_t m) {
  if (m < 0) m = n;
  DL_CHECK(n >= 0, "eye: n must be greater or equal to 0, got ", n);
  Tensor<T> out = zeros<T>({n, m});
  for (int64_t i = 0; i < std::min(n, m); ++i) out.data()[i * m + i] = T(1);
  return out;
}

namespace detail {
template <class T>
void fill_uniform(T* p, int64_t n, double from, double to, Generator* gen) {
  static_assert(floating_scalar<T>, "rand / uniform_ make floating tensors (float, double, dl::Half, dl::BFloat16); random integers: dl::randint");
  const double range = to - from;
  if constexpr (std::is_same_v<T, float>) {
    philox_fill(gen, n, 4, [&](int64_t i, const uint32_t* w) { p[i] = float(from + range * uniform_float(w[0])); });
  } else {
    philox_fill(gen, n, 2, [&](int64_t i, const uint32_t* w) { p[i] = from + range * uniform_double(w[0], w[1]); });
  }
}
template <class T>
void fill_normal(T* p, int64_t n, double mean, double std, Generator* gen) {
  static_assert(floating_scalar<T>, "randn / normal_ make floating tensors (float, double, dl::Half, dl::BFloat16); random integers: dl::randint");
  // Box-Muller: each pair of uniforms gives two normals.
  const int64_t pairs = (n + 1) / 2;
  auto emit = [&](int64_t i, double u1, double u2) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - u1)), th = 2.0 * std::numbers::pi * u2;
    p[2 * i] = T(mean + std * r * std::cos(th));
    if (2 * i + 1 < n) p[2 * i + 1] = T(mean + std * r * std::sin(th));
  };
  if constexpr (std::is_same_v<T, float>)
    philox_fill(gen, pairs, 2, [&](int64_t i, const uint32_t* w) { emit(i, uniform_float(w[0]), uniform_float(w[1])); });
  else
    philox_fill(gen, pairs, 1, [&](int64_t i, const uint32_t* w) { emit(i, uniform_double(w[0], w[1]), uniform_double(w[2], w[3])); });
}
}  // namespace detail

template <scalar_type T>
Tensor<T> rand(Shape shape, Generator* gen) {
  Tensor<T> out = empty<T>(shape);
  detail::fill_uniform(out.data(), out.numel(), 0.0, 1.0, gen);
  return out;
}
template <scalar_type T>
Tensor<T> randn(Shape shape, Generator* gen) {
  Tensor<T> out = empty<T>(shape);
  detail::fill_normal(out.data(), out.numel(), 0.0, 1.0, gen);
  return out;
}
template <scalar_type T>
Tensor<T> randint(int64_t low, int64_t high, Shape shape, Generator* gen) {
  DL_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
  Tensor<T> out = empty<T>(shape);
  T* p = out.data();
  const uint64_t range = uint64_t(high - low);
  detail::philox_fill(gen, out.numel(), 2, [&](int64_t i, const uint32_t* w) {
    const uint64_t r = (uint64_t(w[0]) << 32) | w[1];
    p[i] = T(low + int64_t(r % range));
  });
  return out;
}
template <scalar_type T>
Tensor<T> randint(int64_t high, Shape shape, Generator* gen) {
  return randint<T>(0, high, shape, gen);
}
template <scalar_type T>
Tensor<T> randperm(int64_t n, Generator* gen) {
  DL_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  Tensor<T> out = empty<T>({n});
  T* p = out.data();
  for (int64_t i = 0; i < n; ++i) p[i] = T(i);
  if (n < 2) return out;
  auto [seed, first] = (gen ? *gen : default_generator()).reserve(uint64_t(n));
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates, one Philox block per step
    const auto w = detail::Philox::generate(seed, first + uint64_t(i));
    const uint64_t r = (uint64_t(w[0]) << 32) | w[1];
    std::swap(p[i], p[int64_t(r % uint64_t(i + 1))]);
  }
  return out;
}

template <scalar_type T>
Tensor<T> scalar_tensor(T v) {
  Tensor<T> out = empty<T>({});
  *out.data() = v;
  return out;
}

template <scalar_type T>
Tensor<T> from_blob(T* data, Shape shape, Strides strides, Storage::Deleter deleter) {
  DL_CHECK(strides.size() == shape.size(), "from_blob: ", shape.size(), "-d shape ", shape, " with ", strides.size(), " strides ", strides);
  int64_t extent = 1;
  bool empty_tensor = false;
  for (int d = 0; d < shape.size(); ++d) {
    DL_CHECK(shape[d] >= 0 && strides[d] >= 0, "from_blob: negative size or stride in shape ", shape, " strides ", strides);
    if (shape[d] == 0) empty_tensor = true;
    extent += (shape[d] - 1) * strides[d];
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(data, empty_tensor ? 0 : size_t(extent) * sizeof(T), kCPU, std::move(deleter));
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = dtype_of<T>;
  return Tensor<T>(impl);
}
template <scalar_type T>
Tensor<T> from_blob(T* data, Shape shape, Storage::Deleter deleter) {
  return from_blob(data, shape, contiguous_strides(shape), std::move(deleter));
}

// ---- options

namespace detail {
template <class T>
constexpr const char* cpp_type_name() {
  return std::is_same_v<T, float> ? "float" : std::is_same_v<T, double> ? "double" : std::is_same_v<T, int64_t> ? "int64_t"
       : std::is_same_v<T, int32_t> ? "int32_t" : std::is_same_v<T, uint8_t> ? "uint8_t"
       : std::is_same_v<T, Half> ? "dl::Half" : std::is_same_v<T, BFloat16> ? "dl::BFloat16" : "bool";
}
template <class T>
void check_options(const TensorOptions& o, const char* what) {
  if (o.dtype && *o.dtype != dtype_of<T>) {
    const char* want = "float";
    switch (*o.dtype) {
      case ScalarType::Bool: want = "bool"; break;
      case ScalarType::UInt8: want = "uint8_t"; break;
      case ScalarType::Int32: want = "int32_t"; break;
      case ScalarType::Int64: want = "int64_t"; break;
      case ScalarType::Float: want = "float"; break;
      case ScalarType::Double: want = "double"; break;
      case ScalarType::Half: want = "dl::Half"; break;
      case ScalarType::BFloat16: want = "dl::BFloat16"; break;
    }
    throw Error(cat(what, ": the options ask for dtype ", dtype_name(*o.dtype), " but the tensor type is Tensor<",
                    cpp_type_name<T>(), ">; dl's element type is a template argument: dl::", what, "<", want, ">(...)"));
  }
}
/// t on the options' device, with their requires_grad applied. Functions that fill on the host
/// (rand, randn, eye, tensor) copy to the device here, so a seed gives the same values everywhere.
template <class T>
Tensor<T> with_options(Tensor<T> t, const TensorOptions& o) {
  if (t.device() != o.device) t = t.to(o.device);
  if (o.requires_grad) t.requires_grad_();
  return t;
}
}  // namespace detail

template <scalar_type T>
Tensor<T> empty(Shape shape, const TensorOptions& o) {
  detail::check_options<T>(o, "empty");
  return detail::with_options(empty<T>(shape, o.device), o);
}
template <scalar_type T>
Tensor<T> zeros(Shape shape, const TensorOptions& o) {
  detail::check_options<T>(o, "zeros");
  return detail::with_options(zeros<T>(shape, o.device), o);
}
template <scalar_type T>
Tensor<T> ones(Shape shape, const TensorOptions& o) {
  detail::check_options<T>(o, "ones");
  return detail::with_options(ones<T>(shape, o.device), o);
}
template <class T, expr::number V>
auto full(Shape shape, V value, const TensorOptions& o) {
  auto t = full<T>(shape, value, o.device);
  detail::check_options<typename decltype(t)::value_type>(o, "full");
  return detail::with_options(t, o);
}
template <scalar_type T>
Tensor<T> eye(int64_t n, const TensorOptions& o) {
  return eye<T>(n, n, o);
}
template <scalar_type T>
Tensor<T> eye(int64_t n, int64_t m, const TensorOptions& o) {
  detail::check_options<T>(o, "eye");
  return detail::with_options(eye<T>(n, m), o);
}
template <scalar_type T>
Tensor<T> rand(Shape shape, const TensorOptions& o) {
  detail::check_options<T>(o, "rand");
  return detail::with_options(rand<T>(shape), o);
}
template <scalar_type T>
Tensor<T> randn(Shape shape, const TensorOptions& o) {
  detail::check_options<T>(o, "randn");
  return detail::with_options(randn<T>(shape), o);
}

// ---- Tensor::new_* (declared in dl/tensor.hpp)

template <scalar_type T>
template <scalar_type U>
Tensor<U> Tensor<T>::new_empty(Shape shape) const {
  return empty<U>(shape, device());
}
template <scalar_type T>
template <scalar_type U>
Tensor<U> Tensor<T>::new_zeros(Shape shape) const {
  return zeros<U>(shape, device());
}
template <scalar_type T>
template <scalar_type U>
Tensor<U> Tensor<T>::new_ones(Shape shape) const {
  return ones<U>(shape, device());
}
template <scalar_type T>
template <scalar_type U, expr::number V>
Tensor<U> Tensor<T>::new_full(Shape shape, V value) const {
  return full<U>(shape, value, device());
}

namespace detail {
// Shapes and flattening of nested initializer lists.
template <class T>
void nested_shape(const T&, Shape&, int) {}
template <class T>
void nested_shape(std::initializer_list<T> l, Shape& s, int depth) {
  if (s.size() <= depth) {
    s.push_back(int64_t(l.size()));
    if (l.size()) nested_shape(*l.begin(), s, depth + 1);
  }
}
template <class T, class U>
void nested_copy(const U& v, const Shape&, int, T*& out) {
  *out++ = T(v);
}
template <class T, class U>
void nested_copy(std::initializer_list<U> l, const Shape& s, int depth, T*& out) {
  DL_CHECK(int64_t(l.size()) == s[depth], "tensor: ragged nested list: expected sequence of length ", s[depth],
           " at dim ", depth, " (got ", l.size(), ")");
  for (const auto& x : l) nested_copy(x, s, depth + 1, out);
}
template <class T, class L>
Tensor<T> from_nested(const L& l) {
  Shape s;
  nested_shape(l, s, 0);
  Tensor<T> out = empty<T>(s);
  T* p = out.data();
  nested_copy(l, s, 0, p);
  return out;
}
}  // namespace detail

template <scalar_type T> Tensor<T> tensor(std::initializer_list<T> v) { return detail::from_nested<T>(v); }
template <scalar_type T> Tensor<T> tensor(std::initializer_list<std::initializer_list<T>> v) { return detail::from_nested<T>(v); }
template <scalar_type T>
Tensor<T> tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v) {
  return detail::from_nested<T>(v);
}
template <scalar_type T>
Tensor<T> tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> v) {
  return detail::from_nested<T>(v);
}
template <scalar_type T>
Tensor<T> tensor(std::initializer_list<T> v, const TensorOptions& o) {
  detail::check_options<T>(o, "tensor");
  return detail::with_options(detail::from_nested<T>(v), o);
}
template <scalar_type T>
Tensor<T> tensor(std::initializer_list<std::initializer_list<T>> v, const TensorOptions& o) {
  detail::check_options<T>(o, "tensor");
  return detail::with_options(detail::from_nested<T>(v), o);
}
template <scalar_type T>
Tensor<T> tensor(const std::vector<T>& v) {
  Tensor<T> out = empty<T>({int64_t(v.size())});
  std::copy(v.begin(), v.end(), out.data());
  return out;
}

}  // namespace dl
