// dl/data/sampler-inl.hpp — the bodies of dl/data/sampler.hpp's non-template functions (DL_API): compiled
// into each program in header-only mode, once into libdl_kernels in compiled mode (see
// DL_HEADER_ONLY in dl/config.hpp).
#pragma once

#include "sampler.hpp"

namespace dl::data::detail {

DL_API std::vector<int64_t> randperm_vector(int64_t n, Generator* g) {
  const Tensor<int64_t> p = randperm<int64_t>(n, g);
  return std::vector<int64_t>(p.data(), p.data() + n);
}
}  // namespace dl::data::detail

namespace dl::data {

DL_API SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  DL_CHECK(n >= 0, "SequentialSampler: the number of samples must be non-negative, got ", n);
}

DL_API std::vector<int64_t> SequentialSampler::indices() {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  for (int64_t i = 0; i < n_; ++i) out[size_t(i)] = i;
  return out;
}

DL_API RandomSampler::RandomSampler(int64_t n, RandomSamplerOptions options)
    : n_(n), num_samples_(options.num_samples.value_or(n)), replacement_(options.replacement), generator_(options.generator) {
  DL_CHECK(n >= 0, "RandomSampler: the number of samples must be non-negative, got ", n);
  DL_CHECK(!options.num_samples || *options.num_samples > 0,
           "RandomSampler: num_samples should be a positive integer value, but got num_samples=",
           options.num_samples.value_or(0));
  DL_CHECK(n > 0 || num_samples_ == 0, "RandomSampler: cannot draw ", num_samples_, " samples from an empty dataset");
}

DL_API std::vector<int64_t> RandomSampler::indices() {
  std::vector<int64_t> out;
  out.reserve(size_t(num_samples_));
  if (replacement_) {
    Generator& g = generator_ ? *generator_ : default_generator();
    for (int64_t i = 0; i < num_samples_; ++i) out.push_back(randint(g, 0, n_));
    return out;
  }
  for (int64_t done = 0; done < num_samples_; done += n_) {
    const std::vector<int64_t> p = detail::randperm_vector(n_, generator_ ? generator_ : &default_generator());
    out.insert(out.end(), p.begin(), p.begin() + std::min(n_, num_samples_ - done));
  }
  return out;
}

DL_API SubsetRandomSampler::SubsetRandomSampler(std::vector<int64_t> indices, Generator* generator)
    : indices_(std::move(indices)), generator_(generator) {}

DL_API std::vector<int64_t> SubsetRandomSampler::indices() {
  const std::vector<int64_t> p = detail::randperm_vector(size(), generator_ ? generator_ : &default_generator());
  std::vector<int64_t> out(p.size());
  for (size_t k = 0; k < p.size(); ++k) out[k] = indices_[size_t(p[k])];
  return out;
}

DL_API WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                                    Generator* generator)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement), generator_(generator) {
  DL_CHECK(num_samples > 0, "WeightedRandomSampler: num_samples should be a positive integer value, but got num_samples=", num_samples);
  DL_CHECK(!weights_.empty(), "WeightedRandomSampler: weights must not be empty");
  double total = 0;
  int64_t nonzero = 0;
  for (size_t k = 0; k < weights_.size(); ++k) {
    DL_CHECK(std::isfinite(weights_[k]) && weights_[k] >= 0, "WeightedRandomSampler: weights must be finite and non-negative, but weights[",
             k, "] = ", weights_[k]);
    total += weights_[k];
    nonzero += weights_[k] > 0;
    cumulative_.push_back(total);
  }
  DL_CHECK(total > 0, "WeightedRandomSampler: invalid multinomial distribution (sum of weights is 0)");
  DL_CHECK(replacement || num_samples <= nonzero, "WeightedRandomSampler: cannot draw ", num_samples,
           " samples without replacement: only ", nonzero, " of ", weights_.size(), " weights are nonzero");
}

