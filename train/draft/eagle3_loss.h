// The EAGLE-3 training loss over the training-time test's steps (eagle3.h).
//
// Step s row i drafts t_{i+2+s}; the target's distribution of that token is its softmax at
// position i+1+s along the stored sequence, restricted to the draft vocabulary (the rows of
// the target logits at the vocabulary's target ids, renormalised), p_{s,i}. The drafter's
// q_{s,i} = softmax of its draft-vocab logits. Per step, the forward KL(p ‖ q) is averaged
// over the supervised rows:
//   mask_{s,i} = i+2+s < T  and  t_{i+1} is a completion token (the chain starts where the
//                engine drafts: after the prompt, its last committed token an output)
//                and t_{i+2+s} is a completion token (not padding)
//   total = Σ_s decay^s · mean_i KL_{s,i}
// Statistics (no gradient): accuracy_s = fraction of supervised rows whose drafted token
// (argmax of q, as a target id) is the target's greedy token at i+1+s over the FULL vocabulary
// (what greedy verification accepts); conditional_s = the same among rows whose steps 0..s−1
// all agreed (the chance of draft s+1 surviving given the earlier ones did).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace dspark::train {

struct Eagle3LossOptions {
  double decay = 1.0;  // weight of step s: decay^s
};

struct Eagle3Loss {
  torch::Tensor total;              // scalar, differentiable
  std::vector<double> kl;           // [steps] mean KL per step
  std::vector<double> accuracy;     // [steps]
  std::vector<double> conditional;  // [steps]
  std::vector<double> rows;         // [steps] supervised rows
};

// Supervised rows of step s: loss_mask [B, T] bool -> [B, T−2−s] bool (rows i = 0..T−3−s).
torch::Tensor eagle3_step_mask(const torch::Tensor& loss_mask, int64_t step);

// step_logits: [steps] x [B, T, V_d] (ttt); target_logits [B, T, V]; loss_mask [B, T] bool;
// vocab_ids [V_d] int64 target ids of the draft vocabulary.
Eagle3Loss eagle3_loss(const std::vector<torch::Tensor>& step_logits, const torch::Tensor& target_logits,
                       const torch::Tensor& loss_mask, const torch::Tensor& vocab_ids,
                       const Eagle3LossOptions& options);

}  // namespace dspark::train
