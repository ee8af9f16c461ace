// MixtureSampler: which token windows make up each training batch.
//
// Window i of step s is a pure function of (seed, s, i): a source drawn by the mixture
// weights, then a uniform start inside that source's train tokens. Nothing is consumed or
// carried between steps, so a run resumed at step s sees exactly the batches an
// uninterrupted run would; the checkpoint needs only the seed.
//
// Validation windows are fixed: per source, `count` windows evenly spaced over its val
// tokens (fewer when the val split is short).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/token_shards.h"

namespace dspark::train {

struct MixtureWeight {
  std::string source;
  double weight = 0;
};

// Parses "gsm8k=0.3,code=0.5,prose=0.2"; weights need not sum to 1 but must be >= 0 with a
// positive sum. Throws naming the bad entry.
std::vector<MixtureWeight> parse_mixture(std::string_view spec);
std::string format_mixture(const std::vector<MixtureWeight>& mixture);

struct Window {
  int32_t source = 0;  // index into TokenShards::sources()
  int64_t start = 0;   // first token
};

class MixtureSampler {
 public:
  // window_tokens = seq_len + 1 (inputs plus the shifted targets). Every mixture source must
  // exist in the corpus and have at least window_tokens train tokens when its weight is > 0.
  MixtureSampler(const TokenShards& corpus, const std::vector<MixtureWeight>& mixture, int64_t window_tokens,
                 uint64_t seed);

  Window window(int64_t step, int64_t index) const;
  // Copies windows index0 .. index0+count-1 of `step` into out. out: [count, window_tokens]
  void fill(int64_t step, int64_t index0, int64_t count, std::span<int32_t> out) const;

  // Fixed validation windows of one source (possibly empty when its val split is too short).
  std::vector<Window> val_windows(size_t source, int64_t count) const;
  void fill_val(std::span<const Window> windows, std::span<int32_t> out) const;  // out: [n, window_tokens]

  int64_t window_tokens() const { return window_tokens_; }
  uint64_t seed() const { return seed_; }

 private:
  const TokenShards& corpus_;
  int64_t window_tokens_;
  uint64_t seed_;
  std::vector<int32_t> sources_;   // corpus index of each weighted source
  std::vector<double> cumulative_;  // normalised cumulative weights, last = 1
};

}  // namespace dspark::train
