#include "train/draft/draft_eval.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "core/check.h"
#include "spec/tail_match.h"
#include "train/draft/draft_batch.h"
#include "train/draft/draft_step.h"
#include "train/draft/drafter.h"
#include "train/model/autocast.h"
#include "train/model/transformer.h"

namespace dspark::train {

std::string format_rates(const std::vector<double>& rates) {
  std::string out;
  for (size_t i = 0; i < rates.size(); ++i) out += fmt::format("{}{:.3f}", i ? " " : "", rates[i]);
  return out.empty() ? "-" : out;
}

DraftEvalResult evaluate_drafter(const CausalLmImpl& target, const DrafterImpl& drafter,
                                 const std::vector<DraftSequence>& sequences, const DraftEvalOptions& o) {
  at::NoGradGuard no_grad;
  const int64_t d = drafter.num_drafts();
  DraftEvalResult r;
  r.confidence.num_drafts = d;
  r.confidence_sampled.num_drafts = d;
  std::vector<double> survived(d, 0.0), alpha_sum(d, 0.0);
  std::vector<int32_t> drafted(static_cast<size_t>(d));  // [D] one block's greedy drafts
  double accepted_sum = 0, tau_expected_sum = 0, tau_expected_sampled_sum = 0, ce_sum = 0;
  int64_t ce_count = 0;
  const std::vector<int64_t> layers = drafter.capture_layers();

  for (size_t first = 0; first < sequences.size(); first += static_cast<size_t>(o.batch)) {
    std::vector<const DraftSequence*> rows;
    std::vector<std::vector<int64_t>> anchors;
    int64_t n_max = 0;
    for (size_t i = first; i < std::min(sequences.size(), first + static_cast<size_t>(o.batch)); ++i) {
      auto a = full_block_anchors(sequences[i], d, o.max_anchors);
      if (a.empty()) continue;
      n_max = std::max<int64_t>(n_max, static_cast<int64_t>(a.size()));
      rows.push_back(&sequences[i]);
      anchors.push_back(std::move(a));
    }
    if (rows.empty()) continue;
    r.num_sequences += static_cast<int64_t>(rows.size());
    const DraftBatch batch = make_draft_batch(rows, anchors, n_max, o.pad_id);
    const DraftTensors t = to_tensors(batch);
    const TargetOutputs out = run_target(target, t.ids, layers, o.bf16);
    const BlockForward f = forward_blocks(drafter, t, out, o.bf16, /*with_target_probs=*/true);

    // Teacher-forced quantities.
    auto logits = f.logits.to(at::kFloat);                                        // [B, N, D, V]
    auto log_q = at::log_softmax(logits, -1);
    auto alpha = (1.0 - 0.5 * (log_q.exp() - f.target_probs).abs().sum(-1)).clamp(0.0, 1.0);  // [B, N, D]
    auto ce = -log_q.gather(-1, f.targets.labels.unsqueeze(-1)).squeeze(-1);       // [B, N, D]
    auto y = f.target_probs.argmax(-1);                                           // [B, N, D]

    // Greedy drafting with the drafted previous token, as the engine does.
    // Teacher-forced confidence logits too (prev = the stored token), for sampled verification.
    std::vector<torch::Tensor> xs, zs, zs_forced;
    {
      Bf16Autocast autocast(o.bf16);
      auto u = drafter.base_logits(f.hidden);                                     // [B, N, D, V]
      auto prev = t.ids.gather(1, t.anchors);                                     // [B, N] anchors
      auto prev_forced = prev;
      for (int64_t j = 0; j < d; ++j) {
        auto h_j = f.hidden.select(2, j);
        auto l_j = u.select(2, j);
        if (drafter.has_markov()) l_j = l_j + drafter.markov_bias(h_j, prev).to(l_j.scalar_type());
        if (drafter.has_confidence()) {
          zs.push_back(drafter.confidence_logits(h_j, prev));
          zs_forced.push_back(drafter.confidence_logits(h_j, prev_forced));
        }
        auto x_j = l_j.to(at::kFloat).argmax(-1);
        xs.push_back(x_j);
        prev = x_j;
        prev_forced = f.targets.labels.select(2, j);
      }
    }
    auto x = at::stack(xs, 2).contiguous();                                       // [B, N, D]
    auto z = zs.empty() ? torch::Tensor() : at::stack(zs, 2).to(at::kFloat).contiguous();  // [B, N, D]
    auto z_forced = zs_forced.empty() ? torch::Tensor() : at::stack(zs_forced, 2).to(at::kFloat).contiguous();
    auto labels = f.targets.labels.contiguous();
    auto valid = f.targets.valid.contiguous();
    auto y_c = y.contiguous();
    auto alpha_c = alpha.contiguous();
    auto ce_c = ce.contiguous();
    const int64_t* xp = x.data_ptr<int64_t>();
    const int64_t* yp = y_c.data_ptr<int64_t>();
    const int64_t* tp = labels.data_ptr<int64_t>();
    const float* vp = valid.data_ptr<float>();
    const float* ap = alpha_c.data_ptr<float>();
    const float* cp = ce_c.data_ptr<float>();
    const float* zp = z.defined() ? z.data_ptr<float>() : nullptr;
    const float* zfp = z_forced.defined() ? z_forced.data_ptr<float>() : nullptr;
    const int64_t blocks = x.size(0) * x.size(1);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t base = blk * d;
      if (vp[base + d - 1] < 0.5f) continue;  // not a full block (padding anchor)
      ++r.num_blocks;
      double prod = 1.0, expected = 0.0;
      for (int64_t j = 0; j < d; ++j) {
        prod *= ap[base + j];
        expected += prod;
        alpha_sum[j] += ap[base + j];
        ce_sum += cp[base + j];
        ++ce_count;
        if (zfp) {
          r.confidence_sampled.logits.push_back(zfp[base + j]);
          r.confidence_sampled.survival.push_back(static_cast<float>(prod));
        }
      }
      tau_expected_sum += 1.0 + expected;
      if (rows[static_cast<size_t>(blk / x.size(1))]->sampled) {
        tau_expected_sampled_sum += 1.0 + expected;
        ++r.num_sampled_blocks;
      }
      int64_t accepted = 0;
      bool determinable = true;
      for (int64_t j = 0; j < d; ++j) {
        if (xp[base + j] != yp[base + j]) break;
        ++accepted;
        if (j + 1 < d && tp[base + j] != yp[base + j]) {
          determinable = false;  // the stored sequence leaves the greedy path inside the accepted prefix
          break;
        }
      }
      if (!determinable) continue;
      ++r.num_greedy_blocks;
      accepted_sum += static_cast<double>(accepted);
      for (int64_t j = 0; j < accepted; ++j) survived[j] += 1.0;
      if (zp) {
        for (int64_t j = 0; j < d; ++j) {
          r.confidence.logits.push_back(zp[base + j]);
          r.confidence.survival.push_back(j < accepted ? 1.0f : 0.0f);
          drafted[static_cast<size_t>(j)] = static_cast<int32_t>(xp[base + j]);
        }
        // The context the engine would draft in: the sequence up to and including the anchor.
        const std::span<const int32_t> tokens = rows[static_cast<size_t>(blk / x.size(1))]->tokens;
        const auto anchor = static_cast<size_t>(batch.anchors[static_cast<size_t>(blk)]);
        r.confidence.repeat_agreement.push_back(
            leading_repeat_agreement(tokens.first(anchor + 1), drafted, kRepeatMinTail, kRepeatMaxTail));
      }
    }
  }
  const double nb = static_cast<double>(std::max<int64_t>(r.num_blocks, 1));
  const double ng = static_cast<double>(std::max<int64_t>(r.num_greedy_blocks, 1));
  r.tau_greedy = 1.0 + accepted_sum / ng;
  r.tau_expected = r.num_blocks > 0 ? tau_expected_sum / nb : 1.0;
  if (r.num_sampled_blocks > 0) {
    r.tau_expected_sampled = tau_expected_sampled_sum / static_cast<double>(r.num_sampled_blocks);
  }
  r.ce = ce_count > 0 ? ce_sum / static_cast<double>(ce_count) : 0.0;
  for (int64_t j = 0; j < d; ++j) {
    r.accept_greedy.push_back(survived[j] / ng);
    const double reached = j == 0 ? ng : survived[j - 1];
    r.accept_conditional.push_back(reached > 0 ? survived[j] / reached : 0.0);
    r.alpha.push_back(alpha_sum[j] / nb);
  }
  return r;
}

}  // namespace dspark::train