DL_API std::vector<int64_t> WeightedRandomSampler::indices() {
  Generator& g = generator_ ? *generator_ : default_generator();
  std::vector<int64_t> out;
  out.reserve(size_t(num_samples_));
  const int64_t n = int64_t(weights_.size());
  if (replacement_) {
    // Inverse CDF: the first index whose cumulative weight exceeds u * total.
    const double total = cumulative_.back();
    for (int64_t s = 0; s < num_samples_; ++s) {
      const double u = uniform(g) * total;
      int64_t k = int64_t(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin());
      k = std::min(k, n - 1);
      while (weights_[size_t(k)] == 0) --k;  // u landed exactly on a boundary before zero weights
      out.push_back(k);
    }
    return out;
  }
  // Efraimidis-Spirakis: key_i = -log(u_i) / w_i; the smallest keys in order form a weighted
  // sample without replacement, distributed as successive draws renormalised after each.
  std::vector<std::pair<double, int64_t>> keys;
  keys.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const double u = uniform(g);
    if (weights_[size_t(i)] > 0) keys.emplace_back(-std::log1p(-u) / weights_[size_t(i)], i);
  }
  std::partial_sort(keys.begin(), keys.begin() + num_samples_, keys.end());
  for (int64_t s = 0; s < num_samples_; ++s) out.push_back(keys[size_t(s)].second);
  return out;
}

DL_API int64_t AnySampler::size() const {
  DL_CHECK(self_, "AnySampler: size() of an empty sampler");
  return self_->size();
}

DL_API std::vector<int64_t> AnySampler::indices() {
  DL_CHECK(self_, "AnySampler: indices() of an empty sampler");
  return self_->indices();
}

DL_API BatchSampler::BatchSampler(AnySampler sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  DL_CHECK(sampler_, "BatchSampler: sampler is empty");
  DL_CHECK(batch_size > 0, "BatchSampler: batch_size should be a positive integer value, but got batch_size=", batch_size);
}

DL_API int64_t BatchSampler::size() const {
  const int64_t n = sampler_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

DL_API std::vector<std::vector<int64_t>> BatchSampler::batches() {
  const std::vector<int64_t> idx = sampler_.indices();
  std::vector<std::vector<int64_t>> out;
  out.reserve(idx.size() / size_t(batch_size_) + 1);
  for (size_t b = 0; b < idx.size(); b += size_t(batch_size_)) {
    const size_t e = std::min(idx.size(), b + size_t(batch_size_));
    if (drop_last_ && e - b < size_t(batch_size_)) break;
    out.emplace_back(idx.begin() + std::ptrdiff_t(b), idx.begin() + std::ptrdiff_t(e));
  }
  return out;
}

DL_API int64_t AnyBatchSampler::size() const {
  DL_CHECK(self_, "AnyBatchSampler: size() of an empty batch sampler");
  return self_->size();
}

DL_API std::vector<std::vector<int64_t>> AnyBatchSampler::batches() {
  DL_CHECK(self_, "AnyBatchSampler: batches() of an empty batch sampler");
  return self_->batches();
}

DL_API DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : n_(dataset_size), options_(options) {
  const bool group = distributed::is_initialized();
  if (options.num_replicas < 0) options.num_replicas = options_.num_replicas = group ? distributed::get_world_size() : 1;
  if (options.rank < 0) options.rank = options_.rank = group ? distributed::get_rank() : 0;
  DL_CHECK(dataset_size >= 0, "DistributedSampler: dataset size must be non-negative, got ", dataset_size);
  DL_CHECK(options.num_replicas >= 1, "DistributedSampler: num_replicas must be at least 1, got ", options.num_replicas);
  DL_CHECK(options.rank >= 0 && options.rank < options.num_replicas, "DistributedSampler: invalid rank ", options.rank,
           ", rank should be in the interval [0, ", options.num_replicas - 1, "]");
  const int64_t r = options.num_replicas;
  // As PyTorch: drop_last cuts the tail so that every replica gets floor(n / r) indices; otherwise
  // the indices are padded to ceil(n / r) per replica.
  num_samples_ = options.drop_last ? n_ / r : (n_ + r - 1) / r;
}

DL_API std::vector<int64_t> DistributedSampler::indices() {
  std::vector<int64_t> all;
  if (options_.shuffle) {
    Generator g(options_.seed + uint64_t(*epoch_));
    all = detail::randperm_vector(n_, &g);
  } else {
    all.resize(size_t(n_));
    for (int64_t i = 0; i < n_; ++i) all[size_t(i)] = i;
  }
  const int64_t total = total_size();
  if (!options_.drop_last) {
    for (int64_t k = 0; int64_t(all.size()) < total; ++k) all.push_back(all[size_t(k % n_)]);
  } else {
    all.resize(size_t(total));
  }
  std::vector<int64_t> out;
  out.reserve(size_t(num_samples_));
  for (int64_t k = options_.rank; k < total; k += options_.num_replicas) out.push_back(all[size_t(k)]);
  return out;
}

}  // namespace dl::data
