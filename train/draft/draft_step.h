// One drafter pass over a batch, shared by training and evaluation:
//   target (frozen, no grad): aux-layer hidden states and logits of every position;
//   drafter: context features, every anchor block at once, teacher-forced draft logits
//   U_j + W₂·W₁[t_{a+j−1}] and confidence logits z_j, and the target's p_j of each draft.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "train/draft/draft_batch.h"
#include "train/draft/draft_loss.h"

namespace dspark::train {

class CausalLmImpl;
class DrafterImpl;

struct DraftTensors {
  torch::Tensor ids;        // [B, T] int64
  torch::Tensor loss_mask;  // [B, T] bool
  torch::Tensor anchors;    // [B, N] int64
  torch::Tensor keep;       // [B, N] bool
};
DraftTensors to_tensors(const DraftBatch& batch);

struct TargetOutputs {
  torch::Tensor aux;     // [B, T, k·H_t] f32: concat of the capture layers' outputs (undefined without layers)
  torch::Tensor logits;  // [B, T, V] (autocast dtype)
};
// No gradient; bf16 autocast when asked.
TargetOutputs run_target(const CausalLmImpl& target, const torch::Tensor& ids, const std::vector<int64_t>& layers,
                         bool bf16);

struct BlockForward {
  BlockTargets targets;
  torch::Tensor hidden;        // [B, N, D, H] h_j
  torch::Tensor logits;        // [B, N, D, V] teacher-forced draft logits
  torch::Tensor confidence;    // [B, N, D] z_j (teacher forced), undefined without the head
  torch::Tensor target_probs;  // [B, N, D, V] f32 p_j (no grad)
};
// with_target_probs: also gather p_j (needed by the TV / confidence terms and by statistics).
BlockForward forward_blocks(const DrafterImpl& drafter, const DraftTensors& batch, const TargetOutputs& target,
                            bool bf16, bool with_target_probs);

// p_j rows of the target logits: [B, T, V], rows [B, N, D] -> softmax [B, N, D, V] f32.
torch::Tensor gather_target_probs(const torch::Tensor& target_logits, const torch::Tensor& rows);

}  // namespace dspark::train
