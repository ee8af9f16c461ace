// Eagle3: the libtorch EAGLE-3 drafter, computing what the engine's Eagle3Proposer computes
// (spec/eagle3_config.h has the contract), in three ways: the training-time test over whole
// sequences (training), context rows over a sequence, and greedy drafting as the engine
// drafts (evaluation, parity tests).
//
// Module contract:
// - Parameters are named exactly as the speculators-layout tensors: fc.weight [H, 3·H_t],
//   layers.0.* (eagle3_layer.h), norm.weight [H], lm_head.weight [V_d, H]. Buffers d2t [V_d]
//   int64 and t2d [V] bool hold the draft vocabulary (draft_vocab_choice.h); they are saved but
//   never trained. The embedding table is the target's, a frozen constant (never saved), so
//   H = H_t.
// - Rows. A row at position p pairs a token x with a feature g [H]; its output r [H] (before
//   the final norm) is the next chain row's g, and lm_head(RMSNorm_final(r)) its draft-vocab
//   logits. Context rows pair g_p = fc(aux_p) with x = t_{p+1}: row p predicts t_{p+2}.
//   A sequence of T tokens has T−1 context rows; where an API returns T rows (ttt,
//   context_logits), row T−1 carries a placeholder token (0), predicts nothing and affects no
//   other row (attention is causal).
// - Training-time test, ttt(aux, ids, steps): step 0 is the context rows. Step s >= 1 row i
//   pairs step s−1's output r at row i with the token drafted there (argmax over the draft
//   vocabulary mapped through d2t; no gradient through the choice) at position i+s. Query
//   (s, i) attends to the step-0 keys j <= i and to the keys (s', i), 1 <= s' <= s: exactly
//   the keys the engine's cache holds when row i is the last context row and s drafts follow.
//   Step s row i predicts t_{i+2+s}.
// - Drafting, draft(aux, ids, k): the context rows 0..n−2 of n tokens; the last one gives
//   draft 1; draft j+1 comes from a row at position n−2+j with x = draft j and g = the
//   previous row's r, attending causally to every row before it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "spec/eagle3_config.h"
#include "train/draft/eagle3_layer.h"
#include "train/draft/draft_vocab_choice.h"
#include "train/model/transformer.h"

namespace dspark::train {

// The keys and values of rows already computed, which later rows attend to.
struct Eagle3KvCache {
  torch::Tensor k;        // [B, nkv, S, D] f32 rotated keys (undefined: empty)
  torch::Tensor v;        // [B, nkv, S, D]
  torch::Tensor visible;  // [B, S] bool: keys each batch row may see (undefined: all)
  int64_t size() const { return k.defined() ? k.size(2) : 0; }
};

struct Eagle3Rows {
  torch::Tensor r;       // [B, Q, H] f32 outputs before the final norm
  torch::Tensor logits;  // [B, Q, V_d] draft-vocab logits (the autocast dtype)
};

struct Eagle3Ttt {
  std::vector<torch::Tensor> logits;  // [steps] x [B, T, V_d]: step s row i predicts t_{i+2+s}
  std::vector<torch::Tensor> tokens;  // [steps] x [B, T] int64: the target ids x the step fed
};

// The context rows of B sequences, ready for drafting after any of them.
struct Eagle3Context {
  Eagle3KvCache cache;   // rows 0..n−2
  torch::Tensor r;       // [B, n−1, H]
  torch::Tensor logits;  // [B, n−1, V_d]
};

struct Eagle3Drafts {
  torch::Tensor tokens;        // [N, k] int64 drafted target ids
  torch::Tensor logits;        // [N, k, V] f32: draft logits scattered through d2t, −inf elsewhere
  torch::Tensor draft_logits;  // [N, k, V_d] f32
};

class Eagle3Impl : public torch::nn::Module {
 public:
  // embed_tokens: the target's [V, H] table (a constant, no gradient).
  Eagle3Impl(const Eagle3Config& config, torch::Tensor embed_tokens);

