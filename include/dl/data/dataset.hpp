// dl/data/dataset.hpp — the Dataset concept (size() + get(i) returning any sample type) and the
// generic datasets built on it: TensorDataset, Subset, ConcatDataset, MapDataset, AnyDataset and
// random_split (PyTorch's torch.utils.data.Dataset family).
#pragma once

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../tensor.hpp"

namespace dl::data {

// ------------------------------------------------------------------------------ concepts

/// A map-style dataset: `size()` samples, `get(i)` returns sample i (any type: a tensor, a pair
/// image/label, a user struct). get must be const and safe to call from several threads at once
/// (DataLoader workers do).
template <class D>
concept dataset = requires(const D& d, int64_t i) {
  { d.size() } -> std::convertible_to<int64_t>;  // a dataset needs `int64_t size() const`, the number of samples
  d.get(i);                                      // a dataset needs `Sample get(int64_t i) const` (const: DataLoader's workers call it at once)
};

/// The sample type of a dataset.
template <dataset D>
using sample_t = std::remove_cvref_t<decltype(std::declval<const D&>().get(int64_t{}))>;

namespace detail {
/// The sample type of a dataset, or int for a type that is not one (DataLoader's static_asserts then
/// say what is missing, and nothing else fails on the way).
template <class D>
struct sample_or_int {
  using type = int;
};
template <dataset D>
struct sample_or_int<D> {
  using type = sample_t<D>;
};
}  // namespace detail

/// A dataset that can also load a whole batch at once (PyTorch's __getitems__): get_batch(indices)
/// must return what default_collate makes of the samples get(indices[0]), get(indices[1]), ...
/// DataLoader uses it when no custom collate_fn is given.
template <class D>
concept batched_dataset = dataset<D> && requires(const D& d, std::span<const int64_t> indices) {
  d.get_batch(indices);
};

/// A dataset that can hint where sample i lives (prefetch(i) starts fetching it into the cache);
/// DataLoader calls it two samples ahead, since shuffled samples defeat the hardware prefetcher.
template <class D>
concept prefetching_dataset = dataset<D> && requires(const D& d, int64_t i) { d.prefetch(i); };

/// The dataset a holder refers to: D itself, or X for std::reference_wrapper<X> (pass std::ref(ds)
/// to the wrappers and to DataLoader to share a dataset that is expensive to copy).
template <class D>
using dataset_value_t = std::remove_cvref_t<std::unwrap_reference_t<D>>;

/// A dataset held by value or through std::reference_wrapper.
template <class D>
concept dataset_holder = dataset<dataset_value_t<D>>;

namespace detail {
template <class D>
const dataset_value_t<D>& deref(const D& d) {
  return d;  // reference_wrapper converts to its referent
}
inline void check_index(int64_t i, int64_t n, const char* what) {
  DL_CHECK(i >= 0 && i < n, what, ": index ", i, " out of range for dataset of size ", n);
}
/// Hints the cache to fetch [p, p + bytes): batch loaders gather rows scattered by the shuffle.
inline void prefetch(const void* p, int64_t bytes) {
#if defined(__GNUC__)
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(static_cast<const char*>(p) + off);
#else
  (void)p;
  (void)bytes;
#endif
}
}  // namespace detail

// ------------------------------------------------------------------------------ declarations

/// Type-erased dataset of samples S: any dataset whose samples convert to S. Copies share the
/// wrapped dataset. Lets one container (ConcatDataset, a vector) hold datasets of different types.
template <class S>
class AnyDataset {
 public:
  using sample_type = S;
  AnyDataset() = default;
  template <dataset_holder D>
    requires(!std::same_as<std::remove_cvref_t<D>, AnyDataset> &&
             std::convertible_to<sample_t<dataset_value_t<D>>, S>)
  AnyDataset(D dataset) : self_(std::make_shared<Model<D>>(std::move(dataset))) {}

  int64_t size() const { return self_ ? self_->size() : 0; }
  S get(int64_t i) const;

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual int64_t size() const = 0;
    virtual S get(int64_t i) const = 0;
  };
  template <class D>
  struct Model final : Concept {
    explicit Model(D d) : d_(std::move(d)) {}
    int64_t size() const override { return int64_t(detail::deref(d_).size()); }
    S get(int64_t i) const override { return detail::deref(d_).get(i); }
    D d_;
  };
  std::shared_ptr<const Concept> self_;
};

/// Samples are the rows of tensors that share their first dimension:
/// TensorDataset(x [N, 3], y [N]).get(i) == std::tuple{x[i], y[i]} (views, no copy).
template <scalar_type... Ts>
class TensorDataset {
  static_assert(sizeof...(Ts) >= 1, "TensorDataset needs at least one tensor");

