// Drafter: the libtorch DSpark / DFlash block drafter of DESIGN §4, computing what the
// engine's DSparkProposer computes (spec/dspark_proposer.h), but for many anchor blocks
// of a whole sequence at once, as training needs.
//
// Contract (the engine's conventions, spec/drafter_config.h):
// - Parameters are named exactly as the speculators-layout tensors (spec/drafter_tensors.h):
//   fc.weight, hidden_norm.weight, layers.{i}.self_attn.{q,k,v,o}_proj.weight,
//   layers.{i}.self_attn.{q,k}_norm.weight (qwen3 layer configs), layers.{i}.mlp.*,
//   layers.{i}.{input,post_attention}_layernorm.weight, norm.weight,
//   markov_head.markov_w1.weight [V, r], markov_head.markov_w2.weight [V, r],
//   markov_head.context_{in,out}.weight (contextual head), confidence_head.proj.{weight,bias}. The embedding table and LM head are the target's,
//   held as frozen tensors (never parameters, never saved).
// - Context features ctx = RMSNorm_h(fc(concat(h_l1..h_lk))); the target hidden states are
//   the outputs of decoder layers capture_layers() (aux id − 1). ctx feeds k_proj / v_proj
//   directly (no input_layernorm), as the reference drafters do.
// - A block anchored at sequence position a: inputs [x_a, MASK, .., MASK] (γ slots) at
//   positions a .. a+γ−1; its queries see the context rows 0 .. a−1 (strictly before the
//   anchor) and all γ rows of their own block (non-causal), nothing else. Many blocks of
//   one sequence share one forward through block_attention_mask().
// - Draft j (1-based, j = 1 .. num_drafts) predicts the token at a + j. It comes from slot
//   j − 1 (DSpark, sample_from_anchor) or slot j (DFlash). h_j is the final-norm state of
//   that slot; U_j = lm_head(h_j); logits_j = U_j + W₂·f_j (Markov head, f_j = W₁[x_{j−1}] or
//   its contextual form); the
//   confidence logit z_j = w·[h_j ; W₁[x_{j−1}]] + b, c_j = sigmoid(z_j / T_j) with the
//   calibrated temperatures of the config (T_j = 1 uncalibrated).
// - Works in f32 as is; under Bf16Autocast the projections run in bf16 with the residual
//   stream, norms and softmax in f32 (the CausalLm mirror's policy).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "spec/drafter_config.h"
#include "train/model/transformer.h"

namespace dspark::train {

class DrafterImpl : public torch::nn::Module {
 public:
  // embed_tokens / lm_head: the target's [V, H] tables (used as constants, no gradient).
  DrafterImpl(const DrafterConfig& config, torch::Tensor embed_tokens, torch::Tensor lm_head);

  // Normal(0, std) for matrices (o_proj / down_proj scaled by 1/sqrt(2 layers)), norms 1,
  // biases 0, Markov W₂ and W_out zero (the head starts as the identity on U, a contextual
  // one as a vanilla one), confidence bias 0.
  void init_weights(double std, uint64_t seed);

  // aux: [B, T, k·H_t] the concatenated target hidden states -> ctx [B, T, H] (f32).
  torch::Tensor context(const torch::Tensor& aux) const;

  // ctx: [B, T, H]; input_ids: [B, T] int64; anchors: [B, N] int64 positions (< T).
  // Returns the final-norm states of every block slot, [B, N, γ, H].
  torch::Tensor block_states(const torch::Tensor& ctx, const torch::Tensor& input_ids,
                             const torch::Tensor& anchors) const;
  // The slots that draft: [B, N, γ, H] -> h_1..h_D [B, N, num_drafts, H].
  torch::Tensor drafting_states(const torch::Tensor& states) const;

