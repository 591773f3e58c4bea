// dl/random.hpp — seedable, counter-based random numbers (Philox4x32-10). Element i of a random
// fill depends only on (seed, offset, i), so results are identical for any thread count and can be
// reproduced on the GPU. dl::manual_seed(s) seeds the default generator.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <numbers>

#include "config.hpp"
#include "parallel.hpp"

namespace dl {

namespace detail {

/// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
struct Philox {
  static constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  static constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

  DL_HD static constexpr std::array<uint32_t, 4> generate(uint64_t key, uint64_t counter_lo, uint64_t counter_hi = 0) {
    uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
    uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32), c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
    for (int r = 0; r < 10; ++r) {
      const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
      const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n1 = uint32_t(p1);
      const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1, n3 = uint32_t(p0);
      c0 = n0;
      c1 = n1;
      c2 = n2;
      c3 = n3;
      k0 += kW0;
      k1 += kW1;
    }
    return {c0, c1, c2, c3};
  }
};

/// The random fills that also run on a GPU (dl/cuda/random.hpp), element for element the same.
enum class RandomKind : int { Uniform, Normal, Int, KeepMask };

/// Philox blocks a fill of n elements takes from its generator, as the CPU code reserves them:
/// uniform 4 floats or 2 doubles a block; normal a Box-Muller pair per 2 words (2 pairs of floats,
/// 1 of doubles a block); integers 2 a block; a keep mask 16 blocks per 64 elements.
DL_HD constexpr uint64_t philox_blocks(RandomKind kind, bool is_float, int64_t n) {
  const uint64_t m = uint64_t(n);
  switch (kind) {
    case RandomKind::Uniform: return is_float ? (m + 3) / 4 : (m + 1) / 2;
    case RandomKind::Normal: return is_float ? ((m + 1) / 2 + 1) / 2 : (m + 1) / 2;
    case RandomKind::Int: return (m + 1) / 2;
    case RandomKind::KeepMask: return (m + 63) / 64 * 16;
  }
  return 0;
}

/// Uniform in [0, 1) with 24 random bits (float) or 53 (double).
DL_HD constexpr float uniform_float(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
DL_HD constexpr double uniform_double(uint32_t hi, uint32_t lo) {
  return double((uint64_t(hi) << 21) ^ (lo >> 11)) * (1.0 / 9007199254740992.0);
}

}  // namespace detail

/// A random number generator: a seed and a counter offset. Each random op takes the next range of
/// counters, so the sequence of ops after manual_seed(s) is reproducible.
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    std::lock_guard lock(mutex_);
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  /// Saves and restores the generator position.
  std::array<uint64_t, 2> get_state() const { return {seed_, offset_}; }
  void set_state(std::array<uint64_t, 2> s) {
    std::lock_guard lock(mutex_);
    seed_ = s[0];
    offset_ = s[1];
  }
  /// Reserves `blocks` Philox counters; returns (seed, first counter).
  std::pair<uint64_t, uint64_t> reserve(uint64_t blocks) {
    std::lock_guard lock(mutex_);
    const uint64_t first = offset_;
    offset_ += blocks;
    return {seed_, first};
  }

 private:
  std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// The process-wide default generator used when no generator is passed.
inline Generator& default_generator() {
  static Generator g;
  return g;
}

/// Seeds the default generator (PyTorch's torch.manual_seed).
inline void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

namespace detail {

/// Calls f(i, words) for every element i < n where words are the 4 random 32-bit words of Philox
/// block (first + i / per_block); each element uses 4 / per_block words starting at lane
/// (i % per_block) * (4 / per_block). Parallel, and independent of the thread count.
template <class F>
void philox_fill(Generator* gen, int64_t n, int per_block, F&& f) {
  if (n <= 0) return;
  const uint64_t blocks = uint64_t((n + per_block - 1) / per_block);
  auto [seed, first] = (gen ? *gen : default_generator()).reserve(blocks);
  parallel_for(0, int64_t(blocks), 4096, [&, seed = seed, first = first](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const auto words = Philox::generate(seed, first + uint64_t(blk));
      for (int k = 0; k < per_block; ++k) {
        const int64_t i = blk * per_block + k;
        if (i < n) f(i, words.data() + k * (4 / per_block));
      }
    }
  });
}

}  // namespace detail

}  // namespace dl
