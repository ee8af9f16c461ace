// Helpers shared by the kernel tests: seeded random data and bitwise comparisons.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/rng.h"

namespace dspark::testing {

// n values uniform in [lo, hi), reproducible from seed.
inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + static_cast<float>(rng.uniform()) * (hi - lo);
  return v;
}

// True when the n floats at a and b have identical bit patterns.
inline bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace dspark::testing
