#include "train/draft/draft_step.h"

#include <ATen/ATen.h>

#include "core/check.h"
#include "train/draft/drafter.h"
#include "train/model/autocast.h"
#include "train/model/transformer.h"

namespace dspark::train {

DraftTensors to_tensors(const DraftBatch& b) {
  DraftTensors t;
  t.ids = torch::from_blob(const_cast<int32_t*>(b.tokens.data()), {b.batch, b.length}, at::kInt).to(at::kLong);
  t.loss_mask = torch::from_blob(const_cast<uint8_t*>(b.loss_mask.data()), {b.batch, b.length}, at::kByte)
                    .to(at::kBool);
  t.anchors = torch::from_blob(const_cast<int64_t*>(b.anchors.data()), {b.batch, b.num_anchors}, at::kLong).clone();
  t.keep = torch::from_blob(const_cast<uint8_t*>(b.keep.data()), {b.batch, b.num_anchors}, at::kByte).to(at::kBool);
  return t;
}

TargetOutputs run_target(const CausalLmImpl& target, const torch::Tensor& ids, const std::vector<int64_t>& layers,
                         bool bf16) {
  at::NoGradGuard no_grad;
  Bf16Autocast autocast(bf16);
  ForwardOutput out = target.forward(ids, layers);
  TargetOutputs t;
  std::vector<torch::Tensor> hidden;
  for (auto& h : out.hidden_states) hidden.push_back(h.to(at::kFloat));
  if (!hidden.empty()) t.aux = at::cat(hidden, -1);
  t.logits = out.logits;
  return t;
}

torch::Tensor gather_target_probs(const torch::Tensor& target_logits, const torch::Tensor& rows) {
  at::NoGradGuard no_grad;
  const int64_t v = target_logits.size(-1);
  auto flat = target_logits.reshape({-1, v});
  auto picked = flat.index_select(0, rows.reshape({-1})).to(at::kFloat);
  std::vector<int64_t> shape(rows.sizes().begin(), rows.sizes().end());
  shape.push_back(v);
  return at::softmax(picked, -1).view(shape);
}

BlockForward forward_blocks(const DrafterImpl& drafter, const DraftTensors& batch, const TargetOutputs& target,
                            bool bf16, bool with_target_probs) {
  BlockForward f;
  f.targets = block_targets(batch.ids, batch.loss_mask, batch.anchors, batch.keep, drafter.num_drafts());
  {
    Bf16Autocast autocast(bf16);
    auto ctx = drafter.context(target.aux);
    auto states = drafter.block_states(ctx, batch.ids, batch.anchors);
    f.hidden = drafter.drafting_states(states);
    f.logits = drafter.draft_logits(f.hidden, f.targets.prev);
    if (drafter.has_confidence()) f.confidence = drafter.confidence_logits(f.hidden, f.targets.prev);
  }
  if (with_target_probs) f.target_probs = gather_target_probs(target.logits, f.targets.target_rows);
  return f;
}

}  // namespace dspark::train
