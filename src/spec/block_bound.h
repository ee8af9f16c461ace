// How much a block drafter could be accepted at a sampling temperature, whatever its size
// and training: the structural limit of drafting K positions in one pass.
//
// After an anchor (the last committed token), an autoregressive drafter can in principle
// draft each position from the target's own distribution p_j(. | prefix, earlier drafts)
// and be accepted every time. A block drafter (DFlash, DSpark's backbone) produces all K
// distributions at once from the prefix alone, so at position j its best q_j is p_j
// averaged over what the earlier positions may have drawn: the marginal. DSpark's Markov
// head adds the draft just before (x_{j-1}); its best is p_j averaged over the earlier
// positions given x_{j-1}: the first-order bound. Greedy decoding loses nothing to either
// (the target's continuation is one path); sampling loses what the target's entropy
// spreads over paths. Speculative sampling accepts a draft drawn from q with probability
// 1 - TV(p, q), so those bounds follow from samples of the target's own continuations.
//
// Estimate: S continuations of K tokens sampled from the target after one anchor, with p at
// every position of each. For sample s, q_j is the mean of p_j over the other samples, so a
// sample never helps predict itself: all of them for the marginal; for the first order,
// those that drew the same x_{j-1}, or the marginal where none did (so the first-order
// figure is a lower bound that rises with S), except at the second position, where it is
// exact (p_2 itself: the prefix and x_1 are all p_2 depends on). The survival of position j
// is the mean over samples of the product of their acceptances up to j (the drafted prefix
// must survive), and tau = 1 + the sum of the survivals. Approximation: continuations are
// the target's samples, where accepted drafts are drawn from min(p, q) renormalised; exact
// when q = p.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark {

// S sampled continuations of K positions after one anchor (one prefix for all).
struct ContinuationSamples {
  int64_t num_samples = 0;      // S >= 2
  int64_t block = 0;            // K >= 1
  int64_t vocab = 0;
  std::vector<float> probs;     // [S, K, vocab]: p_j of sample s (rows summing to 1)
  std::vector<int32_t> tokens;  // [S, K]: the token sample s drew at position j
};

struct BlockBound {
  std::vector<double> marginal_survival;     // [K]
  std::vector<double> first_order_survival;  // [K]
  double marginal_tau() const;               // 1 + sum of marginal_survival
  double first_order_tau() const;
};

BlockBound block_drafter_bound(const ContinuationSamples& samples);

}  // namespace dspark
