#include "spec/draft_layer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/check.h"
#include "kernels/elementwise.h"
#include "kernels/norm.h"
#include "spec/drafter_tensors.h"

namespace dspark {
namespace {

// Several [rows_i, cols] weights (and biases) of one layer stacked into one matrix.
struct Stacked {
  std::vector<float> weight;  // [sum rows, cols]
  std::vector<float> bias;    // [sum rows] or empty
  int64_t rows = 0;
};

Stacked stack(const WeightStore& store, int64_t layer, const std::vector<std::string>& names,
              const std::vector<int64_t>& rows, int64_t cols, bool with_bias) {
  Stacked out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string base = drafter_layer_tensor(layer, names[i]);
    const int64_t shape[2] = {rows[i], cols};
    const std::vector<float> w = store.load_f32(base + ".weight", shape);
    out.weight.insert(out.weight.end(), w.begin(), w.end());
    if (with_bias) {
      const int64_t bias_shape[1] = {rows[i]};
      const std::vector<float> b = store.load_f32(base + ".bias", bias_shape);
      out.bias.insert(out.bias.end(), b.begin(), b.end());
    }
    out.rows += rows[i];
  }
  return out;
}

Linear make_linear(const Stacked& s, int64_t cols, DType compute, int64_t max_rows) {
  return Linear(s.weight, s.rows, cols, s.bias, LinearOptions{compute, std::max<int64_t>(max_rows, 1)});
}

std::vector<float> load_vector(const WeightStore& store, const std::string& name, int64_t n) {
  const int64_t shape[1] = {n};
  return store.load_f32(name, shape);
}

}  // namespace

DraftLayerWorkspace::DraftLayerWorkspace(const ModelConfig& c, int64_t block_rows, int64_t context_rows)
    : normed(block_rows * c.hidden_size),
      qkv(block_rows * (c.q_size() + 2 * c.kv_size())),
      q(block_rows * c.q_size()),
      k(std::max(block_rows, context_rows) * c.kv_size()),
      v(std::max(block_rows, context_rows) * c.kv_size()),
      attn(block_rows * c.q_size()),
      proj(block_rows * c.hidden_size),
      gate_up(block_rows * 2 * c.intermediate_size),
      act(block_rows * c.intermediate_size),
      ctx_kv(context_rows * 2 * c.kv_size()) {}

