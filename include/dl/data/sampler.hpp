// dl/data/sampler.hpp — samplers: the index streams a DataLoader reads (Sequential, Random,
// SubsetRandom, WeightedRandom, Distributed), BatchSampler that groups them, and the type-erased
// AnySampler / AnyBatchSampler that DataLoader options hold.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "../config.hpp"
#include "../distributed/process_group.hpp"
#include "dataset.hpp"
#include "rng.hpp"

namespace dl::data {

// ------------------------------------------------------------------------------ concepts

/// A sampler: size() indices per epoch; each call of indices() returns the next epoch's stream
/// (random samplers advance their generator, as iterating a PyTorch sampler does).
template <class S>
concept sampler = requires(S& s, const S& cs) {
  { cs.size() } -> std::convertible_to<int64_t>;          // a sampler needs `int64_t size() const`, the indices per epoch
  { s.indices() } -> std::same_as<std::vector<int64_t>>;  // a sampler needs `std::vector<int64_t> indices()`, the next epoch's order
};

/// A batch sampler: size() batches per epoch; batches() returns the next epoch's batches.
template <class S>
concept batch_sampler = requires(S& s, const S& cs) {
  { cs.size() } -> std::convertible_to<int64_t>;                       // a batch sampler needs `int64_t size() const`, the batches per epoch
  { s.batches() } -> std::same_as<std::vector<std::vector<int64_t>>>;  // a batch sampler needs `std::vector<std::vector<int64_t>> batches()`, the next epoch's batches
};

// ------------------------------------------------------------------------------ declarations

/// 0, 1, ..., n-1.
class SequentialSampler {
 public:
  explicit SequentialSampler(int64_t n);
  template <dataset D>
  explicit SequentialSampler(const D& data_source) : SequentialSampler(int64_t(data_source.size())) {}
  int64_t size() const { return n_; }
  std::vector<int64_t> indices();

 private:
  int64_t n_;
};

struct RandomSamplerOptions {
  bool replacement = false;               ///< draw with replacement (then indices may repeat)
  std::optional<int64_t> num_samples{};   ///< indices per epoch; default: the dataset's size
  Generator* generator = nullptr;         ///< default: dl's default generator (dl::manual_seed)
};

/// A random permutation of 0..n-1 per epoch (a fresh permutation for each further n when
/// num_samples > n); with replacement, num_samples independent uniform draws from [0, n).
/// Without replacement the stream for Generator(s) equals dl::randperm(n, Generator(s)).
class RandomSampler {
 public:
  explicit RandomSampler(int64_t n, RandomSamplerOptions options = {});
  template <dataset D>
  explicit RandomSampler(const D& data_source, RandomSamplerOptions options = {})
      : RandomSampler(int64_t(data_source.size()), options) {}
  int64_t size() const { return num_samples_; }
  std::vector<int64_t> indices();
  bool replacement() const { return replacement_; }

 private:
  int64_t n_;
  int64_t num_samples_;
  bool replacement_;
  Generator* generator_;
};

/// The given indices in a random order, a new order each epoch.
class SubsetRandomSampler {
 public:
  explicit SubsetRandomSampler(std::vector<int64_t> indices, Generator* generator = nullptr);
  int64_t size() const { return int64_t(indices_.size()); }
  std::vector<int64_t> indices();

 private:
  std::vector<int64_t> indices_;
  Generator* generator_;
};

/// num_samples indices drawn from [0, weights.size()) with probability proportional to weights
/// (torch.multinomial). Without replacement each index appears at most once, drawn in order of
/// decreasing priority as successive weighted draws would (Efraimidis-Spirakis keys).
class WeightedRandomSampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        Generator* generator = nullptr);
  int64_t size() const { return num_samples_; }
  std::vector<int64_t> indices();

 private:
  std::vector<double> weights_;
  std::vector<double> cumulative_;
  int64_t num_samples_;
  bool replacement_;
  Generator* generator_;
};

