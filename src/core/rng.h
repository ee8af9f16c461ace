// A small, fast, seedable random generator (xoshiro256** seeded through splitmix64).
// Deterministic across platforms and library versions, unlike std::uniform_*_distribution,
// so a request with a seed reproduces its tokens anywhere.
#pragma once

#include <cstdint>

namespace dspark {

// SplitMix64's finaliser: a bijection of 64-bit words in which every input bit affects
// every output bit. The base of Rng's seeding, the keyed sampling noise and the prefix
// cache's block keys.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : state_) s = splitmix64(x);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) { return mix64(x += 0x9e3779b97f4a7c15ull); }
  uint64_t state_[4];
};

}  // namespace dspark
