// The decoder layer of an EAGLE-3 drafter (spec/eagle3_config.h) and the two attention
// patterns it runs under: plain causal over a KV cache (context rows, the engine's drafting)
// and training-time test's chains (eagle3.h).
//
// For rows with token embeddings E and features g [B, Q, H] at given positions:
//   e = RMSNorm_in(E), n = RMSNorm_hidden(g), residual = norm_before_residual ? n : g
//   q, k, v = [e ; n] W_{q,k,v}ᵀ (+ b with attention_bias), per-head q/k RMSNorm (qwen3),
//   RoPE at the row's position; then attention (below), y = residual + o_proj(attn),
//   r = y + mlp(RMSNorm_post(y)).
// Parameter names follow the speculators layout under "layers.0.": input_layernorm,
// hidden_norm, self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm, post_attention_layernorm,
// mlp.{gate,up,down}_proj. Precision is the CausalLm mirror's: the residual stream, norms,
// RoPE and softmax in f32; under Bf16Autocast the projections run in bf16.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "loader/config.h"
#include "train/model/transformer.h"

namespace dspark::train {

// q/k/v_proj read the concatenated [e ; n] (2H inputs); o_proj writes H.
struct Eagle3AttentionImpl : torch::nn::Module {
  explicit Eagle3AttentionImpl(const ModelConfig& config);
  int64_t num_heads, num_kv_heads, head_dim;
  std::shared_ptr<LinearImpl> q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<RmsNormImpl> q_norm, k_norm;  // qwen3 only
};

// One batch of rows projected for attention.
struct Eagle3Qkv {
  torch::Tensor q;         // [B, nh, Q, D] f32, normed (qwen3) and rotated
  torch::Tensor k;         // [B, nkv, Q, D] f32, normed (qwen3) and rotated
  torch::Tensor v;         // [B, nkv, Q, D] (the autocast dtype)
  torch::Tensor residual;  // [B, Q, H] f32
};

struct Eagle3LayerImpl : torch::nn::Module {
  Eagle3LayerImpl(const ModelConfig& config, bool norm_before_residual);

  // embeds: [B, Q, H] embeddings of the row tokens; g: [B, Q, H] f32 features;
  // cos / sin: [B, Q, D] f32 at the rows' positions.
  Eagle3Qkv project(const torch::Tensor& embeds, const torch::Tensor& g, const torch::Tensor& cos,
                    const torch::Tensor& sin) const;
  // residual [B, Q, H] f32, attn [B, nh, Q, D] -> r [B, Q, H] f32.
  torch::Tensor finish(const torch::Tensor& residual, const torch::Tensor& attn) const;

  bool norm_before_residual;
  std::shared_ptr<RmsNormImpl> input_layernorm, hidden_norm, post_attention_layernorm;
  std::shared_ptr<Eagle3AttentionImpl> self_attn;
  std::shared_ptr<MlpImpl> mlp;
};

// cos / sin of RoPE at positions [B, Q] int64: [B, Q, D] f32 each, times the attention
// scaling (yarn's factor, else 1), as the mirror computes them.
std::pair<torch::Tensor, torch::Tensor> rope_cos_sin(const torch::Tensor& inv_freq, double attention_scaling,
                                                     const torch::Tensor& positions);

// Softmax attention: q [B, nh, Q, D], k / v [B, nkv, S, D], blocked broadcastable to
// [B, nh, Q, S] (true: may not attend). -> [B, nh, Q, D]
torch::Tensor masked_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& blocked);

// Training-time test attention for step s >= 1. Query row i of q [B, nh, T, D] sees the
// step-0 keys j <= i (k0 / v0 [B, nkv, T, D]) and, of every chain step s' = 1..s, only row
// i's own key (chain_k[s'−1] / chain_v[s'−1], each [B, nkv, T, D]): its own chain. The
// chain keys are one score per row (a diagonal), so the cost stays O(T² + s·T).
// -> [B, nh, T, D]
torch::Tensor chain_attention(const torch::Tensor& q, const torch::Tensor& k0, const torch::Tensor& v0,
                              const std::vector<torch::Tensor>& chain_k, const std::vector<torch::Tensor>& chain_v);

}  // namespace dspark::train