/// Type-erased sampler; copies share the sampler (and its generator position). Empty by default.
class AnySampler {
 public:
  AnySampler() = default;
  /// Any sampler (a static_assert names what a type lacks, where a constraint would only say
  /// "no known conversion").
  template <class S>
    requires(!std::same_as<std::remove_cvref_t<S>, AnySampler>)
  AnySampler(S s) {
    static_assert(sampler<S>, "a sampler needs `int64_t size() const` (indices per epoch) and `std::vector<int64_t> indices()` (the next epoch's order); a sampler of batches goes in .batch_sampler");
    if constexpr (sampler<S>) self_ = std::make_shared<Model<S>>(std::move(s));
  }
  explicit operator bool() const { return bool(self_); }
  int64_t size() const;
  std::vector<int64_t> indices();

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual int64_t size() const = 0;
    virtual std::vector<int64_t> indices() = 0;
  };
  template <class S>
  struct Model final : Concept {
    explicit Model(S s) : s_(std::move(s)) {}
    int64_t size() const override { return int64_t(s_.size()); }
    std::vector<int64_t> indices() override { return s_.indices(); }
    S s_;
  };
  std::shared_ptr<Concept> self_;
};

/// Groups a sampler's indices into batches of batch_size (the last one smaller unless drop_last).
class BatchSampler {
 public:
  BatchSampler(AnySampler sampler, int64_t batch_size, bool drop_last);
  int64_t size() const;
  std::vector<std::vector<int64_t>> batches();
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return drop_last_; }
  AnySampler& sampler() { return sampler_; }

 private:
  AnySampler sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

/// Type-erased batch sampler; copies share state. Empty by default.
class AnyBatchSampler {
 public:
  AnyBatchSampler() = default;
  /// Any batch sampler (a static_assert names what a type lacks).
  template <class S>
    requires(!std::same_as<std::remove_cvref_t<S>, AnyBatchSampler>)
  AnyBatchSampler(S s) {
    static_assert(batch_sampler<S>, "a batch sampler needs `int64_t size() const` (batches per epoch) and `std::vector<std::vector<int64_t>> batches()` (the next epoch's batches); a sampler of indices goes in .sampler or BatchSampler(sampler, batch_size, drop_last)");
    if constexpr (batch_sampler<S>) self_ = std::make_shared<Model<S>>(std::move(s));
  }
  explicit operator bool() const { return bool(self_); }
  int64_t size() const;
  std::vector<std::vector<int64_t>> batches();

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual int64_t size() const = 0;
    virtual std::vector<std::vector<int64_t>> batches() = 0;
  };
  template <class S>
  struct Model final : Concept {
    explicit Model(S s) : s_(std::move(s)) {}
    int64_t size() const override { return int64_t(s_.size()); }
    std::vector<std::vector<int64_t>> batches() override { return s_.batches(); }
    S s_;
  };
  std::shared_ptr<Concept> self_;
};

struct DistributedSamplerOptions {
  /// Number of processes taking part; -1: the default process group's world size (1 when
  /// dl::distributed::init_process_group was not called).
  int64_t num_replicas = -1;
  int64_t rank = -1;         ///< this process, in [0, num_replicas); -1: its rank in the default group
  bool shuffle = true;       ///< a permutation seeded by seed + epoch
  uint64_t seed = 0;         ///< must be the same on every replica
  bool drop_last = false;    ///< drop the tail instead of padding to a multiple of num_replicas
};

/// This replica's share of the dataset (torch.utils.data.distributed.DistributedSampler): the
/// (shuffled) indices, padded by repeating the first ones to a multiple of num_replicas (or cut
/// to one, with drop_last), then every num_replicas-th from rank on. Call set_epoch(e) at the
/// start of each epoch so the shuffle differs between epochs and agrees between replicas.
class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options);
  template <dataset D>
  DistributedSampler(const D& dataset, DistributedSamplerOptions options)
      : DistributedSampler(int64_t(dataset.size()), options) {}
  int64_t size() const { return num_samples_; }
  std::vector<int64_t> indices();
  /// Copies share the epoch (a DataLoader holds a copy of its sampler): set_epoch on the sampler
  /// you passed reaches the loader, as in PyTorch, where the loader holds the sampler itself.
  void set_epoch(int64_t epoch) { *epoch_ = epoch; }
  int64_t epoch() const { return *epoch_; }
  /// Indices per replica after padding (num_samples) and across all replicas (total_size).
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * options_.num_replicas; }

 private:
  int64_t n_;
  DistributedSamplerOptions options_;
  int64_t num_samples_;
  std::shared_ptr<int64_t> epoch_ = std::make_shared<int64_t>(0);
};

// ------------------------------------------------------------------------------ implementation

namespace detail {
/// randperm(n) drawn from `g` as a vector.
DL_API std::vector<int64_t> randperm_vector(int64_t n, Generator* g);
}  // namespace detail

}  // namespace dl::data

#if DL_HEADER_ONLY
#include "sampler-inl.hpp"
#endif
