// CausalLm: a libtorch decoder-only transformer that computes exactly what Hugging Face's
// LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM compute (eager attention), so it is
// both the trainer's model and the engine's parity reference.
//
// Contract:
// - Parameter names are the Hugging Face ones (named_parameters() yields
//   "model.embed_tokens.weight", "model.layers.{i}.self_attn.q_proj.weight", ...,
//   "model.norm.weight", and "lm_head.weight" unless tie_word_embeddings).
// - RMSNorm runs in f32 (x * rsqrt(mean(x^2) + eps), cast back to the input dtype, times
//   weight); RoPE uses the rotate-half convention with angles float(pos) * inv_freq in f32
//   (rope_scaling linear, dynamic, yarn or llama3 when configured; cos/sin times yarn's
//   attention factor); GQA repeats each kv head for its group of query heads; attention is
//   causal softmax attention with softmax in f32, and on sliding-window layers a query
//   sees only the last W keys; MLP is SwiGLU.
// - forward() works in f32 as is; under CPU autocast (bf16) the projections run in bf16 and
//   the residual stream, norms and softmax stay f32, as Hugging Face does in mixed precision.
// - Hidden states of layer l are the output of decoder layer l (0-based), before the final
//   norm: what the drafter consumes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "loader/config.h"

namespace dspark::train {

// y = x W^T (+ b); the parameter is "weight" (and "bias") as in torch.nn.Linear.
struct LinearImpl : torch::nn::Module {
  LinearImpl(int64_t in_features, int64_t out_features, bool bias);
  torch::Tensor forward(const torch::Tensor& x) const;
  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out] or undefined
};

struct RmsNormImpl : torch::nn::Module {
  RmsNormImpl(int64_t size, float eps);
  torch::Tensor forward(const torch::Tensor& x) const;
  torch::Tensor weight;  // [size]
  float eps;
};

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const ModelConfig& config);
  // x: [B, T, H]; cos/sin: [B, T, head_dim] (f32); mask: [T, T] bool, true where a query
  // may not attend (the future).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask) const;
  int64_t num_heads, num_kv_heads, head_dim;
  std::shared_ptr<LinearImpl> q_proj, k_proj, v_proj, o_proj;
  std::shared_ptr<RmsNormImpl> q_norm, k_norm;  // qwen3 only
};

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x) const;
  std::shared_ptr<LinearImpl> gate_proj, up_proj, down_proj;
};

struct DecoderLayerImpl : torch::nn::Module {
  explicit DecoderLayerImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask) const;
  std::shared_ptr<AttentionImpl> self_attn;
  std::shared_ptr<MlpImpl> mlp;
  std::shared_ptr<RmsNormImpl> input_layernorm, post_attention_layernorm;
};

struct ForwardOutput {
  torch::Tensor logits;                       // [B, T, vocab] (dtype of the lm_head matmul)
  std::vector<torch::Tensor> hidden_states;   // one [B, T, hidden] per requested layer, in order
};

class CausalLmImpl : public torch::nn::Module {
 public:
  // Parameters are allocated uninitialised-but-finite (zeros / ones); call init_weights()
  // for training from scratch or load weights by name.
  explicit CausalLmImpl(const ModelConfig& config);

  // Normal(0, std) for projections and embeddings; the residual output projections
  // (o_proj, down_proj) get std / sqrt(2 * num_layers); norms 1, biases 0.
  void init_weights(double std, uint64_t seed);

  // input_ids: [B, T] int64. positions: [T] or [B, T] int64, default 0..T-1.
  // hidden_layers: 0-based decoder layers whose outputs to return.
  ForwardOutput forward(const torch::Tensor& input_ids, std::span<const int64_t> hidden_layers = {},
                        const torch::Tensor& positions = {}) const;

  // Final hidden states before lm_head ([B, T, hidden], after the final norm; bf16 under
  // autocast, as the lm_head matmul would cast them) — lets a loss compute logits chunk by chunk.
  torch::Tensor final_hidden(const torch::Tensor& input_ids, const torch::Tensor& positions = {}) const;
  torch::Tensor lm_head_weight() const;  // [vocab, hidden]: lm_head.weight or the tied embedding
  torch::Tensor embed(const torch::Tensor& input_ids) const;  // [B, T] -> [B, T, hidden]

  const ModelConfig& config() const { return config_; }
  int64_t num_parameters() const;

 private:
  torch::Tensor run_layers(const torch::Tensor& input_ids, const torch::Tensor& positions,
                           std::span<const int64_t> hidden_layers, std::vector<torch::Tensor>* hidden) const;

  ModelConfig config_;
  torch::Tensor inv_freq_;  // [head_dim / 2] f32 (buffer, not a parameter)
  double attention_scaling_ = 1;  // multiplies cos and sin (yarn's attention factor)
  std::shared_ptr<torch::nn::Module> model_;  // "model": embed_tokens, layers, norm
  torch::Tensor embed_tokens_;                // [vocab, hidden] "model.embed_tokens.weight"
  std::vector<std::shared_ptr<DecoderLayerImpl>> layers_;
  std::shared_ptr<RmsNormImpl> norm_;
  std::shared_ptr<LinearImpl> lm_head_;       // null when tied
};

// RoPE inverse frequencies as Hugging Face computes them (f32) with the config's
// rope_scaling: linear, dynamic (its base fixed at original * factor, as the engine does),
// yarn and llama3. [head_dim / 2]
torch::Tensor rope_inv_freq(const ModelConfig& config);

// Hugging Face's attention_scaling, which multiplies cos and sin: yarn's attention factor,
// 1 for every other kind.
double rope_attention_scaling(const ModelConfig& config);

}  // namespace dspark::train
