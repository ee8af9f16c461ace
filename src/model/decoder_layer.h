// One pre-norm decoder layer of a Llama / Mistral / Qwen2 / Qwen3 model. Owns its weights:
// q/k/v fused into one projection and gate/up into another (fewer, larger matmuls — at
// ~1 ms per decode step per-call overhead matters), pre-packed once for the compute dtype.
//
//   x += o_proj(attention(rope(q_norm?(q)), rope(k_norm?(k)), v))   with q,k,v = qkv(norm(x))
//   x += down(silu(gate(norm(x))) * up(norm(x)))
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "loader/config.h"
#include "loader/safetensors.h"

namespace dspark {

// Per-step token metadata shared by every layer, computed once per forward.
struct LayerStepContext {
  int64_t num_tokens = 0;
  const int32_t* positions = nullptr;        // [num_tokens]
  const int32_t* seq_of_token = nullptr;     // [num_tokens]
  const int32_t* num_keys = nullptr;         // [num_tokens]
  const int64_t* slots = nullptr;            // [num_tokens] KV slot of each token
  const int32_t* const* block_tables = nullptr;  // [num_sequences]
  const RopeTable* rope = nullptr;
};

// Activation buffers, sized once for the largest batch and shared by all layers.
struct LayerWorkspace {
  std::vector<float> normed;   // [max_tokens, hidden]
  std::vector<float> qkv;      // [max_tokens, (heads + 2 * kv_heads) * head_dim]
  std::vector<float> q;        // [max_tokens, heads * head_dim]
  std::vector<float> k;        // [max_tokens, kv_heads * head_dim]
  std::vector<float> v;        // [max_tokens, kv_heads * head_dim]
  std::vector<float> attn;     // [max_tokens, heads * head_dim]
  std::vector<float> proj;     // [max_tokens, hidden]
  std::vector<float> gate_up;  // [max_tokens, 2 * intermediate]
  std::vector<float> act;      // [max_tokens, intermediate]

  LayerWorkspace(const ModelConfig& config, int64_t max_tokens);
  // k and v hold max_kv_rows rows (>= max_tokens): for callers that also project the keys
  // of rows that are not queries (a drafter's context).
  LayerWorkspace(const ModelConfig& config, int64_t max_tokens, int64_t max_kv_rows);
};

class DecoderLayer {
 public:
  // Reads the Hugging Face tensors model.layers.{layer_index}.*; attends within the
  // layer's sliding window when the config gives it one.
  DecoderLayer(const ModelConfig& config, const WeightStore& weights, int64_t layer_index,
               const LinearOptions& linear_options);
  // Reads the same tensors under another prefix: {prefix}input_layernorm.weight,
  // {prefix}self_attn.q_proj.weight, ... (a drafter's layers are "layers.{i}."). Each row
  // attends to its last `window` keys (0 = all of them). q/k/v take attention_input_size
  // features (0 = hidden_size; an EAGLE-3 layer's are [embedding ; hidden], twice as wide).
  DecoderLayer(const ModelConfig& config, const WeightStore& weights, const std::string& prefix,
               const LinearOptions& linear_options, int64_t window = 0, int64_t attention_input_size = 0);

  // x: [num_tokens, hidden], the residual stream, updated in place. Writes this step's
  // K/V into kv at ctx.slots before attending, so every query reads keys from the cache.
  void forward(float* x, const LayerStepContext& ctx, const KvLayerView& kv, LayerWorkspace& ws);
  // The same after the input norm, which the caller has done: normed [num_tokens,
  // attention_input_size] feeds q/k/v; x is the residual the attention output is added to.
  void forward_normed(float* x, const float* normed, const LayerStepContext& ctx, const KvLayerView& kv,
                      LayerWorkspace& ws);
  // Only the K/V of n rows, from their normed inputs [n, attention_input_size], written at
  // slots: what rows whose own output nobody reads contribute to later rows' attention.
  void write_keys_values(const float* normed, int64_t n, const int32_t* positions, const int64_t* slots,
                         const RopeTable& rope, const KvLayerView& kv, LayerWorkspace& ws);
  const std::vector<float>& input_norm_weight() const { return input_norm_; }  // [hidden]

  // k: [n, kv_heads * head_dim], the k projection of n rows, in place: k_norm (qwen3), then
  // RoPE at positions[n] — what every key goes through before it enters the cache.
  void prepare_keys(float* k, int64_t n, const int32_t* positions, const RopeTable& rope) const;

  size_t weight_bytes() const;

 private:
  // ws.qkv [n, q | k | v] -> ws.k, ws.v (and ws.q when with_q).
  void split_qkv(int64_t n, bool with_q, LayerWorkspace& ws) const;

  int64_t hidden_;
  int64_t num_heads_;
  int64_t num_kv_heads_;
  int64_t head_dim_;
  int64_t intermediate_;
  float eps_;
  int64_t window_ = 0;             // sliding window (0 = full causal attention)
  std::vector<float> input_norm_;  // [hidden]
  std::vector<float> post_norm_;   // [hidden]
  std::vector<float> q_norm_;      // [head_dim] (qwen3), else empty
  std::vector<float> k_norm_;      // [head_dim] (qwen3), else empty
  Linear qkv_;                     // [(heads + 2 * kv_heads) * head_dim, attention input]
  Linear o_;                       // [hidden, heads * head_dim]
  Linear gate_up_;                 // [2 * intermediate, hidden]
  Linear down_;                    // [hidden, intermediate]
};

}  // namespace dspark
