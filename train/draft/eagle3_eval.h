// Offline evaluation of an EAGLE-3 drafter against its target on held-out regen sequences:
// greedy verification of K drafts, drafted exactly as the engine drafts (Eagle3Impl's
// draft_chains: context rows from the target's features, then one row per draft).
//
// Chains: every anchor a of a sequence (the last committed token; prompt_len <= a and the K
// labels t_{a+1..a+K} inside the sequence, at most max_chains per sequence, evenly spaced)
// drafts x_1..x_K after the context rows 0..a−1. y_j = the target's greedy token at a+j−1
// along the stored sequence; draft j is accepted when x_j = y_j and drafts 1..j−1 were. A
// chain whose stored sequence leaves the target's greedy path inside the accepted prefix
// (t_{a+i} != y_i) is undeterminable and left out, as in draft_eval.h.
//   tau_greedy = 1 + mean accepted drafts per chain (the bonus token counts)
//   accept_greedy[j] = fraction of chains with drafts 1..j accepted;
//   accept_conditional[j] = that / fraction with 1..j−1 accepted.
#pragma once

#include <cstdint>
#include <vector>

#include "train/draft/regen_records.h"
#include "train/model/bf16_default.h"

namespace dspark::train {

class CausalLmImpl;
class Eagle3Impl;

struct Eagle3EvalOptions {
  int64_t drafts = 8;        // K
  int64_t max_chains = 64;   // chains per sequence at most
  int64_t batch = 4;         // sequences per target pass
  int64_t chain_batch = 64;  // chains drafted together
  bool bf16 = bf16_autocast_by_default();
  int32_t pad_id = 0;
};

struct Eagle3EvalResult {
  int64_t num_sequences = 0;
  int64_t num_chains = 0;
  int64_t num_greedy_chains = 0;          // of which determinable
  double tau_greedy = 0;
  std::vector<double> accept_greedy;      // [K]
  std::vector<double> accept_conditional; // [K]
};

Eagle3EvalResult evaluate_eagle3(const CausalLmImpl& target, const Eagle3Impl& drafter,
                                 const std::vector<DraftSequence>& sequences, const Eagle3EvalOptions& options);

}  // namespace dspark::train