  // Normal(0, std) for matrices (o_proj / down_proj scaled by 1/sqrt(2)), norms 1, biases 0.
  void init_weights(double std, uint64_t seed);
  // lm_head rows = the target's LM head rows of the draft vocabulary and norm = the target's
  // final norm: the head starts as the target's own head restricted to the draft vocabulary,
  // so training only has to bring r into the target's final hidden space.
  void init_head_from_target(const torch::Tensor& target_lm_head, const torch::Tensor& target_norm);
  // Sets d2t / t2d (the vocabulary size must be the config's).
  void set_draft_vocab(const DraftVocab& vocab);
  DraftVocab draft_vocab() const;

  // aux [B, T, 3·H_t] concatenated target hidden states -> g = fc(aux) [B, T, H] f32.
  torch::Tensor features(const torch::Tensor& aux) const;
  // Rows x [B, Q] target ids, g [B, Q, H], positions [B, Q] int64, attending to every
  // visible cached row and causally among themselves; appends their keys to the cache.
  Eagle3Rows rows(const torch::Tensor& x, const torch::Tensor& g, const torch::Tensor& positions,
                  Eagle3KvCache& cache) const;
  // lm_head(RMSNorm_final(r)): [..., H] -> [..., V_d].
  torch::Tensor head(const torch::Tensor& r) const;

  // aux [B, T, 3·H_t], ids [B, T] int64, steps >= 1.
  Eagle3Ttt ttt(const torch::Tensor& aux, const torch::Tensor& ids, int64_t steps) const;
  // Step 0 over a sequence (plain causal): [B, T, V_d].
  torch::Tensor context_logits(const torch::Tensor& aux, const torch::Tensor& ids) const;
  // The context rows 0..n−2 of ids [B, n] (n >= 2).
  Eagle3Context context(const torch::Tensor& aux, const torch::Tensor& ids) const;
  // Greedy drafts of k tokens after each of B sequences of n tokens (the engine's drafting).
  Eagle3Drafts draft(const torch::Tensor& aux, const torch::Tensor& ids, int64_t k) const;
  // Greedy drafts of N chains: chain c drafts after context row last_row[c] of sequence
  // sequence[c] of `context` (as if the sequence ended at token last_row[c] + 1).
  Eagle3Drafts draft_chains(const Eagle3Context& context, const torch::Tensor& sequence,
                            const torch::Tensor& last_row, int64_t k) const;

  // Draft ids -> target ids (d + d2t[d]), any shape.
  torch::Tensor to_target_ids(const torch::Tensor& draft_ids) const;
  // [..., V_d] -> [..., V] f32, −inf off the draft vocabulary.
  torch::Tensor to_target_logits(const torch::Tensor& draft_logits) const;
  // Target ids of the draft vocabulary, [V_d] int64.
  const torch::Tensor& vocab_target_ids() const { return target_ids_; }

  const Eagle3Config& config() const { return config_; }
  // Target decoder layers (output of layer l) whose states feed fc, in fc column order.
  std::vector<int64_t> capture_layers() const;
  int64_t num_parameters() const;
  const torch::Tensor& embed_tokens() const { return embed_tokens_; }
  const torch::Tensor& d2t() const { return d2t_; }
  const torch::Tensor& t2d() const { return t2d_; }

 private:
  // Projections of rows with tokens x [B, Q] and features g at positions [B, Q].
  Eagle3Qkv project(const torch::Tensor& x, const torch::Tensor& g, const torch::Tensor& positions) const;
  // Greedy choice of every row: draft logits [..., V_d] -> target ids [...] (no gradient).
  torch::Tensor greedy_target_ids(const torch::Tensor& draft_logits) const;

  Eagle3Config config_;
  torch::Tensor embed_tokens_;  // [V, H] frozen
  torch::Tensor inv_freq_;      // [D / 2] f32
  double attention_scaling_ = 1;
  std::shared_ptr<LinearImpl> fc_;            // weight [H, 3·H_t]
  std::shared_ptr<Eagle3LayerImpl> layer_;    // "layers.0"
  std::shared_ptr<RmsNormImpl> norm_;         // weight [H]
  std::shared_ptr<LinearImpl> lm_head_;       // weight [V_d, H]
  torch::Tensor d2t_;                         // [V_d] int64 buffer
  torch::Tensor t2d_;                         // [V] bool buffer
  torch::Tensor target_ids_;                  // [V_d] int64 = arange(V_d) + d2t
};

}  // namespace dspark::train
