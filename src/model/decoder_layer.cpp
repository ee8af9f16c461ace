#include "model/decoder_layer.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/check.h"
#include "kernels/elementwise.h"
#include "kernels/norm.h"
#include "model/fused_linear.h"

namespace dspark {

LayerWorkspace::LayerWorkspace(const ModelConfig& c, int64_t max_tokens)
    : LayerWorkspace(c, max_tokens, max_tokens) {}

LayerWorkspace::LayerWorkspace(const ModelConfig& c, int64_t max_tokens, int64_t max_kv_rows)
    : normed(max_tokens * c.hidden_size),
      qkv(max_tokens * (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim),
      q(max_tokens * c.num_attention_heads * c.head_dim),
      k(max_kv_rows * c.num_key_value_heads * c.head_dim),
      v(max_kv_rows * c.num_key_value_heads * c.head_dim),
      attn(max_tokens * c.num_attention_heads * c.head_dim),
      proj(max_tokens * c.hidden_size),
      gate_up(max_tokens * 2 * c.intermediate_size),
      act(max_tokens * c.intermediate_size) {}

DecoderLayer::DecoderLayer(const ModelConfig& c, const WeightStore& store, int64_t layer_index,
                           const LinearOptions& linear_options)
    : DecoderLayer(c, store, fmt::format("model.layers.{}.", layer_index), linear_options) {
  window_ = c.attention_window(layer_index);
}

DecoderLayer::DecoderLayer(const ModelConfig& c, const WeightStore& store, const std::string& prefix,
                           const LinearOptions& linear_options, int64_t window, int64_t attention_input_size)
    : hidden_(c.hidden_size),
      num_heads_(c.num_attention_heads),
      num_kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim),
      intermediate_(c.intermediate_size),
      eps_(c.rms_norm_eps),
      window_(window),
      input_norm_(load_vector(store, prefix + "input_layernorm.weight", c.hidden_size)),
      post_norm_(load_vector(store, prefix + "post_attention_layernorm.weight", c.hidden_size)),
      qkv_(load_fused_linear(store, {prefix + "self_attn.q_proj", prefix + "self_attn.k_proj", prefix + "self_attn.v_proj"},
                             {num_heads_ * head_dim_, num_kv_heads_ * head_dim_, num_kv_heads_ * head_dim_},
                             attention_input_size > 0 ? attention_input_size : hidden_, c.attention_bias,
                             linear_options)),
      o_(load_fused_linear(store, {prefix + "self_attn.o_proj"}, {hidden_}, num_heads_ * head_dim_,
                           c.attention_output_bias, linear_options)),
      gate_up_(load_fused_linear(store, {prefix + "mlp.gate_proj", prefix + "mlp.up_proj"}, {intermediate_, intermediate_},
                                 hidden_, c.mlp_bias, linear_options)),
      down_(load_fused_linear(store, {prefix + "mlp.down_proj"}, {hidden_}, intermediate_, c.mlp_bias,
                              linear_options)) {
  DSPARK_CHECK(window >= 0, "attention window must be >= 0, got {}", window);
  if (c.qk_norm) {
    q_norm_ = load_vector(store, prefix + "self_attn.q_norm.weight", head_dim_);
    k_norm_ = load_vector(store, prefix + "self_attn.k_norm.weight", head_dim_);
  }
}

void DecoderLayer::prepare_keys(float* k, int64_t n, const int32_t* positions, const RopeTable& rope) const {
  if (!k_norm_.empty()) rms_norm(k, k_norm_.data(), k, n * num_kv_heads_, head_dim_, eps_);
  apply_rope(k, positions, n, num_kv_heads_, head_dim_, rope);
}

void DecoderLayer::forward(float* x, const LayerStepContext& ctx, const KvLayerView& kv, LayerWorkspace& ws) {
  rms_norm(x, input_norm_.data(), ws.normed.data(), ctx.num_tokens, hidden_, eps_);
  forward_normed(x, ws.normed.data(), ctx, kv, ws);
}

void DecoderLayer::forward_normed(float* x, const float* normed, const LayerStepContext& ctx, const KvLayerView& kv,
                                  LayerWorkspace& ws) {
  const int64_t n = ctx.num_tokens;

  // Attention block (normed may be ws.normed: q/k/v are projected before the MLP reuses it).
  qkv_.forward(normed, ws.qkv.data(), n);
  split_qkv(n, /*with_q=*/true, ws);
  if (!q_norm_.empty()) rms_norm(ws.q.data(), q_norm_.data(), ws.q.data(), n * num_heads_, head_dim_, eps_);
  apply_rope(ws.q.data(), ctx.positions, n, num_heads_, head_dim_, *ctx.rope);
  prepare_keys(ws.k.data(), n, ctx.positions, *ctx.rope);
  write_kv(ws.k.data(), ws.v.data(), ctx.slots, n, kv);

  PagedAttentionArgs args;
  args.q = ws.q.data();
  args.out = ws.attn.data();
  args.num_tokens = n;
  args.num_heads = num_heads_;
  args.seq_of_token = ctx.seq_of_token;
  args.num_keys = ctx.num_keys;
  args.block_tables = ctx.block_tables;
  args.scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  args.window = window_;
  paged_attention(args, kv);
  o_.forward(ws.attn.data(), ws.proj.data(), n);
  add_inplace(x, ws.proj.data(), n * hidden_);

  // MLP block.
  rms_norm(x, post_norm_.data(), ws.normed.data(), n, hidden_, eps_);
  gate_up_.forward(ws.normed.data(), ws.gate_up.data(), n);
  silu_mul(ws.gate_up.data(), ws.act.data(), n, intermediate_);
  down_.forward(ws.act.data(), ws.proj.data(), n);
  add_inplace(x, ws.proj.data(), n * hidden_);
}

void DecoderLayer::split_qkv(int64_t n, bool with_q, LayerWorkspace& ws) const {
  const int64_t q_width = num_heads_ * head_dim_;
  const int64_t kv_width = num_kv_heads_ * head_dim_;
  const int64_t qkv_width = q_width + 2 * kv_width;
  for (int64_t t = 0; t < n; ++t) {
    const float* row = ws.qkv.data() + t * qkv_width;  // [q | k | v]
    if (with_q) std::memcpy(ws.q.data() + t * q_width, row, q_width * sizeof(float));
    std::memcpy(ws.k.data() + t * kv_width, row + q_width, kv_width * sizeof(float));
    std::memcpy(ws.v.data() + t * kv_width, row + q_width + kv_width, kv_width * sizeof(float));
  }
}

void DecoderLayer::write_keys_values(const float* normed, int64_t n, const int32_t* positions, const int64_t* slots,
                                     const RopeTable& rope, const KvLayerView& kv, LayerWorkspace& ws) {
  qkv_.forward(normed, ws.qkv.data(), n);
  split_qkv(n, /*with_q=*/false, ws);
  prepare_keys(ws.k.data(), n, positions, rope);
  write_kv(ws.k.data(), ws.v.data(), slots, n, kv);
}

size_t DecoderLayer::weight_bytes() const {
  return qkv_.weight_bytes() + o_.weight_bytes() + gate_up_.weight_bytes() + down_.weight_bytes() +
         (input_norm_.size() + post_norm_.size() + q_norm_.size() + k_norm_.size()) * sizeof(float);
}

}  // namespace dspark
