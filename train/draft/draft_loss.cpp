#include "train/draft/draft_loss.h"

#include <cmath>

#include <ATen/ATen.h>

#include "core/check.h"

namespace dspark::train {

BlockTargets block_targets(const torch::Tensor& input_ids, const torch::Tensor& loss_mask,
                           const torch::Tensor& anchors, const torch::Tensor& keep, int64_t num_drafts) {
  const int64_t b = input_ids.size(0), t = input_ids.size(1), n = anchors.size(1);
  auto long_opts = at::TensorOptions().dtype(at::kLong);
  auto offsets = at::arange(1, num_drafts + 1, long_opts).view({1, 1, num_drafts});
  auto label_pos = anchors.to(at::kLong).unsqueeze(-1) + offsets;            // [B, N, D]
  auto in_range = label_pos.lt(t) & keep.to(at::kBool).unsqueeze(-1);
  auto safe_pos = at::where(in_range, label_pos, at::zeros_like(label_pos));  // a gatherable index
  auto ids = input_ids.to(at::kLong);
  auto flat = [&](const torch::Tensor& x) { return x.view({b, n * num_drafts}); };
  BlockTargets out;
  out.labels = ids.gather(1, flat(safe_pos)).view({b, n, num_drafts});
  auto prev_pos = at::where(in_range, label_pos - 1, at::zeros_like(label_pos));
  out.prev = ids.gather(1, flat(prev_pos)).view({b, n, num_drafts});
  out.target_rows = prev_pos + at::arange(b, long_opts).view({b, 1, 1}) * t;
  auto supervised = loss_mask.to(at::kBool).gather(1, flat(safe_pos)).view({b, n, num_drafts}) & in_range;
  out.valid = supervised.to(at::kInt).cumprod(-1).to(at::kFloat);
  return out;
}

torch::Tensor position_weights(int64_t num_drafts, double decay) {
  auto j = at::arange(num_drafts, at::TensorOptions().dtype(at::kFloat));
  if (decay <= 0) return at::ones_like(j);
  return at::exp(-j / decay);
}

DraftLoss draft_loss(const torch::Tensor& draft_logits, const torch::Tensor& target_probs,
                     const torch::Tensor& labels, const torch::Tensor& confidence_logits, const torch::Tensor& valid,
                     const DraftLossOptions& o) {
  const int64_t d = draft_logits.size(-2), v = draft_logits.size(-1);
  DSPARK_CHECK(labels.sizes() == valid.sizes() && draft_logits.size(-2) == labels.size(-1),
               "draft_loss: logits {} do not match labels {}", c10::str(draft_logits.sizes()),
               c10::str(labels.sizes()));
  auto w = valid.to(at::kFloat) * position_weights(d, o.decay);  // [B, N, D]
  const double weight_sum = w.sum().item<double>();
  const double denom = weight_sum > 0 ? weight_sum : 1.0;
  auto logits = draft_logits.to(at::kFloat);
  auto log_q = at::log_softmax(logits, -1);
  auto ce_tok = -log_q.gather(-1, labels.to(at::kLong).unsqueeze(-1)).squeeze(-1);  // [B, N, D]
  auto ce = (ce_tok * w).sum() / denom;

  DraftLoss out;
  out.weight_sum = weight_sum;
  torch::Tensor total = ce * o.ce_weight;
  out.ce = ce.item<double>();
  if (target_probs.defined()) {
    DSPARK_CHECK(target_probs.sizes() == draft_logits.sizes(), "draft_loss: target probs {} vs logits {}",
                 c10::str(target_probs.sizes()), c10::str(draft_logits.sizes()));
    auto tv_tok = 0.5 * (log_q.exp() - target_probs).abs().sum(-1);  // [B, N, D]
    out.acceptance = (1.0 - tv_tok).detach().clamp(0.0, 1.0);
    auto tv = (tv_tok * w).sum() / denom;
    out.tv = tv.item<double>();
    if (o.tv_weight != 0) total = total + tv * o.tv_weight;
    if (o.kl_weight != 0) {
      auto kl_tok = (at::xlogy(target_probs, target_probs) - target_probs * log_q).sum(-1);  // [B, N, D]
      auto kl = (kl_tok * w).sum() / denom;
      out.kl = kl.item<double>();
      total = total + kl * o.kl_weight;
    }
    if (confidence_logits.defined() && o.confidence_weight != 0) {
      auto bce = at::binary_cross_entropy_with_logits(confidence_logits.to(at::kFloat), out.acceptance, {}, {},
                                                      at::Reduction::None);
      auto conf = (bce * w).sum() / denom;
      out.confidence = conf.item<double>();
      total = total + conf * o.confidence_weight;
    }
  } else {
    DSPARK_CHECK(o.tv_weight == 0 && o.kl_weight == 0 && (!confidence_logits.defined() || o.confidence_weight == 0),
                 "draft_loss: the TV, KL and confidence terms need the target's probabilities");
  }
  (void)v;
  out.total = total;
  return out;
}

}  // namespace dspark::train
