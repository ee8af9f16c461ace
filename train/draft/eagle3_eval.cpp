#include "train/draft/eagle3_eval.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "core/check.h"
#include "train/draft/draft_batch.h"
#include "train/draft/draft_step.h"
#include "train/draft/eagle3.h"
#include "train/model/autocast.h"
#include "train/model/transformer.h"

namespace dspark::train {

namespace {

// Accepted drafts and acceptance counts over chains.
struct Tally {
  std::vector<double> survived;  // [K] chains with drafts 1..j accepted
  double accepted = 0;
  int64_t chains = 0;
  int64_t greedy_chains = 0;

  explicit Tally(int64_t k) : survived(static_cast<size_t>(k), 0.0) {}

  // drafts x, the target's greedy tokens y and the stored labels t of one chain, each [K].
  void add(const int64_t* x, const int64_t* y, const int64_t* t, int64_t k) {
    ++chains;
    int64_t accepted_here = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (x[j] != y[j]) break;
      ++accepted_here;
      if (j + 1 < k && t[j] != y[j]) return;  // the stored sequence leaves the greedy path: undeterminable
    }
    ++greedy_chains;
    accepted += static_cast<double>(accepted_here);
    for (int64_t j = 0; j < accepted_here; ++j) survived[static_cast<size_t>(j)] += 1.0;
  }
};

// One batch of sequences: target pass, context rows, then the chains in groups.
void evaluate_batch(const CausalLmImpl& target, const Eagle3Impl& drafter, const DraftBatch& batch,
                    const Eagle3EvalOptions& o, Tally& tally) {
  const DraftTensors t = to_tensors(batch);
  const TargetOutputs out = run_target(target, t.ids, drafter.capture_layers(), o.bf16);
  const int64_t k = o.drafts, len = batch.length;
  // y_j, the target's greedy token after t_0..t_{a+j−1}, is the argmax at position a+j−1.
  auto greedy = out.logits.argmax(-1);  // [B, T]
  // Chains (sequence b, anchor a) of the real anchors; a >= 1 so that a context row precedes.
  auto keep = t.keep & t.anchors.ge(1);
  auto sequence = at::arange(batch.batch, at::kLong).view({-1, 1}).expand_as(t.anchors).masked_select(keep);
  auto anchor = t.anchors.masked_select(keep);
  auto offsets = at::arange(k, at::kLong).view({1, k});
  auto y = greedy.view({-1}).index_select(0, (sequence.view({-1, 1}) * len + anchor.view({-1, 1}) + offsets)
                                                 .view({-1})).view({-1, k}).contiguous();       // [C, K]
  auto labels = t.ids.view({-1}).index_select(0, (sequence.view({-1, 1}) * len + anchor.view({-1, 1}) + offsets + 1)
                                                     .view({-1})).view({-1, k}).contiguous();  // [C, K]

  Bf16Autocast autocast(o.bf16);
  const Eagle3Context context = drafter.context(out.aux, t.ids);
  const int64_t chains = sequence.size(0);
  for (int64_t first = 0; first < chains; first += o.chain_batch) {
    const int64_t n = std::min(o.chain_batch, chains - first);
    const Eagle3Drafts d = drafter.draft_chains(context, sequence.narrow(0, first, n), anchor.narrow(0, first, n) - 1, k);
    auto x = d.tokens.contiguous();
    for (int64_t c = 0; c < n; ++c)
      tally.add(x.data_ptr<int64_t>() + c * k, y.data_ptr<int64_t>() + (first + c) * k,
                labels.data_ptr<int64_t>() + (first + c) * k, k);
  }
}

}  // namespace

Eagle3EvalResult evaluate_eagle3(const CausalLmImpl& target, const Eagle3Impl& drafter,
                                 const std::vector<DraftSequence>& sequences, const Eagle3EvalOptions& o) {
  DSPARK_CHECK(o.drafts >= 1 && o.max_chains >= 1 && o.batch >= 1 && o.chain_batch >= 1,
               "eagle3 eval: drafts, chains and batches must be >= 1");
  at::NoGradGuard no_grad;
  Eagle3EvalResult r;
  Tally tally(o.drafts);
  for (size_t first = 0; first < sequences.size(); first += static_cast<size_t>(o.batch)) {
    std::vector<const DraftSequence*> rows;
    std::vector<std::vector<int64_t>> anchors;
    int64_t n_max = 0;
    for (size_t i = first; i < std::min(sequences.size(), first + static_cast<size_t>(o.batch)); ++i) {
      auto a = full_block_anchors(sequences[i], o.drafts, o.max_chains);
      if (a.empty()) continue;
      n_max = std::max<int64_t>(n_max, static_cast<int64_t>(a.size()));
      rows.push_back(&sequences[i]);
      anchors.push_back(std::move(a));
    }
    if (rows.empty()) continue;
    r.num_sequences += static_cast<int64_t>(rows.size());
    evaluate_batch(target, drafter, make_draft_batch(rows, anchors, n_max, o.pad_id), o, tally);
  }
  r.num_chains = tally.chains;
  r.num_greedy_chains = tally.greedy_chains;
  const double ng = static_cast<double>(std::max<int64_t>(tally.greedy_chains, 1));
  r.tau_greedy = 1.0 + tally.accepted / ng;
  for (int64_t j = 0; j < o.drafts; ++j) {
    const double here = tally.survived[static_cast<size_t>(j)];
    r.accept_greedy.push_back(here / ng);
    const double reached = j == 0 ? ng : tally.survived[static_cast<size_t>(j - 1)];
    r.accept_conditional.push_back(reached > 0 ? here / reached : 0.0);
  }
  return r;
}

}  // namespace dspark::train