DraftLayer::DraftLayer(const ModelConfig& c, const WeightStore& store, int64_t index, DType compute,
                       int64_t max_block_rows, int64_t max_context_rows)
    : hidden_(c.hidden_size),
      num_heads_(c.num_attention_heads),
      num_kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim),
      intermediate_(c.intermediate_size),
      eps_(c.rms_norm_eps),
      input_norm_(load_vector(store, drafter_layer_tensor(index, "input_layernorm.weight"), c.hidden_size)),
      post_norm_(load_vector(store, drafter_layer_tensor(index, "post_attention_layernorm.weight"), c.hidden_size)),
      qkv_(make_linear(stack(store, index, {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                             {c.q_size(), c.kv_size(), c.kv_size()}, c.hidden_size, c.attention_bias),
                       c.hidden_size, compute, max_block_rows)),
      kv_(make_linear(stack(store, index, {"self_attn.k_proj", "self_attn.v_proj"}, {c.kv_size(), c.kv_size()},
                            c.hidden_size, c.attention_bias),
                      c.hidden_size, compute, max_context_rows)),
      o_(make_linear(stack(store, index, {"self_attn.o_proj"}, {c.hidden_size}, c.q_size(), c.attention_output_bias),
                     c.q_size(), compute, max_block_rows)),
      gate_up_(make_linear(stack(store, index, {"mlp.gate_proj", "mlp.up_proj"}, {c.intermediate_size, c.intermediate_size},
                                 c.hidden_size, c.mlp_bias),
                           c.hidden_size, compute, max_block_rows)),
      down_(make_linear(stack(store, index, {"mlp.down_proj"}, {c.hidden_size}, c.intermediate_size, c.mlp_bias),
                        c.intermediate_size, compute, max_block_rows)) {
  if (c.qk_norm) {
    q_norm_ = load_vector(store, drafter_layer_tensor(index, "self_attn.q_norm.weight"), head_dim_);
    k_norm_ = load_vector(store, drafter_layer_tensor(index, "self_attn.k_norm.weight"), head_dim_);
  }
}

void DraftLayer::project_kv_heads(float* k, int64_t n, const int32_t* positions, const RopeTable& rope) const {
  if (!k_norm_.empty()) rms_norm(k, k_norm_.data(), k, n * num_kv_heads_, head_dim_, eps_);
  apply_rope(k, positions, n, num_kv_heads_, head_dim_, rope);
}

void DraftLayer::write_context(const float* ctx, int64_t n, const int32_t* positions, const int64_t* slots,
                               const RopeTable& rope, const KvLayerView& kv, DraftLayerWorkspace& ws) {
  const int64_t kv_width = num_kv_heads_ * head_dim_;
  kv_.forward(ctx, ws.ctx_kv.data(), n);
  for (int64_t t = 0; t < n; ++t) {
    const float* row = ws.ctx_kv.data() + t * 2 * kv_width;  // [k | v]
    std::memcpy(ws.k.data() + t * kv_width, row, kv_width * sizeof(float));
    std::memcpy(ws.v.data() + t * kv_width, row + kv_width, kv_width * sizeof(float));
  }
  project_kv_heads(ws.k.data(), n, positions, rope);
  write_kv(ws.k.data(), ws.v.data(), slots, n, kv);
}

void DraftLayer::forward_block(float* x, const LayerStepContext& step, const KvLayerView& kv, DraftLayerWorkspace& ws) {
  const int64_t n = step.num_tokens;
  const int64_t q_width = num_heads_ * head_dim_;
  const int64_t kv_width = num_kv_heads_ * head_dim_;
  const int64_t qkv_width = q_width + 2 * kv_width;

  rms_norm(x, input_norm_.data(), ws.normed.data(), n, hidden_, eps_);
  qkv_.forward(ws.normed.data(), ws.qkv.data(), n);
  for (int64_t t = 0; t < n; ++t) {
    const float* row = ws.qkv.data() + t * qkv_width;  // [q | k | v]
    std::memcpy(ws.q.data() + t * q_width, row, q_width * sizeof(float));
    std::memcpy(ws.k.data() + t * kv_width, row + q_width, kv_width * sizeof(float));
    std::memcpy(ws.v.data() + t * kv_width, row + q_width + kv_width, kv_width * sizeof(float));
  }
  if (!q_norm_.empty()) rms_norm(ws.q.data(), q_norm_.data(), ws.q.data(), n * num_heads_, head_dim_, eps_);
  apply_rope(ws.q.data(), step.positions, n, num_heads_, head_dim_, *step.rope);
  project_kv_heads(ws.k.data(), n, step.positions, *step.rope);
  write_kv(ws.k.data(), ws.v.data(), step.slots, n, kv);

  PagedAttentionArgs args;
  args.q = ws.q.data();
  args.out = ws.attn.data();
  args.num_tokens = n;
  args.num_heads = num_heads_;
  args.seq_of_token = step.seq_of_token;
  args.num_keys = step.num_keys;
  args.block_tables = step.block_tables;
  args.scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  paged_attention(args, kv);
  o_.forward(ws.attn.data(), ws.proj.data(), n);
  add_inplace(x, ws.proj.data(), n * hidden_);

  rms_norm(x, post_norm_.data(), ws.normed.data(), n, hidden_, eps_);
  gate_up_.forward(ws.normed.data(), ws.gate_up.data(), n);
  silu_mul(ws.gate_up.data(), ws.act.data(), n, intermediate_);
  down_.forward(ws.act.data(), ws.proj.data(), n);
  add_inplace(x, ws.proj.data(), n * hidden_);
}

size_t DraftLayer::weight_bytes() const {
  return qkv_.weight_bytes() + o_.weight_bytes() + gate_up_.weight_bytes() + down_.weight_bytes() +
         (input_norm_.size() + post_norm_.size() + q_norm_.size() + k_norm_.size()) * sizeof(float);
}

}  // namespace dspark
