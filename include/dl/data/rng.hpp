// dl/data/rng.hpp — where the data pipeline's randomness comes from. While a DataLoader loads a
// sample, random transforms draw from a generator seeded by (epoch key, sample position), so the
// batches depend only on the loader's seed, never on which worker thread loads them.
#pragma once

#include <cmath>
#include <cstdint>

#include "../random.hpp"

namespace dl::data {

// ------------------------------------------------------------------------------ declarations

/// The generator a random transform should draw from: `explicit_generator` when given, else the
/// generator of the sample being loaded (set by DataLoader through SampleSeed), else dl's default
/// generator (seeded by dl::manual_seed).
Generator& sample_generator(Generator* explicit_generator = nullptr);

/// Marks the loading of one batch: samples j = 0, 1, ... of the batch are at epoch positions
/// first_position + j. DataLoader sets it around each batch; nests (restores on destruction).
class BatchSeed {
 public:
  BatchSeed(uint64_t epoch_key, int64_t first_position);
  ~BatchSeed();
  BatchSeed(const BatchSeed&) = delete;
  BatchSeed& operator=(const BatchSeed&) = delete;

 private:
  bool prev_active_;
  uint64_t prev_key_;
  int64_t prev_first_;
};

/// Marks the loading of sample j of the current batch: sample_generator() returns a generator
/// seeded from (epoch key, first_position + j) until this scope ends. Without an enclosing
/// BatchSeed it does nothing. DataLoader sets it around each get(i); datasets that implement
/// get_batch(indices) with random transforms set it around each sample themselves.
class SampleSeed {
 public:
  explicit SampleSeed(int64_t j);
  ~SampleSeed();
  SampleSeed(const SampleSeed&) = delete;
  SampleSeed& operator=(const SampleSeed&) = delete;

 private:
  Generator gen_;
  Generator* prev_;
};

/// Uniform double in [0, 1) from `g`.
double uniform(Generator& g);
/// Uniform integer in [low, high); requires low < high.
int64_t randint(Generator& g, int64_t low, int64_t high);

// ------------------------------------------------------------------------------ implementation

namespace detail {

struct RngContext {
  bool batch_active = false;
  uint64_t key = 0;
  int64_t first_position = 0;
  Generator* sample = nullptr;
};

inline RngContext& rng_context() {
  thread_local RngContext ctx;
  return ctx;
}

/// SplitMix64 finaliser: spreads (key, position) pairs over all 64 bits.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A fresh 64-bit seed drawn from a generator (advances it by one Philox block).
inline uint64_t draw_seed(Generator& g) {
  auto [seed, counter] = g.reserve(1);
  const auto w = dl::detail::Philox::generate(seed, counter);
  return (uint64_t(w[0]) << 32) | w[1];
}

}  // namespace detail

inline Generator& sample_generator(Generator* explicit_generator) {
  if (explicit_generator) return *explicit_generator;
  if (Generator* g = detail::rng_context().sample) return *g;
  return default_generator();
}

inline BatchSeed::BatchSeed(uint64_t epoch_key, int64_t first_position) {
  auto& ctx = detail::rng_context();
  prev_active_ = ctx.batch_active;
  prev_key_ = ctx.key;
  prev_first_ = ctx.first_position;
  ctx.batch_active = true;
  ctx.key = epoch_key;
  ctx.first_position = first_position;
}

inline BatchSeed::~BatchSeed() {
  auto& ctx = detail::rng_context();
  ctx.batch_active = prev_active_;
  ctx.key = prev_key_;
  ctx.first_position = prev_first_;
}

inline SampleSeed::SampleSeed(int64_t j)
    : gen_(detail::mix64(detail::rng_context().key ^ detail::mix64(uint64_t(detail::rng_context().first_position + j)))) {
  auto& ctx = detail::rng_context();
  prev_ = ctx.sample;
  if (ctx.batch_active) ctx.sample = &gen_;
}

inline SampleSeed::~SampleSeed() { detail::rng_context().sample = prev_; }

inline double uniform(Generator& g) {
  auto [seed, counter] = g.reserve(1);
  const auto w = dl::detail::Philox::generate(seed, counter);
  return dl::detail::uniform_double(w[0], w[1]);
}

inline int64_t randint(Generator& g, int64_t low, int64_t high) {
  DL_CHECK(low < high, "randint: expected low < high, got low=", low, ", high=", high);
  auto [seed, counter] = g.reserve(1);
  const auto w = dl::detail::Philox::generate(seed, counter);
  const uint64_t r = (uint64_t(w[0]) << 32) | w[1];
  return low + int64_t(r % uint64_t(high - low));
}

}  // namespace dl::data
