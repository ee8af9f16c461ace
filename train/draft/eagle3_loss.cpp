#include "train/draft/eagle3_loss.h"

#include <cmath>

#include <ATen/ATen.h>

#include "core/check.h"

namespace dspark::train {

namespace {

// Rows of one step with their supervision: the drafter's logits, the target's restricted
// log-distribution and greedy token, all over rows i = 0..T−3−s.
struct StepRows {
  torch::Tensor draft_logits;  // [B, L, V_d]
  torch::Tensor target_logp;   // [B, L, V_d] f32, no grad
  torch::Tensor target_greedy; // [B, L] int64 full-vocabulary argmax
  torch::Tensor mask;          // [B, L] bool
};

StepRows step_rows(const torch::Tensor& logits, const torch::Tensor& target_logits, const torch::Tensor& loss_mask,
                   const torch::Tensor& vocab_ids, int64_t s) {
  const int64_t len = target_logits.size(1) - 2 - s;
  StepRows r;
  r.draft_logits = logits.narrow(1, 0, len);
  at::NoGradGuard no_grad;
  auto target = target_logits.narrow(1, 1 + s, len);  // predicts t_{i+2+s}
  r.target_logp = at::log_softmax(target.index_select(-1, vocab_ids).to(at::kFloat), -1);
  r.target_greedy = target.argmax(-1);
  r.mask = eagle3_step_mask(loss_mask, s);
  return r;
}

double ratio(const torch::Tensor& num, const torch::Tensor& den) {
  const double d = den.sum().item<double>();
  return d > 0 ? num.sum().item<double>() / d : 0.0;
}

}  // namespace

torch::Tensor eagle3_step_mask(const torch::Tensor& loss_mask, int64_t s) {
  const int64_t len = loss_mask.size(1) - 2 - s;
  return loss_mask.narrow(1, 1, len) & loss_mask.narrow(1, 2 + s, len);
}

Eagle3Loss eagle3_loss(const std::vector<torch::Tensor>& step_logits, const torch::Tensor& target_logits,
                       const torch::Tensor& loss_mask, const torch::Tensor& vocab_ids, const Eagle3LossOptions& o) {
  DSPARK_CHECK(!step_logits.empty(), "eagle3 loss: no steps");
  Eagle3Loss out;
  out.total = at::zeros({}, at::TensorOptions().dtype(at::kFloat));
  torch::Tensor all_agreed;  // [B, L_{s−1}] f32: steps 0..s−1 all agreed
  const int64_t t = target_logits.size(1);
  for (int64_t s = 0; s < static_cast<int64_t>(step_logits.size()); ++s) {
    if (t - 2 - s <= 0) break;  // too short for this step: it supervises nothing
    const StepRows r = step_rows(step_logits[static_cast<size_t>(s)], target_logits, loss_mask, vocab_ids, s);
    auto log_q = at::log_softmax(r.draft_logits.to(at::kFloat), -1);                  // [B, L, V_d]
    auto p = r.target_logp.exp();
    auto kl = at::where(p > 0, p * (r.target_logp - log_q), at::zeros({}, p.options())).sum(-1);  // [B, L]
    auto w = r.mask.to(at::kFloat);
    const auto count = w.sum();
    out.total = out.total + std::pow(o.decay, static_cast<double>(s)) * (kl * w).sum() / count.clamp_min(1.0);

    at::NoGradGuard no_grad;
    auto agreed = vocab_ids.index_select(0, log_q.argmax(-1).reshape({-1}))
                      .view(r.target_greedy.sizes())
                      .eq(r.target_greedy)
                      .to(at::kFloat);                                                 // [B, L]
    auto before = all_agreed.defined() ? all_agreed.narrow(1, 0, agreed.size(1)) : at::ones_like(agreed);
    out.kl.push_back(ratio(kl.detach() * w, w));
    out.accuracy.push_back(ratio(agreed * w, w));
    out.conditional.push_back(ratio(agreed * before * w, before * w));
    out.rows.push_back(count.item<double>());
    all_agreed = agreed * before;
  }
  return out;
}

}  // namespace dspark::train
