// dl/data/collate.hpp — default_collate: turns a vector of samples into a batch. Tensors are
// stacked along a new first dimension, numbers become 1-d tensors, and pairs, tuples, arrays,
// vectors, maps and plain structs are collated field by field (the "data collator" idea).
#pragma once

#include <array>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../tensor.hpp"

namespace dl::data {

// ------------------------------------------------------------------------------ declarations

/// PyTorch's default_collate as a function object: default_collate(std::vector<Sample>) -> Batch.
/// Batches are plain tensors (no autograd history).
struct DefaultCollate {
  template <class S>
  auto operator()(const std::vector<S>& samples) const;
};
inline constexpr DefaultCollate default_collate{};

/// The batch type default_collate makes of samples of type S:
///   Tensor<T> [shape]         -> Tensor<T> [B, shape...]  (all samples must have one shape)
///   float / double            -> Tensor<float> / Tensor<double> [B]
///   bool / uint8_t            -> Tensor<bool> / Tensor<uint8_t> [B]
///   other integers            -> Tensor<int64_t> [B]   (PyTorch's rule for Python ints)
///   std::string               -> std::vector<std::string>
///   std::pair / std::tuple / std::array / std::vector / std::map  -> the same shape of batches
///   an aggregate struct S     -> S::batch_type if S declares one (aggregate-initialised from the
///                                collated fields in order), else S itself when collating leaves
///                                every field's type unchanged (all fields tensors), else a
///                                std::tuple of the collated fields.
template <class S>
using collate_t = std::remove_cvref_t<decltype(DefaultCollate{}(std::declval<const std::vector<S>&>()))>;

// ------------------------------------------------------------------------------ implementation

namespace detail {

// Field reflection for plain aggregates: the number of fields is the largest N for which
// S{x1, ..., xN} compiles with xi convertible to anything; the fields are bound by a structured
// binding of that size.
struct any_field {
  template <class T>
  operator T() const;  // declared only: used in unevaluated contexts
};

template <class S, size_t... I>
constexpr bool brace_constructible(std::index_sequence<I...>) {
  return requires { S{(void(I), any_field{})...}; };
}

inline constexpr size_t kMaxCollateFields = 12;

template <class S>
constexpr size_t field_count() {
  size_t n = 0;
  [&]<size_t... N>(std::index_sequence<N...>) {
    ((brace_constructible<S>(std::make_index_sequence<N + 1>{}) ? (n = N + 1) : 0), ...);
  }(std::make_index_sequence<kMaxCollateFields>{});
  return n;
}

/// References to the public fields of a plain struct (const or not, as s).
template <class S>
auto tie_fields(S& s) {
  constexpr size_t n = field_count<std::remove_const_t<S>>();
  static_assert(n >= 1 && n <= kMaxCollateFields,
                "default_collate: cannot see the fields of this struct (it needs 1 to 12 public fields and no base "
                "classes); pass a collate_fn to the DataLoader");
  // clang-format off
  if constexpr (n == 1) { auto& [a] = s; return std::tie(a); }
  else if constexpr (n == 2) { auto& [a, b] = s; return std::tie(a, b); }
  else if constexpr (n == 3) { auto& [a, b, c] = s; return std::tie(a, b, c); }
  else if constexpr (n == 4) { auto& [a, b, c, d] = s; return std::tie(a, b, c, d); }
  else if constexpr (n == 5) { auto& [a, b, c, d, e] = s; return std::tie(a, b, c, d, e); }
  else if constexpr (n == 6) { auto& [a, b, c, d, e, f] = s; return std::tie(a, b, c, d, e, f); }
  else if constexpr (n == 7) { auto& [a, b, c, d, e, f, g] = s; return std::tie(a, b, c, d, e, f, g); }
  else if constexpr (n == 8) { auto& [a, b, c, d, e, f, g, h] = s; return std::tie(a, b, c, d, e, f, g, h); }
  else if constexpr (n == 9) { auto& [a, b, c, d, e, f, g, h, i] = s; return std::tie(a, b, c, d, e, f, g, h, i); }
  else if constexpr (n == 10) { auto& [a, b, c, d, e, f, g, h, i, j] = s; return std::tie(a, b, c, d, e, f, g, h, i, j); }
  else if constexpr (n == 11) { auto& [a, b, c, d, e, f, g, h, i, j, k] = s; return std::tie(a, b, c, d, e, f, g, h, i, j, k); }
  else { auto& [a, b, c, d, e, f, g, h, i, j, k, l] = s; return std::tie(a, b, c, d, e, f, g, h, i, j, k, l); }
  // clang-format on
}

template <class T> inline constexpr bool is_tensor_sample = false;
template <class T> inline constexpr bool is_tensor_sample<Tensor<T>> = true;
template <class T> inline constexpr bool is_pair = false;
template <class A, class B> inline constexpr bool is_pair<std::pair<A, B>> = true;
template <class T> inline constexpr bool is_tuple = false;
template <class... A> inline constexpr bool is_tuple<std::tuple<A...>> = true;
template <class T> inline constexpr bool is_std_array = false;
template <class A, size_t N> inline constexpr bool is_std_array<std::array<A, N>> = true;
template <class T> inline constexpr bool is_vector = false;
template <class A, class Al> inline constexpr bool is_vector<std::vector<A, Al>> = true;
template <class T> inline constexpr bool is_map = false;
template <class K, class V, class C, class Al> inline constexpr bool is_map<std::map<K, V, C, Al>> = true;

template <class T>
using number_batch_t = std::conditional_t<
    std::is_same_v<T, bool>, bool,
    std::conditional_t<std::is_same_v<T, uint8_t>, uint8_t,
                       std::conditional_t<std::is_same_v<T, float>, float,
                                          std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>>>;

template <class T>
concept has_batch_type = requires { typename T::batch_type; };

template <class>
inline constexpr bool always_false = false;

/// Stacks get(0), ..., get(n-1) (tensors of one shape) into a new tensor [n, shape...].
template <class T, class Get>
Tensor<T> stack_samples(int64_t n, Get get) {
  DL_CHECK(n > 0, "default_collate: cannot collate an empty list of samples");
  const Tensor<T>& first = get(0);
  DL_CHECK(first.defined(), "default_collate: entry 0 is an undefined tensor");
  const Shape s = first.shape();
  Shape out_shape{n};
  for (int64_t d : s) out_shape.push_back(d);
  Tensor<T> out = empty<T>(out_shape);
  const int64_t m = first.numel();
  T* dst = out.data();
  for (int64_t j = 0; j < n; ++j) {
    const Tensor<T>& t = get(j);
    DL_CHECK(t.defined(), "default_collate: entry ", j, " is an undefined tensor");
    DL_CHECK(t.shape() == s, "default_collate: stack expects each tensor to be equal size, but got ", s,
             " at entry 0 and ", t.shape(), " at entry ", j);
    DL_CHECK(t.device().is_cpu(), "default_collate: entry ", j, " is on ", t.device(), "; collation works on CPU tensors");
    if (t.is_contiguous()) std::memcpy(dst + j * m, t.data(), size_t(m) * sizeof(T));
    else out.select(0, j).copy_(t);
  }
  return out;
}

/// Collates the n values get(0), ..., get(n-1), each a const reference to an X.
template <class Get>
auto collate_impl(int64_t n, Get get) {
  using X = std::remove_cvref_t<decltype(get(int64_t{}))>;
  if constexpr (is_tensor_sample<X>) {
    return stack_samples<typename X::value_type>(n, get);
  } else if constexpr (std::is_arithmetic_v<X>) {
    using R = number_batch_t<X>;
    Tensor<R> out = empty<R>({n});
    R* p = out.data();
    for (int64_t j = 0; j < n; ++j) p[j] = R(get(j));
    return out;
  } else if constexpr (std::is_same_v<X, std::string>) {
    std::vector<std::string> out;
    out.reserve(size_t(n));
    for (int64_t j = 0; j < n; ++j) out.push_back(get(j));
    return out;
  } else if constexpr (is_pair<X>) {
    auto first = collate_impl(n, [&](int64_t j) -> const auto& { return get(j).first; });
    auto second = collate_impl(n, [&](int64_t j) -> const auto& { return get(j).second; });
    return std::pair<decltype(first), decltype(second)>{std::move(first), std::move(second)};
  } else if constexpr (is_tuple<X>) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple{collate_impl(n, [&](int64_t j) -> const auto& { return std::get<I>(get(j)); })...};
    }(std::make_index_sequence<std::tuple_size_v<X>>{});
  } else if constexpr (is_std_array<X>) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::array{collate_impl(n, [&](int64_t j) -> const auto& { return get(j)[I]; })...};
    }(std::make_index_sequence<std::tuple_size_v<X>>{});
  } else if constexpr (is_vector<X>) {
    const size_t len = get(0).size();
    for (int64_t j = 1; j < n; ++j)
      DL_CHECK(get(j).size() == len, "default_collate: each element in the list of the batch should be of equal size, but entry 0 has ",
               len, " elements and entry ", j, " has ", get(j).size());
    using Elem = decltype(collate_impl(n, [&](int64_t j) -> const auto& { return get(j)[0]; }));
    std::vector<Elem> out;
    out.reserve(len);
    for (size_t k = 0; k < len; ++k) out.push_back(collate_impl(n, [&](int64_t j) -> const auto& { return get(j)[k]; }));
    return out;
  } else if constexpr (is_map<X>) {
    using Elem = decltype(collate_impl(n, [&](int64_t j) -> const auto& { return get(j).begin()->second; }));
    std::map<typename X::key_type, Elem, typename X::key_compare> out;
    for (const auto& entry : get(0)) {
      const auto& key = entry.first;  // not a structured binding: clang before 16 cannot capture one
      out.emplace(key, collate_impl(n, [&](int64_t j) -> const auto& {
                    const auto it = get(j).find(key);
                    DL_CHECK(it != get(j).end(), "default_collate: entry ", j, " lacks a key that entry 0 has");
                    return it->second;
                  }));
    }
    for (int64_t j = 1; j < n; ++j)
      DL_CHECK(get(j).size() == get(0).size(), "default_collate: entry ", j, " has ", get(j).size(),
               " keys but entry 0 has ", get(0).size());
    return out;
  } else if constexpr (std::is_aggregate_v<X> && std::is_class_v<X>) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      auto fields = std::tuple{collate_impl(n, [&](int64_t j) -> const auto& { return std::get<I>(tie_fields(get(j))); })...};
      using Fields = std::remove_cvref_t<decltype(tie_fields(std::declval<const X&>()))>;
      if constexpr (has_batch_type<X>) {
        return std::apply([](auto&&... f) { return typename X::batch_type{std::move(f)...}; }, std::move(fields));
      } else if constexpr ((std::is_same_v<std::remove_cvref_t<std::tuple_element_t<I, Fields>>,
                                           std::tuple_element_t<I, decltype(fields)>> && ...)) {
        return std::apply([](auto&&... f) { return X{std::move(f)...}; }, std::move(fields));
      } else {
        return fields;
      }
    }(std::make_index_sequence<field_count<X>()>{});
  } else {
    static_assert(always_false<X>,
                  "default_collate does not know how to batch this sample type: use tensors, numbers, strings, "
                  "pairs, tuples, arrays, vectors, maps or plain structs of them, or pass .collate_fn = a function "
                  "std::vector<Sample> -> Batch in the DataLoader options");
  }
}