 public:
  /// @pre every tensor has at least one dimension and the same size along dim 0.
  explicit TensorDataset(Tensor<Ts>... tensors);

  int64_t size() const { return size_; }
  /// Row i of each tensor (views sharing storage with the dataset's tensors).
  std::tuple<Tensor<Ts>...> get(int64_t i) const;
  /// Rows indices[0], indices[1], ... of each tensor, gathered into new tensors [B, ...].
  std::tuple<Tensor<Ts>...> get_batch(std::span<const int64_t> indices) const;
  const std::tuple<Tensor<Ts>...>& tensors() const { return tensors_; }

 private:
  std::tuple<Tensor<Ts>...> tensors_;
  int64_t size_ = 0;
};

/// The samples of `dataset` at `indices`, in that order (PyTorch's Subset).
template <dataset_holder D>
class Subset {
 public:
  using dataset_type = dataset_value_t<D>;
  /// @pre every index is in [0, dataset.size()).
  Subset(D dataset, std::vector<int64_t> indices);

  int64_t size() const { return int64_t(indices_.size()); }
  sample_t<dataset_type> get(int64_t i) const;
  /// Present when the underlying dataset loads batches itself.
  auto get_batch(std::span<const int64_t> indices) const
    requires batched_dataset<dataset_type>
  {
    std::vector<int64_t> mapped(indices.size());
    for (size_t j = 0; j < indices.size(); ++j) {
      detail::check_index(indices[j], size(), "Subset");
      mapped[j] = indices_[size_t(indices[j])];
    }
    return detail::deref(dataset_).get_batch(std::span<const int64_t>(mapped));
  }
  /// Present when the underlying dataset prefetches.
  void prefetch(int64_t i) const
    requires prefetching_dataset<dataset_type>
  {
    if (i >= 0 && i < size()) detail::deref(dataset_).prefetch(indices_[size_t(i)]);
  }
  const dataset_type& dataset() const { return detail::deref(dataset_); }
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  D dataset_;
  std::vector<int64_t> indices_;
};

/// Several datasets one after another (PyTorch's ConcatDataset). ConcatDataset(a, b, c) with
/// datasets of one type holds them as they are; with different types it holds
/// AnyDataset<sample type of the first>.
template <dataset_holder D>
class ConcatDataset {
 public:
  explicit ConcatDataset(std::vector<D> datasets);
  template <class... Ds>
    requires(sizeof...(Ds) >= 1 && (std::convertible_to<Ds, D> && ...))
  explicit ConcatDataset(Ds... datasets) : ConcatDataset(std::vector<D>{D(std::move(datasets))...}) {}

  int64_t size() const { return cumulative_.empty() ? 0 : cumulative_.back(); }
  sample_t<dataset_value_t<D>> get(int64_t i) const;
  const std::vector<D>& datasets() const { return datasets_; }
  /// cumulative_sizes()[k] = total size of datasets 0..k (PyTorch's cumulative_sizes).
  const std::vector<int64_t>& cumulative_sizes() const { return cumulative_; }

 private:
  std::vector<D> datasets_;
  std::vector<int64_t> cumulative_;
};

template <dataset_holder D, dataset_holder... Ds>
  requires(std::same_as<D, Ds> && ...)
ConcatDataset(D, Ds...) -> ConcatDataset<D>;
template <dataset_holder D, dataset_holder... Ds>
  requires(!(std::same_as<D, Ds> && ...))
ConcatDataset(D, Ds...) -> ConcatDataset<AnyDataset<sample_t<dataset_value_t<D>>>>;

/// Applies fn to every sample: MapDataset(ds, fn).get(i) == fn(ds.get(i)). fn must be callable
/// on a const object from several threads at once.
template <dataset_holder D, class F>
  requires std::invocable<const F&, sample_t<dataset_value_t<D>>>
class MapDataset {
 public:
  MapDataset(D dataset, F fn) : dataset_(std::move(dataset)), fn_(std::move(fn)) {}
  int64_t size() const { return int64_t(detail::deref(dataset_).size()); }
  auto get(int64_t i) const { return std::invoke(fn_, detail::deref(dataset_).get(i)); }
  const dataset_value_t<D>& dataset() const { return detail::deref(dataset_); }
  /// Another transform after this one (libtorch's chained .map(...)).
  template <class G>
  auto map(G fn) const& {
    return MapDataset<MapDataset, G>(*this, std::move(fn));
  }

 private:
  D dataset_;
  F fn_;
};

