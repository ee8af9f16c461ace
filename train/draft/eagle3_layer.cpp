#include "train/draft/eagle3_layer.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>

#include "train/model/tensor_ops.h"

namespace dspark::train {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

double score_scale(int64_t head_dim) { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }

// x [B, Q, n·D] -> [B, n, Q, D]
torch::Tensor heads(const torch::Tensor& x, int64_t n, int64_t d) {
  return x.view({x.size(0), x.size(1), n, d}).transpose(1, 2);
}

}  // namespace

Eagle3AttentionImpl::Eagle3AttentionImpl(const ModelConfig& c)
    : num_heads(c.num_attention_heads), num_kv_heads(c.num_key_value_heads), head_dim(c.head_dim) {
  const int64_t in = 2 * c.hidden_size;  // [e ; n]
  q_proj = register_module("q_proj", std::make_shared<LinearImpl>(in, num_heads * head_dim, c.attention_bias));
  k_proj = register_module("k_proj", std::make_shared<LinearImpl>(in, num_kv_heads * head_dim, c.attention_bias));
  v_proj = register_module("v_proj", std::make_shared<LinearImpl>(in, num_kv_heads * head_dim, c.attention_bias));
  o_proj = register_module("o_proj",
                           std::make_shared<LinearImpl>(num_heads * head_dim, c.hidden_size, c.attention_output_bias));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", std::make_shared<RmsNormImpl>(head_dim, c.rms_norm_eps));
    k_norm = register_module("k_norm", std::make_shared<RmsNormImpl>(head_dim, c.rms_norm_eps));
  }
}

Eagle3LayerImpl::Eagle3LayerImpl(const ModelConfig& c, bool norm_before_residual_)
    : norm_before_residual(norm_before_residual_) {
  const int64_t h = c.hidden_size;
  input_layernorm = register_module("input_layernorm", std::make_shared<RmsNormImpl>(h, c.rms_norm_eps));
  hidden_norm = register_module("hidden_norm", std::make_shared<RmsNormImpl>(h, c.rms_norm_eps));
  self_attn = register_module("self_attn", std::make_shared<Eagle3AttentionImpl>(c));
  post_attention_layernorm =
      register_module("post_attention_layernorm", std::make_shared<RmsNormImpl>(h, c.rms_norm_eps));
  mlp = register_module("mlp", std::make_shared<MlpImpl>(c));
}

Eagle3Qkv Eagle3LayerImpl::project(const torch::Tensor& embeds, const torch::Tensor& g, const torch::Tensor& cos,
                                   const torch::Tensor& sin) const {
  const Eagle3AttentionImpl& a = *self_attn;
  auto e = input_layernorm->forward(embeds);                      // [B, Q, H]
  auto n = hidden_norm->forward(g);                               // [B, Q, H] f32
  auto in = at::cat({to_autocast_dtype(e), to_autocast_dtype(n)}, -1);  // [B, Q, 2H]
  auto q = heads(a.q_proj->forward(in), a.num_heads, a.head_dim);       // [B, nh, Q, D]
  auto k = heads(a.k_proj->forward(in), a.num_kv_heads, a.head_dim);    // [B, nkv, Q, D]
  auto v = heads(a.v_proj->forward(in), a.num_kv_heads, a.head_dim);    // [B, nkv, Q, D]
  if (a.q_norm) {
    q = a.q_norm->forward(q);
    k = a.k_norm->forward(k);
  }
  // Under autocast q/k arrive in bf16 and cos/sin are f32: rotate in f32, as the mirror does.
  auto c = cos.unsqueeze(1);  // [B, 1, Q, D]
  auto s = sin.unsqueeze(1);
  q = q.to(at::kFloat);
  k = k.to(at::kFloat);
  q = q * c + rotate_half(q) * s;
  k = k * c + rotate_half(k) * s;
  return {q, k, v, norm_before_residual ? n : g};
}

torch::Tensor Eagle3LayerImpl::finish(const torch::Tensor& residual, const torch::Tensor& attn) const {
  const int64_t b = attn.size(0), q_len = attn.size(2);
  auto out = attn.transpose(1, 2).reshape({b, q_len, -1});  // [B, Q, nh·D]
  auto y = residual + self_attn->o_proj->forward(to_autocast_dtype(out)).to(at::kFloat);
  return y + mlp->forward(to_autocast_dtype(post_attention_layernorm->forward(y))).to(at::kFloat);
}

std::pair<torch::Tensor, torch::Tensor> rope_cos_sin(const torch::Tensor& inv_freq, double attention_scaling,
                                                     const torch::Tensor& positions) {
  auto freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq.view({1, 1, -1});  // [B, Q, D/2]
  auto emb = at::cat({freqs, freqs}, -1);                                           // [B, Q, D]
  return {emb.cos() * attention_scaling, emb.sin() * attention_scaling};
}

torch::Tensor masked_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& blocked) {
  const int64_t n_rep = q.size(1) / k.size(1);
  auto scores = at::matmul(q, repeat_kv(k, n_rep).transpose(2, 3)) * score_scale(q.size(-1));  // [B, nh, Q, S]
  scores = scores.masked_fill(blocked, kNegInf);
  auto probs = at::softmax(scores, -1, at::kFloat);
  return at::matmul(probs, repeat_kv(v, n_rep));  // [B, nh, Q, D]
}

torch::Tensor chain_attention(const torch::Tensor& q, const torch::Tensor& k0, const torch::Tensor& v0,
                              const std::vector<torch::Tensor>& chain_k, const std::vector<torch::Tensor>& chain_v) {
  const int64_t t = q.size(2), n_rep = q.size(1) / k0.size(1);
  const double scale = score_scale(q.size(-1));
  auto context = at::matmul(q, repeat_kv(k0, n_rep).transpose(2, 3)) * scale;  // [B, nh, T, T]
  auto future = at::ones({t, t}, at::TensorOptions().dtype(at::kBool)).triu(1);
  std::vector<torch::Tensor> scores{context.masked_fill(future, kNegInf).to(at::kFloat)};
  for (const auto& k : chain_k)  // row i against its own chain key only: [B, nh, T, 1]
    scores.push_back((q * repeat_kv(k, n_rep)).sum(-1, /*keepdim=*/true) * scale);
  auto probs = at::softmax(at::cat(scores, -1), -1, at::kFloat);  // [B, nh, T, T + s]
  auto out = at::matmul(probs.narrow(-1, 0, t), repeat_kv(v0, n_rep)).to(at::kFloat);  // [B, nh, T, D]
  for (size_t j = 0; j < chain_v.size(); ++j) {
    auto p = probs.narrow(-1, t + static_cast<int64_t>(j), 1);  // [B, nh, T, 1]
    out = out + p * repeat_kv(chain_v[j], n_rep).to(at::kFloat);
  }
  return out;
}

}  // namespace dspark::train
