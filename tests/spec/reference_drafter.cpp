#include "spec/reference_drafter.h"

#include <cmath>

#include "core/dtype.h"
#include "loader/safetensors.h"

namespace dspark::testing {

ReferenceDrafter::ReferenceDrafter(const std::filesystem::path& drafter_dir, const std::filesystem::path& target_dir,
                                   bool round_to_bf16)
    : config_(DrafterConfig::from_file(drafter_dir)), bf16_(round_to_bf16) {
  const WeightStore d(drafter_dir), t(target_dir);
  const ModelConfig& m = config_.layer;
  const int64_t h = m.hidden_size, v = m.vocab_size;
  const int64_t k = static_cast<int64_t>(config_.aux_hidden_state_layer_ids.size());
  embed_ = d.contains("embed_tokens.weight") ? ref::load(d, "embed_tokens.weight", {v, h})
                                             : ref::load(t, "model.embed_tokens.weight", {v, h});
  if (d.contains("lm_head.weight")) {
    lm_head_ = ref::load(d, "lm_head.weight", {v, h});
  } else {
    lm_head_ = t.contains("lm_head.weight") ? ref::load(t, "lm_head.weight", {v, h})
                                            : ref::load(t, "model.embed_tokens.weight", {v, h});
  }
  fc_ = ref::load(d, "fc.weight", {h, k * config_.target_hidden_size});
  hidden_norm_ = ref::load(d, "hidden_norm.weight", {h});
  final_norm_ = ref::load(d, "norm.weight", {h});
  if (config_.markov_rank > 0) {
    w1_ = ref::load(d, "markov_head.markov_w1.weight", {v, config_.markov_rank});
    w2_ = ref::load(d, "markov_head.markov_w2.weight", {v, config_.markov_rank});
    if (bf16_) for (float& x : w1_) x = dspark::round_to_bf16(x);  // the engine keeps a bf16 table
    if (config_.contextual_markov()) {
      context_in_ = ref::load(d, "markov_head.context_in.weight", {config_.markov_context_size, h + config_.markov_rank});
      context_out_ = ref::load(d, "markov_head.context_out.weight", {config_.markov_rank, config_.markov_context_size});
    }
  }
  if (config_.enable_confidence_head) {
    conf_w_ = ref::load(d, "confidence_head.proj.weight",
                        {1, h + (config_.confidence_head_with_markov ? config_.markov_rank : 0)});
    conf_b_ = ref::load(d, "confidence_head.proj.bias", {1})[0];
  }
  if (bf16_) for (float& x : embed_) x = dspark::round_to_bf16(x);
  for (int64_t l = 0; l < m.num_hidden_layers; ++l) {
    layers_.push_back(ref::load_layer(d, "layers." + std::to_string(l) + ".", m));
  }
}

ReferenceDrafter::Output ReferenceDrafter::forward(const std::vector<std::vector<float>>& context,
                                                   const std::vector<int32_t>& prev_tokens) const {
  const ModelConfig& m = config_.layer;
  const int64_t h = m.hidden_size, nh = m.num_attention_heads, nkv = m.num_key_value_heads;
  const int64_t vocab = m.vocab_size, th = config_.target_hidden_size;
  const int64_t block = config_.block_size;
  const int64_t num_ctx = context.empty() ? 0 : static_cast<int64_t>(context[0].size()) / th;
  const int64_t k = static_cast<int64_t>(context.size());
  const float eps = m.rms_norm_eps;
  const std::vector<float> inv_freq = ref::inverse_frequencies(m);

  // Context features.
  std::vector<std::vector<float>> ctx(num_ctx);
  for (int64_t p = 0; p < num_ctx; ++p) {
    std::vector<float> cat;
    for (int64_t l = 0; l < k; ++l) cat.insert(cat.end(), context[l].begin() + p * th, context[l].begin() + (p + 1) * th);
    ctx[p] = ref::matvec(cat.data(), fc_, {}, h, k * th, bf16_);
    ref::rmsnorm(ctx[p].data(), hidden_norm_, eps, h);
  }
  // Block input.
  std::vector<std::vector<float>> x(block, std::vector<float>(h));
  for (int64_t j = 0; j < block; ++j) {
    const int64_t token = j == 0 ? prev_tokens.at(0) : config_.mask_token_id;
    for (int64_t i = 0; i < h; ++i) x[j][i] = embed_[token * h + i];
  }
  for (const ref::LayerWeights& L : layers_) {
    // Keys and values: context positions 0..C−1 (ctx skips input_layernorm), then the block
    // at C..C+γ−1.
    std::vector<std::vector<float>> keys, values, queries(block);
    for (int64_t p = 0; p < num_ctx; ++p) {
      const int32_t pos = static_cast<int32_t>(p);
      keys.push_back(ref::project_heads(ctx[p], L.wk, L.bk, L.k_norm, nkv, pos, inv_freq, m, bf16_));
      values.push_back(ref::matvec(ctx[p].data(), L.wv, L.bv, nkv * m.head_dim, h, bf16_));
    }
    for (int64_t j = 0; j < block; ++j) {
      std::vector<float> xn = x[j];
      ref::rmsnorm(xn.data(), L.input_norm, eps, h);
      const int32_t pos = static_cast<int32_t>(num_ctx + j);
      queries[j] = ref::project_heads(xn, L.wq, L.bq, L.q_norm, nh, pos, inv_freq, m, bf16_);
      keys.push_back(ref::project_heads(xn, L.wk, L.bk, L.k_norm, nkv, pos, inv_freq, m, bf16_));
      values.push_back(ref::matvec(xn.data(), L.wv, L.bv, nkv * m.head_dim, h, bf16_));
    }
    // Every block query sees all keys (non-causal inside the block).
    const int64_t num_keys = static_cast<int64_t>(keys.size());
    for (int64_t j = 0; j < block; ++j) ref::add_attention(x[j], queries[j], keys, values, num_keys, L, m, bf16_);
    for (int64_t j = 0; j < block; ++j) ref::add_mlp(x[j], L, m, bf16_);
  }
  Output out;
  for (int64_t j = 0; j < block; ++j) {
    ref::rmsnorm(x[j].data(), final_norm_, eps, h);
    out.hidden.insert(out.hidden.end(), x[j].begin(), x[j].end());
  }
  const int64_t first_slot = config_.sample_from_anchor ? 0 : 1;
  const int64_t r = config_.markov_rank;
  for (size_t j = 0; j < prev_tokens.size(); ++j) {
    const std::vector<float>& hj = x[first_slot + j];
    const std::vector<float> u = ref::matvec(hj.data(), lm_head_, {}, vocab, h, bf16_);
    out.base_logits.insert(out.base_logits.end(), u.begin(), u.end());
    std::vector<float> corrected = u;
    const float* w1_row = r > 0 ? w1_.data() + static_cast<int64_t>(prev_tokens[j]) * r : nullptr;
    if (r > 0) {
      std::vector<float> feature(w1_row, w1_row + r);  // f_j
      if (config_.contextual_markov()) {
        const int64_t m = config_.markov_context_size;
        std::vector<float> in = hj;
        in.insert(in.end(), feature.begin(), feature.end());
        std::vector<float> mid = ref::matvec(in.data(), context_in_, {}, m, h + r, bf16_);
        for (float& a : mid) a = static_cast<float>(a / (1.0 + std::exp(-static_cast<double>(a))));
        const std::vector<float> delta = ref::matvec(mid.data(), context_out_, {}, r, m, bf16_);
        for (int64_t i = 0; i < r; ++i) feature[i] += delta[i];
      }
      const std::vector<float> bias = ref::matvec(feature.data(), w2_, {}, vocab, r, bf16_);
      for (int64_t i = 0; i < vocab; ++i) corrected[i] += bias[i];
    }
    out.logits.insert(out.logits.end(), corrected.begin(), corrected.end());
    if (!conf_w_.empty()) {
      double z = conf_b_;
      for (int64_t i = 0; i < h; ++i) z += static_cast<double>(conf_w_[i]) * hj[i];
      if (config_.confidence_head_with_markov) {
        for (int64_t i = 0; i < r; ++i) z += static_cast<double>(conf_w_[h + i]) * w1_row[i];
      }
      out.confidence_logits.push_back(static_cast<float>(z));
    }
  }
  return out;
}

}  // namespace dspark::testing
