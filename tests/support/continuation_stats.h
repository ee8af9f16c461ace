// The statistic behind the tests that sampled speculative decoding is distributed exactly as
// the target: over a tiny vocabulary, every continuation of `length` tokens after a prompt
// is one cell (index = the tokens read as base-vocab digits, first token most significant);
// the exact distribution comes from the target's own probabilities, the empirical one from
// many sampled requests through the engine, and their total variation must stay below what
// the sampling noise of that many exact draws allows.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "kernels/sampling.h"
#include "model/transformer.h"

namespace dspark::testing {

// Exact probability of every continuation under model with the sampling transform sp:
// [vocab^length].
std::vector<double> exact_continuations(Transformer& model, const std::vector<int32_t>& prompt,
                                        const SamplingParams& sp, int64_t vocab, int length);

// Frequencies of the continuations of `samples` requests of prompt (EOS ignored, sampling
// seeds first_seed, first_seed + 1, ...) run on engine: [vocab^length], summing to 1.
std::vector<double> sampled_continuations(Engine& engine, const std::vector<int32_t>& prompt,
                                          const SamplingParams& sp, int64_t vocab, int length, int samples,
                                          uint64_t first_seed);

double total_variation(const std::vector<double>& a, const std::vector<double>& b);

// Expected TV of n exact draws plus 6 standard deviations (normal approximation per cell).
double tv_threshold(const std::vector<double>& exact, int n);

}  // namespace dspark::testing
