// The block drafter's forward: context projection, many anchor blocks per sequence through
// one masked attention, and the DSpark heads.
#include "train/draft/drafter.h"

#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "train/model/tensor_ops.h"

namespace dspark::train {

torch::Tensor block_input_ids(const torch::Tensor& input_ids, const torch::Tensor& anchors, int64_t block_size,
                              int64_t mask_token_id) {
  const int64_t b = anchors.size(0), n = anchors.size(1);
  auto anchor_tokens = input_ids.to(at::kLong).gather(1, anchors.to(at::kLong));           // [B, N]
  auto ids = at::full({b, n, block_size}, mask_token_id, at::TensorOptions().dtype(at::kLong));
  ids.select(2, 0).copy_(anchor_tokens);
  return ids.view({b, n * block_size});
}

torch::Tensor block_attention_mask(const torch::Tensor& anchors, int64_t context_len, int64_t block_size) {
  const int64_t b = anchors.size(0), n = anchors.size(1), q = n * block_size;
  auto long_opts = at::TensorOptions().dtype(at::kLong);
  auto q_block = at::arange(q, long_opts).div(block_size, "floor");                // [Q]
  auto anchor_of_q = anchors.to(at::kLong).index_select(1, q_block);               // [B, Q]
  auto ctx_cols = at::arange(context_len, long_opts).view({1, 1, context_len});
  auto ctx_blocked = ctx_cols.ge(anchor_of_q.unsqueeze(-1));                       // [B, Q, T]
  auto blk_blocked = q_block.view({q, 1}).ne(q_block.view({1, q}));                // [Q, Q]
  return at::cat({ctx_blocked, blk_blocked.unsqueeze(0).expand({b, q, q})}, -1).unsqueeze(1);
}

torch::Tensor draft_layer_forward(const DecoderLayerImpl& layer, const torch::Tensor& x, const torch::Tensor& ctx,
                                  const torch::Tensor& cos, const torch::Tensor& sin, const torch::Tensor& mask) {
  const AttentionImpl& attn = *layer.self_attn;
  const int64_t b = x.size(0), q_len = x.size(1), t = ctx.size(1);
  const int64_t nh = attn.num_heads, nkv = attn.num_kv_heads, d = attn.head_dim;
  auto n = to_autocast_dtype(layer.input_layernorm->forward(x));
  auto c_in = to_autocast_dtype(ctx);
  auto q = attn.q_proj->forward(n).view({b, q_len, nh, d});
  auto k = at::cat({attn.k_proj->forward(c_in), attn.k_proj->forward(n)}, 1).view({b, t + q_len, nkv, d});
  auto v = at::cat({attn.v_proj->forward(c_in), attn.v_proj->forward(n)}, 1).view({b, t + q_len, nkv, d});
  if (attn.q_norm) {
    q = attn.q_norm->forward(q);
    k = attn.k_norm->forward(k);
  }
  q = q.transpose(1, 2);  // [B, nh, Q, D]
  k = k.transpose(1, 2);  // [B, nkv, T + Q, D]
  v = v.transpose(1, 2);
  auto c = cos.unsqueeze(1);  // [B, 1, T + Q, D]
  auto s = sin.unsqueeze(1);
  auto cq = c.narrow(2, t, q_len);
  auto sq = s.narrow(2, t, q_len);
  q = q.to(c.scalar_type());
  k = k.to(c.scalar_type());
  q = q * cq + rotate_half(q) * sq;
  k = k * c + rotate_half(k) * s;
  k = repeat_kv(k, nh / nkv);
  v = repeat_kv(v, nh / nkv);
  const double scaling = 1.0 / std::sqrt(static_cast<double>(d));
  auto scores = at::matmul(q, k.transpose(2, 3)) * scaling;  // [B, nh, Q, T + Q]
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  auto probs = at::softmax(scores, -1, at::kFloat).to(v.scalar_type());
  auto out = at::matmul(probs, v).transpose(1, 2).reshape({b, q_len, nh * d});
  auto h = x + attn.o_proj->forward(out).to(x.scalar_type());
  return h + layer.mlp->forward(to_autocast_dtype(layer.post_attention_layernorm->forward(h))).to(h.scalar_type());
}

DrafterImpl::DrafterImpl(const DrafterConfig& config, torch::Tensor embed_tokens, torch::Tensor lm_head)
    : config_(config), embed_tokens_(embed_tokens.detach()), lm_head_(lm_head.detach()) {
  config_.validate("drafter config");
  const ModelConfig& c = config_.layer;
  const int64_t h = c.hidden_size, v = c.vocab_size;
  DSPARK_CHECK(embed_tokens_.dim() == 2 && embed_tokens_.size(0) == v && embed_tokens_.size(1) == h,
               "drafter: the target's embedding table is {}, expected [{}, {}] (vocab, drafter hidden size)",
               c10::str(embed_tokens_.sizes()), v, h);
  DSPARK_CHECK(lm_head_.dim() == 2 && lm_head_.size(0) == v && lm_head_.size(1) == h,
               "drafter: the target's LM head is {}, expected [{}, {}]", c10::str(lm_head_.sizes()), v, h);
  const int64_t fc_in = static_cast<int64_t>(config_.aux_hidden_state_layer_ids.size()) * config_.target_hidden_size;
  fc_ = register_module("fc", std::make_shared<LinearImpl>(fc_in, h, false));
  hidden_norm_ = register_module("hidden_norm", std::make_shared<RmsNormImpl>(h, c.rms_norm_eps));
  auto layers = register_module("layers", std::make_shared<torch::nn::Module>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    layers_.push_back(layers->register_module(std::to_string(i), std::make_shared<DecoderLayerImpl>(c)));
  norm_ = register_module("norm", std::make_shared<RmsNormImpl>(h, c.rms_norm_eps));
  const int64_t r = config_.markov_rank;
  if (r > 0) {
    auto head = register_module("markov_head", std::make_shared<torch::nn::Module>());
    markov_w1_ = head->register_module("markov_w1", std::make_shared<WeightHolder>(v, r))->weight;
    markov_w2_ = head->register_module("markov_w2", std::make_shared<LinearImpl>(r, v, false));
    if (config_.contextual_markov()) {
      const int64_t m = config_.markov_context_size;
      context_in_ = head->register_module("context_in", std::make_shared<LinearImpl>(h + r, m, false));
      context_out_ = head->register_module("context_out", std::make_shared<LinearImpl>(m, r, false));
    }
  }
  if (config_.enable_confidence_head) {
    auto head = register_module("confidence_head", std::make_shared<torch::nn::Module>());
    const int64_t in = h + (config_.confidence_head_with_markov ? r : 0);
    confidence_proj_ = head->register_module("proj", std::make_shared<LinearImpl>(in, 1, true));
  }
  inv_freq_ = rope_inv_freq(c);
}

void DrafterImpl::init_weights(double std, uint64_t seed) {
  at::NoGradGuard no_grad;
  at::manual_seed(seed);
  const double residual_std = std / std::sqrt(2.0 * static_cast<double>(config_.layer.num_hidden_layers));
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    if (name.ends_with("norm.weight")) {
      p.fill_(1.0);
    } else if (name.ends_with(".bias") || name == "markov_head.markov_w2.weight" ||
               name == "markov_head.context_out.weight") {
      p.zero_();
    } else if (name.ends_with("o_proj.weight") || name.ends_with("down_proj.weight")) {
      p.normal_(0.0, residual_std);
    } else {
      p.normal_(0.0, std);
    }
  }
}

std::vector<int64_t> DrafterImpl::capture_layers() const {
  std::vector<int64_t> out;
  for (int32_t l : config_.capture_layers()) out.push_back(l);
  return out;
}

int64_t DrafterImpl::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

torch::Tensor DrafterImpl::context(const torch::Tensor& aux) const {
  const int64_t fc_in = fc_->weight.size(1);
  DSPARK_CHECK(aux.dim() == 3 && aux.size(2) == fc_in, "drafter: target features are {}, expected [B, T, {}]",
               c10::str(aux.sizes()), fc_in);
  return hidden_norm_->forward(fc_->forward(to_autocast_dtype(aux)).to(at::kFloat));
}

torch::Tensor DrafterImpl::block_states(const torch::Tensor& ctx, const torch::Tensor& input_ids,
                                        const torch::Tensor& anchors) const {
  const int64_t b = input_ids.size(0), t = input_ids.size(1), n = anchors.size(1);
  const int64_t gamma = config_.block_size, h = config_.layer.hidden_size;
  DSPARK_CHECK(ctx.dim() == 3 && ctx.size(0) == b && ctx.size(1) == t && ctx.size(2) == h,
               "drafter: context is {}, expected [{}, {}, {}]", c10::str(ctx.sizes()), b, t, h);
  DSPARK_CHECK(anchors.dim() == 2 && anchors.size(0) == b, "drafter: anchors must be [B, N]");
  auto ids = block_input_ids(input_ids, anchors, gamma, config_.mask_token_id);  // [B, N·γ]
  auto x = at::embedding(embed_tokens_, ids);                                     // [B, N·γ, H]

  auto long_opts = at::TensorOptions().dtype(at::kLong);
  auto ctx_pos = at::arange(t, long_opts).unsqueeze(0).expand({b, t});
  auto blk_pos = (anchors.to(at::kLong).unsqueeze(-1) + at::arange(gamma, long_opts).view({1, 1, gamma}))
                     .view({b, n * gamma});
  auto pos = at::cat({ctx_pos, blk_pos}, 1);                                       // [B, T + N·γ]
  auto freqs = pos.to(at::kFloat).unsqueeze(-1) * inv_freq_.view({1, 1, -1});
  auto emb = at::cat({freqs, freqs}, -1);
  auto cos = emb.cos().to(x.scalar_type());
  auto sin = emb.sin().to(x.scalar_type());
  auto mask = block_attention_mask(anchors, t, gamma);
  for (const auto& layer : layers_) x = draft_layer_forward(*layer, x, ctx, cos, sin, mask);
  return to_autocast_dtype(norm_->forward(x)).view({b, n, gamma, h});
}

torch::Tensor DrafterImpl::drafting_states(const torch::Tensor& states) const {
  return states.narrow(2, first_slot(), num_drafts());
}

torch::Tensor DrafterImpl::base_logits(const torch::Tensor& h) const { return at::linear(h, lm_head_); }

torch::Tensor DrafterImpl::markov_feature(const torch::Tensor& prev_ids) const {
  DSPARK_CHECK(has_markov(), "drafter has no Markov head");
  return at::embedding(markov_w1_, prev_ids.to(at::kLong));
}

torch::Tensor DrafterImpl::markov_state(const torch::Tensor& h, const torch::Tensor& prev_ids) const {
  auto f = markov_feature(prev_ids);  // [..., r] f32
  if (!context_in_) return f;
  auto x = to_autocast_dtype(at::cat({h.to(f.scalar_type()), f}, -1));        // [..., H + r]
  auto mid = at::silu(context_in_->forward(x));                                 // [..., m]
  return f + context_out_->forward(mid).to(f.scalar_type());
}

torch::Tensor DrafterImpl::markov_bias(const torch::Tensor& h, const torch::Tensor& prev_ids) const {
  return markov_w2_->forward(to_autocast_dtype(markov_state(h, prev_ids)));
}

torch::Tensor DrafterImpl::draft_logits(const torch::Tensor& h, const torch::Tensor& prev_ids) const {
  auto u = base_logits(h);
  if (!has_markov()) return u;
  auto bias = markov_bias(h, prev_ids);
  return u + bias.to(u.scalar_type());
}

torch::Tensor DrafterImpl::confidence_logits(const torch::Tensor& h, const torch::Tensor& prev_ids) const {
  DSPARK_CHECK(has_confidence(), "drafter has no confidence head");
  torch::Tensor features = h;
  if (config_.confidence_head_with_markov) {
    features = at::cat({h, markov_feature(prev_ids).to(h.scalar_type())}, -1);
  }
  return confidence_proj_->forward(features).squeeze(-1).to(at::kFloat);
}

int64_t decoder_layer_index(const std::string& parameter_name) {
  constexpr std::string_view prefix = "layers.";
  if (parameter_name.rfind(prefix, 0) != 0) return -1;
  const size_t dot = parameter_name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return -1;
  int64_t index = 0;
  for (size_t at = prefix.size(); at < dot; ++at) {
    const char c = parameter_name[at];
    if (c < '0' || c > '9') return -1;
    index = index * 10 + (c - '0');
  }
  return index;
}

}  // namespace dspark::train
