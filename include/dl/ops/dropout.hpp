// dl/ops/dropout.hpp — the random keep-masks of the dropout family: each element (or channel) kept
// with a given probability, from dl's counter-based Philox generator, so a mask depends only on
// the seed and the generator's position, never on the thread count.
#pragma once

#include <cmath>
#include <cstdint>

#include "../tensor.hpp"

namespace dl::detail {

// ------------------------------------------------------------------------------ declarations

/// A tensor of `shape` whose elements are `value` with probability `keep` and 0 otherwise; each
/// element compares a 32-bit Philox word with keep * 2^32. @pre 0 <= keep <= 1
template <class T>
Tensor<T> keep_mask(const Shape& shape, double keep, T value, Generator* gen = nullptr);

// ------------------------------------------------------------------------------ implementation

template <class T>
Tensor<T> keep_mask(const Shape& shape, double keep, T value, Generator* gen) {
  Tensor<T> m = empty<T>(shape);
  T* p = m.data();
  // u < keep * 2^32 for a uniform 32-bit u has probability keep (to 2^-32).
  const uint64_t threshold = uint64_t(std::llround(keep * 4294967296.0));
  philox_fill(gen, m.numel(), 4, [p, threshold, value](int64_t i, const uint32_t* w) {
    p[i] = uint64_t(w[0]) < threshold ? value : T(0);
  });
  return m;
}

}  // namespace dl::detail