/// An optional base for your own dataset, as libtorch's torch::data::Dataset<Self>:
///   struct Images : data::Dataset<Images> {
///     int64_t size() const { ... }
///     std::pair<Tensor<float>, int64_t> get(int64_t i) const { ... }
///   };
///   data::DataLoader loader(Images{...}.map(normalize), {.batch_size = 64});
/// Nothing is virtual and the sample type is yours; the base adds .map(fn) (a MapDataset over a
/// copy of the dataset; pass std::ref to share it). Any class with size() and a const get(i) is a
/// dataset without it.
template <class Self>
struct Dataset {
  template <class F>
  auto map(F fn) const& {
    check();
    return MapDataset<Self, F>(static_cast<const Self&>(*this), std::move(fn));
  }
  template <class F>
  auto map(F fn) && {
    check();
    return MapDataset<Self, F>(std::move(static_cast<Self&>(*this)), std::move(fn));
  }

 private:
  static constexpr void check() {
    static_assert(std::derived_from<Self, Dataset<Self>>, "data::Dataset<Self>: derive as `struct Self : data::Dataset<Self>`");
    static_assert(requires(const Self& d) { d.size(); }, "data::Dataset<Self>: Self needs `int64_t size() const` (the number of samples)");
    static_assert(requires(const Self& d, int64_t i) { d.get(i); },
                  "data::Dataset<Self>: Self needs `Sample get(int64_t i) const` (const: loader threads call it at once)");
  }
};

/// Splits a dataset into non-overlapping random subsets of the given lengths (which must sum to
/// the dataset's size), as torch.utils.data.random_split. `generator` defaults to dl's default
/// generator; the same seed gives the same split.
template <dataset_holder D>
std::vector<Subset<D>> random_split(const D& dataset, std::vector<int64_t> lengths, Generator* generator = nullptr);
/// Fractions that sum to 1: each subset gets floor(n * fraction) samples and the remainder is
/// handed out one by one, round-robin, from the first subset on (PyTorch's rule).
template <dataset_holder D>
std::vector<Subset<D>> random_split(const D& dataset, std::vector<double> fractions, Generator* generator = nullptr);
template <dataset_holder D, std::integral I>
std::vector<Subset<D>> random_split(const D& dataset, std::initializer_list<I> lengths, Generator* generator = nullptr) {
  return random_split(dataset, std::vector<int64_t>(lengths.begin(), lengths.end()), generator);
}
template <dataset_holder D, std::floating_point F>
std::vector<Subset<D>> random_split(const D& dataset, std::initializer_list<F> fractions, Generator* generator = nullptr) {
  return random_split(dataset, std::vector<double>(fractions.begin(), fractions.end()), generator);
}

// ------------------------------------------------------------------------------ implementation

template <class S>
S AnyDataset<S>::get(int64_t i) const {
  DL_CHECK(self_, "AnyDataset: get(", i, ") on an empty dataset");
  return self_->get(i);
}

namespace detail {

/// Copies rows `indices` of x (along dim 0) into a new tensor [B, ...]. Bounds-checked.
template <class T>
Tensor<T> gather_rows(const Tensor<T>& x, std::span<const int64_t> indices, const char* what) {
  Shape shape = x.shape();
  const int64_t n = shape[0];
  shape[0] = int64_t(indices.size());
  Tensor<T> out = empty<T>(shape);
  const int64_t row = n ? x.numel() / n : 0;
  for (size_t j = 0; j < indices.size(); ++j) check_index(indices[j], n, what);
  if (x.is_contiguous()) {
    const T* src = x.data();
    T* dst = out.data();
    for (size_t j = 0; j < indices.size(); ++j) {
      if (j + 2 < indices.size()) prefetch(src + indices[j + 2] * row, row * int64_t(sizeof(T)));
      std::memcpy(dst + int64_t(j) * row, src + indices[j] * row, size_t(row) * sizeof(T));
    }
  } else {
    for (size_t j = 0; j < indices.size(); ++j) out.select(0, int64_t(j)).copy_(x.select(0, indices[j]));
  }
  return out;
}

}  // namespace detail

template <scalar_type... Ts>
TensorDataset<Ts...>::TensorDataset(Tensor<Ts>... tensors) : tensors_(std::move(tensors)...) {
  int k = 0;
  Shape first_shape;
  auto check = [&](const auto& t) {
    DL_CHECK(t.defined(), "TensorDataset: tensor ", k, " is undefined");
    DL_CHECK(t.dim() >= 1, "TensorDataset: tensor ", k, " is 0-dimensional; every tensor needs a first dimension to index along");
    DL_CHECK(t.device().is_cpu(), "TensorDataset: tensor ", k, " is on ", t.device(), "; datasets hold CPU tensors");
    if (k == 0) {
      size_ = t.size(0);
      first_shape = t.shape();
    }
    DL_CHECK(t.size(0) == size_, "TensorDataset: size mismatch between tensors: tensor 0 has ", size_,
             " rows (shape ", first_shape, ") but tensor ", k, " has ", t.size(0), " (shape ", t.shape(), ")");
    ++k;
  };
  std::apply([&](const auto&... t) { (check(t), ...); }, tensors_);
}