  torch::Tensor base_logits(const torch::Tensor& h) const;          // [..., H] -> U [..., V]
  bool has_markov() const { return markov_w1_.defined(); }
  bool has_confidence() const { return confidence_proj_ != nullptr; }
  torch::Tensor markov_feature(const torch::Tensor& prev_ids) const;  // [...] -> W₁[x] [..., r]
  // The Markov feature f_j (spec/dspark_heads.h): W₁[x], plus the contextual head's MLP of
  // [h ; W₁[x]] when it has one. h [..., H], prev_ids [...] -> [..., r] f32.
  torch::Tensor markov_state(const torch::Tensor& h, const torch::Tensor& prev_ids) const;
  torch::Tensor markov_bias(const torch::Tensor& h, const torch::Tensor& prev_ids) const;  // W₂·f_j [..., V]
  // U + Markov term (U unchanged without a Markov head).
  torch::Tensor draft_logits(const torch::Tensor& h, const torch::Tensor& prev_ids) const;
  // z_j before the temperature: [..., H], [...] -> [...] (f32).
  torch::Tensor confidence_logits(const torch::Tensor& h, const torch::Tensor& prev_ids) const;

  const DrafterConfig& config() const { return config_; }
  int64_t num_drafts() const { return config_.num_drafts(); }
  int64_t first_slot() const { return config_.sample_from_anchor ? 0 : 1; }
  // Target decoder layers (output of layer l) whose states feed fc, in fc column order.
  std::vector<int64_t> capture_layers() const;
  int64_t num_parameters() const;
  const torch::Tensor& embed_tokens() const { return embed_tokens_; }
  const torch::Tensor& lm_head() const { return lm_head_; }

 private:
  DrafterConfig config_;
  torch::Tensor embed_tokens_;  // [V, H] frozen
  torch::Tensor lm_head_;       // [V, H] frozen
  torch::Tensor inv_freq_;      // [head_dim / 2] f32
  std::shared_ptr<LinearImpl> fc_;
  std::shared_ptr<RmsNormImpl> hidden_norm_;
  std::vector<std::shared_ptr<DecoderLayerImpl>> layers_;
  std::shared_ptr<RmsNormImpl> norm_;
  torch::Tensor markov_w1_;     // [V, r] or undefined
  std::shared_ptr<LinearImpl> markov_w2_;       // weight [V, r]
  std::shared_ptr<LinearImpl> context_in_;      // weight [m, H + r] (contextual Markov head) or null
  std::shared_ptr<LinearImpl> context_out_;     // weight [r, m]
  std::shared_ptr<LinearImpl> confidence_proj_; // weight [1, H (+ r)], bias [1]
};

// The block inputs [x_a, MASK, ..]: input_ids [B, T], anchors [B, N] -> [B, N·γ] int64.
torch::Tensor block_input_ids(const torch::Tensor& input_ids, const torch::Tensor& anchors, int64_t block_size,
                              int64_t mask_token_id);

// The one attention mask of all blocks of each sequence: [B, 1, N·γ, T + N·γ] bool, TRUE
// where the query may NOT attend. Key columns 0..T−1 are the context rows (allowed when
// column < the query block's anchor), T.. the block rows (allowed within the same block).
torch::Tensor block_attention_mask(const torch::Tensor& anchors, int64_t context_len, int64_t block_size);

// One draft decoder layer over a batch of blocks: x [B, Q, H] block residual stream,
// ctx [B, T, H] context features; cos/sin [B, T + Q, D] (f32) for the keys (context
// positions then block positions), the last Q rows serve the queries; mask as above.
torch::Tensor draft_layer_forward(const DecoderLayerImpl& layer, const torch::Tensor& x, const torch::Tensor& ctx,
                                  const torch::Tensor& cos, const torch::Tensor& sin, const torch::Tensor& mask);

// The decoder layer a drafter parameter belongs to ("layers.<i>.…" → i), -1 for the rest
// (any name that is not "layers.", digits, "." and more).
int64_t decoder_layer_index(const std::string& parameter_name);

}  // namespace dspark::train
