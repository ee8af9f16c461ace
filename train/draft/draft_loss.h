// Supervision of drafter blocks and the training loss of DESIGN §4.
//
// block_targets(): for draft j = 1..D of the block anchored at a: label = token at a + j;
// prev = token at a + j − 1 (the Markov / confidence input under teacher forcing: the
// anchor for j = 1, then the true previous token); target_row = the flat row b·T + a + j − 1
// of the target's [B·T, V] logits (the target's distribution of the token at a + j);
// valid = the anchor is real, a + j < T and every label a+1 .. a+j is a completion token
// (a contiguous supervised prefix, as in the reference).
//
// draft_loss(): per position j, weighted by valid · exp(−(j−1)/decay), each term averaged
// over the weights (Σ w·term / Σ w):
//   ce    −log q_j(label)                       (q_j = softmax of the Markov-corrected logits)
//   tv    ½‖q_j − p_j‖₁                          (total variation; DESIGN's TV)
//   conf  BCE(sigmoid(z_j), c*_j), c*_j = 1 − ½‖q_j − p_j‖₁ detached
//   kl    KL(p_j ‖ q_j) = Σ p_j (log p_j − log q_j)   (the draft LM's distillation loss)
//   total = ce_weight·ce + tv_weight·tv + confidence_weight·conf + kl_weight·kl
// Note: the paper / DeepSpec's "L_tv" is ‖q − p‖₁ itself (= 2·TV), so their l1 weight 0.9
// equals tv_weight 1.8 here.
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace dspark::train {

struct BlockTargets {
  torch::Tensor labels;       // [B, N, D] int64
  torch::Tensor prev;         // [B, N, D] int64
  torch::Tensor target_rows;  // [B, N, D] int64, into [B·T, V]
  torch::Tensor valid;        // [B, N, D] f32 (1 / 0)
};

// input_ids [B, T] int64, loss_mask [B, T] bool, anchors [B, N] int64, keep [B, N] bool.
BlockTargets block_targets(const torch::Tensor& input_ids, const torch::Tensor& loss_mask,
                           const torch::Tensor& anchors, const torch::Tensor& keep, int64_t num_drafts);

struct DraftLossOptions {
  double ce_weight = 0.1;          // DFlash: 1
  double tv_weight = 0.9;          // DFlash: 0
  double confidence_weight = 1.0;  // ignored without a confidence head
  double kl_weight = 0.0;          // 0: the paper's loss
  double decay = 4.0;              // position weight exp(−(j−1)/decay); <= 0: uniform
};

struct DraftLoss {
  torch::Tensor total;       // scalar, differentiable
  double ce = 0;             // weighted means (for logs)
  double tv = 0;
  double confidence = 0;
  double kl = 0;
  double weight_sum = 0;     // Σ w
  torch::Tensor acceptance;  // [B, N, D] 1 − TV per position (detached), or undefined without p
};

// draft_logits [B, N, D, V] (any float dtype), target_probs [B, N, D, V] f32 or undefined
// (CE only), labels [B, N, D], confidence_logits [B, N, D] or undefined, valid [B, N, D].
DraftLoss draft_loss(const torch::Tensor& draft_logits, const torch::Tensor& target_probs,
                     const torch::Tensor& labels, const torch::Tensor& confidence_logits, const torch::Tensor& valid,
                     const DraftLossOptions& options);

// exp(−j/decay) for j = 0..D−1 (uniform when decay <= 0). [D] f32
torch::Tensor position_weights(int64_t num_drafts, double decay);

}  // namespace dspark::train