template <scalar_type... Ts>
std::tuple<Tensor<Ts>...> TensorDataset<Ts...>::get(int64_t i) const {
  detail::check_index(i, size_, "TensorDataset");
  return std::apply([&](const auto&... t) { return std::tuple<Tensor<Ts>...>{t.select(0, i)...}; }, tensors_);
}

template <scalar_type... Ts>
std::tuple<Tensor<Ts>...> TensorDataset<Ts...>::get_batch(std::span<const int64_t> indices) const {
  return std::apply(
      [&](const auto&... t) { return std::tuple<Tensor<Ts>...>{detail::gather_rows(t, indices, "TensorDataset")...}; },
      tensors_);
}

template <dataset_holder D>
Subset<D>::Subset(D dataset, std::vector<int64_t> indices) : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  const int64_t n = int64_t(detail::deref(dataset_).size());
  for (size_t k = 0; k < indices_.size(); ++k)
    DL_CHECK(indices_[k] >= 0 && indices_[k] < n, "Subset: indices[", k, "] = ", indices_[k],
             " is out of range for a dataset of size ", n);
}

template <dataset_holder D>
sample_t<typename Subset<D>::dataset_type> Subset<D>::get(int64_t i) const {
  detail::check_index(i, size(), "Subset");
  return detail::deref(dataset_).get(indices_[size_t(i)]);
}

template <dataset_holder D>
ConcatDataset<D>::ConcatDataset(std::vector<D> datasets) : datasets_(std::move(datasets)) {
  DL_CHECK(!datasets_.empty(), "ConcatDataset: datasets should not be an empty iterable");
  int64_t total = 0;
  for (const auto& d : datasets_) {
    total += int64_t(detail::deref(d).size());
    cumulative_.push_back(total);
  }
}

template <dataset_holder D>
sample_t<dataset_value_t<D>> ConcatDataset<D>::get(int64_t i) const {
  detail::check_index(i, size(), "ConcatDataset");
  const size_t k = size_t(std::upper_bound(cumulative_.begin(), cumulative_.end(), i) - cumulative_.begin());
  const int64_t local = k == 0 ? i : i - cumulative_[k - 1];
  return detail::deref(datasets_[k]).get(local);
}

template <dataset_holder D>
std::vector<Subset<D>> random_split(const D& dataset, std::vector<int64_t> lengths, Generator* generator) {
  const int64_t n = int64_t(detail::deref(dataset).size());
  int64_t total = 0;
  for (size_t k = 0; k < lengths.size(); ++k) {
    DL_CHECK(lengths[k] >= 0, "random_split: length ", k, " is negative (", lengths[k], ")");
    total += lengths[k];
  }
  DL_CHECK(total == n, "random_split: sum of input lengths (", total, ") does not equal the length of the input dataset (", n, ")");
  const Tensor<int64_t> perm = randperm<int64_t>(n, generator);
  const int64_t* p = perm.data();
  std::vector<Subset<D>> out;
  out.reserve(lengths.size());
  int64_t offset = 0;
  for (int64_t len : lengths) {
    out.emplace_back(dataset, std::vector<int64_t>(p + offset, p + offset + len));
    offset += len;
  }
  return out;
}

template <dataset_holder D>
std::vector<Subset<D>> random_split(const D& dataset, std::vector<double> fractions, Generator* generator) {
  const int64_t n = int64_t(detail::deref(dataset).size());
  double sum = 0;
  for (size_t k = 0; k < fractions.size(); ++k) {
    DL_CHECK(fractions[k] >= 0 && fractions[k] <= 1, "random_split: fraction at index ", k, " is not between 0 and 1 (", fractions[k], ")");
    sum += fractions[k];
  }
  DL_CHECK(std::abs(sum - 1) < 1e-6, "random_split: fractions sum to ", sum, ", expected 1 (or pass integer lengths)");
  std::vector<int64_t> lengths(fractions.size());
  int64_t assigned = 0;
  for (size_t k = 0; k < fractions.size(); ++k) {
    lengths[k] = int64_t(std::floor(double(n) * fractions[k]));
    assigned += lengths[k];
  }
  for (int64_t r = 0; r < n - assigned; ++r) ++lengths[size_t(r) % lengths.size()];
  return random_split(dataset, std::move(lengths), generator);
}

}  // namespace dl::data
