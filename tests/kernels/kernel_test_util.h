// Helpers shared by the kernel tests: seeded random data, bitwise comparisons, ISA caps.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "kernels/isa.h"

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

// The ISA caps a test of the vector kernels runs under: AVX2 (the 8-lane paths) and, where
// the CPU has more, its best level (AVX-512: the 16-lane paths). Restores the cap when it
// goes. for (Isa isa : caps.caps) { set_active_isa(isa); ... }
struct EachIsa {
  Isa saved = active_isa();
  std::vector<Isa> caps = best_isa() == Isa::kAvx2 ? std::vector<Isa>{Isa::kAvx2}
                                                   : std::vector<Isa>{Isa::kAvx2, best_isa()};
  ~EachIsa() { set_active_isa(saved); }
};

}  // namespace dspark::testing
