#include "support/reference_model.h"

#include <algorithm>

#include "core/dtype.h"
#include "loader/safetensors.h"

namespace dspark::testing {

ReferenceModel::ReferenceModel(const std::filesystem::path& dir, bool round_to_bf16)
    : config_(ModelConfig::from_file(dir / "config.json")), bf16_(round_to_bf16) {
  const WeightStore s(dir);
  const auto& c = config_;
  const int64_t h = c.hidden_size;
  embed_ = ref::load(s, "model.embed_tokens.weight", {c.vocab_size, h});
  final_norm_ = ref::load(s, "model.norm.weight", {h});
  lm_head_ = s.contains("lm_head.weight") ? ref::load(s, "lm_head.weight", {c.vocab_size, h}) : embed_;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    layers_.push_back(ref::load_layer(s, "model.layers." + std::to_string(l) + ".", c));
  }
}

std::vector<float> ReferenceModel::forward(const std::vector<int32_t>& tokens,
                                           std::vector<std::vector<float>>* hidden_per_layer) const {
  const auto& c = config_;
  const int64_t n = static_cast<int64_t>(tokens.size()), h = c.hidden_size;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  const std::vector<float> inv_freq = ref::inverse_frequencies(c);
  std::vector<std::vector<float>> x(n, std::vector<float>(h));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < h; ++i) x[t][i] = embed_[tokens[t] * h + i];
    if (bf16_) for (auto& v : x[t]) v = round_to_bf16(v);  // the engine keeps a bf16 table
  }
  if (hidden_per_layer) hidden_per_layer->clear();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const ref::LayerWeights& L = layers_[l];
    const int64_t window = c.attention_window(static_cast<int64_t>(l));
    std::vector<std::vector<float>> qs(n), ks(n), vs(n);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> xn = x[t];
      ref::rmsnorm(xn.data(), L.input_norm, c.rms_norm_eps, h);
      const int32_t pos = static_cast<int32_t>(t);
      qs[t] = ref::project_heads(xn, L.wq, L.bq, L.q_norm, nh, pos, inv_freq, c, bf16_);
      ks[t] = ref::project_heads(xn, L.wk, L.bk, L.k_norm, nkv, pos, inv_freq, c, bf16_);
      vs[t] = ref::matvec(xn.data(), L.wv, L.bv, nkv * c.head_dim, h, bf16_);
    }
    for (int64_t t = 0; t < n; ++t) {
      // Causal; with a window W, position t sees t - W + 1 .. t (Hugging Face: t - k < W).
      const int64_t first = window > 0 ? std::max<int64_t>(0, t + 1 - window) : 0;
      ref::add_attention(x[t], qs[t], ks, vs, /*num_keys=*/t + 1, L, c, bf16_, first);
      ref::add_mlp(x[t], L, c, bf16_);
    }
    if (hidden_per_layer) {
      std::vector<float> flat;
      for (const auto& row : x) flat.insert(flat.end(), row.begin(), row.end());
      hidden_per_layer->push_back(std::move(flat));
    }
  }
  std::vector<float> logits(n * c.vocab_size);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<float> xn = x[t];
    ref::rmsnorm(xn.data(), final_norm_, c.rms_norm_eps, h);
    const std::vector<float> row = ref::matvec(xn.data(), lm_head_, {}, c.vocab_size, h, bf16_);
    std::copy(row.begin(), row.end(), logits.begin() + t * c.vocab_size);
  }
  return logits;
}

}  // namespace dspark::testing
