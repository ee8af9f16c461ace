// The distillation loss of a draft language model (the classic draft-model baseline) against
// its frozen target, on regenerated data.
//
// Row t of a sequence predicts token t+1. It is supervised when t+1 is a completion token
// (loss_mask[t+1]): the draft LM only ever drafts answer tokens. Its loss is the forward
// KL(p_t ‖ q_t) between the target's distribution p_t and the draft's q_t over the full
// vocabulary (the two share the tokenizer), averaged over supervised rows.
// Statistics (no gradient): agreement = fraction of supervised rows whose draft argmax is the
// target's argmax, the chance that greedy verification accepts a draft whose prefix agreed.
#pragma once

#include <torch/types.h>

namespace dspark::train {

struct DraftLmLoss {
  torch::Tensor total;     // scalar, differentiable: mean KL over supervised rows
  double kl = 0;           // the same, as a number
  double agreement = 0;    // argmax agreement with the target
  double rows = 0;         // supervised rows
};

// Supervised rows: loss_mask [B, T] bool -> [B, T−1] bool (row t: loss_mask[t+1]).
torch::Tensor draft_lm_row_mask(const torch::Tensor& loss_mask);

// draft_logits, target_logits: [B, T, V]; loss_mask [B, T] bool.
DraftLmLoss draft_lm_loss(const torch::Tensor& draft_logits, const torch::Tensor& target_logits,
                          const torch::Tensor& loss_mask);

}  // namespace dspark::train
