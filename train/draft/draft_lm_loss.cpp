#include "train/draft/draft_lm_loss.h"

#include <ATen/ATen.h>

#include "core/check.h"

namespace dspark::train {

torch::Tensor draft_lm_row_mask(const torch::Tensor& loss_mask) {
  return loss_mask.narrow(1, 1, loss_mask.size(1) - 1);
}

DraftLmLoss draft_lm_loss(const torch::Tensor& draft_logits, const torch::Tensor& target_logits,
                          const torch::Tensor& loss_mask) {
  DSPARK_CHECK(draft_logits.dim() == 3 && draft_logits.sizes() == target_logits.sizes(),
               "draft-lm loss: draft and target logits must both be [B, T, V] of one shape");
  DSPARK_CHECK(loss_mask.dim() == 2 && loss_mask.size(0) == draft_logits.size(0) &&
                   loss_mask.size(1) == draft_logits.size(1),
               "draft-lm loss: the loss mask must be [B, T] of the logits' B and T");
  const int64_t rows = draft_logits.size(1) - 1;
  DraftLmLoss out;
  if (rows <= 0) {
    out.total = (draft_logits.sum() * 0).to(at::kFloat);  // nothing to supervise, still differentiable
    return out;
  }
  auto log_q = at::log_softmax(draft_logits.narrow(1, 0, rows).to(at::kFloat), -1);  // [B, T−1, V]
  torch::Tensor log_p, p;
  {
    at::NoGradGuard no_grad;
    log_p = at::log_softmax(target_logits.narrow(1, 0, rows).to(at::kFloat), -1);
    p = log_p.exp();
  }
  auto kl = at::where(p > 0, p * (log_p - log_q), at::zeros({}, p.options())).sum(-1);  // [B, T−1]
  auto w = draft_lm_row_mask(loss_mask).to(at::kFloat);
  const double count = w.sum().item<double>();
  out.total = (kl * w).sum() / std::max(count, 1.0);
  out.rows = count;
  at::NoGradGuard no_grad;
  out.kl = count > 0 ? (kl.detach() * w).sum().item<double>() / count : 0.0;
  auto agreed = log_q.argmax(-1).eq(log_p.argmax(-1)).to(at::kFloat);
  out.agreement = count > 0 ? (agreed * w).sum().item<double>() / count : 0.0;
  return out;
}

}  // namespace dspark::train