/// Whether Tensor::pin_memory can work in this program: the CUDA runtime is in (<dl/cuda.hpp>)
/// and a device is present.
inline bool pinning_available() {
  const auto& h = ::dl::detail::cuda_backend();
  return h.pinned_alloc && h.device_count && h.device_count() > 0;
}

/// Replaces every tensor of a batch (tensors and pairs, tuples, arrays, vectors, maps and plain
/// structs of them) by a copy in page-locked memory, as the DataLoader's pin_memory option.
template <class B>
void pin_batch(B& b) {
  if constexpr (is_tensor_sample<B>) {
    if (b.defined() && b.device().is_cpu()) b = b.pin_memory();
  } else if constexpr (is_pair<B>) {
    pin_batch(b.first);
    pin_batch(b.second);
  } else if constexpr (is_tuple<B> || is_std_array<B>) {
    std::apply([](auto&... f) { (pin_batch(f), ...); }, b);
  } else if constexpr (is_vector<B>) {
    for (auto& x : b) pin_batch(x);
  } else if constexpr (is_map<B>) {
    for (auto& entry : b) pin_batch(entry.second);
  } else if constexpr (std::is_aggregate_v<B> && std::is_class_v<B> && std::is_standard_layout_v<B>) {
    // Standard layout: no base class with fields, so tie_fields can bind them.
    if constexpr (field_count<B>() >= 1) std::apply([](auto&... f) { (pin_batch(f), ...); }, tie_fields(b));
  }
  // Numbers, strings, anything else (a struct with a base class): nothing to pin.
}

}  // namespace detail

template <class S>
auto DefaultCollate::operator()(const std::vector<S>& samples) const {
  return detail::collate_impl(int64_t(samples.size()), [&](int64_t j) -> const S& { return samples[size_t(j)]; });
}

}  // namespace dl::data
