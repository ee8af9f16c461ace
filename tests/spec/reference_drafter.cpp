#include "spec/reference_drafter.h"

#include <cmath>

#include "core/dtype.h"
#include "model/safetensors.h"

namespace dspark::testing {
namespace {

std::vector<float> load(const WeightStore& s, const std::string& name, std::vector<int64_t> shape) {
  return s.load_f32(name, shape);
}
std::vector<float> load_if(const WeightStore& s, const std::string& name, std::vector<int64_t> shape) {
  return s.contains(name) ? s.load_f32(name, shape) : std::vector<float>{};
}

// y[o] = sum_i x[i] w[o, i] (+ b[o]).
std::vector<float> matvec(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t out,
                          int64_t in, bool bf16) {
  std::vector<float> y(out);
  for (int64_t o = 0; o < out; ++o) {
    double acc = 0;
    for (int64_t i = 0; i < in; ++i) {
      float xv = x[i], wv = w[o * in + i];
      if (bf16) {
        xv = round_to_bf16(xv);
        wv = round_to_bf16(wv);
      }
      acc += static_cast<double>(xv) * wv;
    }
    y[o] = static_cast<float>(acc) + (b.empty() ? 0.0f : b[o]);
  }
  return y;
}

void rmsnorm(float* x, const std::vector<float>& w, float eps, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * inv * w[i];
}

// Rotate-half RoPE of one head, angles computed directly.
void rope(float* x, int64_t dim, int32_t pos, float theta) {
  const int64_t half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float inv_freq = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(dim));
    const float angle = static_cast<float>(pos) * inv_freq;
    const float c = std::cos(angle), s = std::sin(angle);
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

}  // namespace

ReferenceDrafter::ReferenceDrafter(const std::filesystem::path& drafter_dir, const std::filesystem::path& target_dir,
                                   bool round_to_bf16)
    : config_(DrafterConfig::from_file(drafter_dir)), bf16_(round_to_bf16) {
  const WeightStore d(drafter_dir), t(target_dir);
  const ModelConfig& m = config_.layer;
  const int64_t h = m.hidden_size, v = m.vocab_size, q = m.q_size(), kv = m.kv_size(), f = m.intermediate_size;
  const int64_t k = static_cast<int64_t>(config_.aux_hidden_state_layer_ids.size());
  embed_ = d.contains("embed_tokens.weight") ? load(d, "embed_tokens.weight", {v, h})
                                             : load(t, "model.embed_tokens.weight", {v, h});
  if (d.contains("lm_head.weight")) {
    lm_head_ = load(d, "lm_head.weight", {v, h});
  } else {
    lm_head_ = t.contains("lm_head.weight") ? load(t, "lm_head.weight", {v, h}) : load(t, "model.embed_tokens.weight", {v, h});
  }
  fc_ = load(d, "fc.weight", {h, k * config_.target_hidden_size});
  hidden_norm_ = load(d, "hidden_norm.weight", {h});
  final_norm_ = load(d, "norm.weight", {h});
  if (config_.markov_rank > 0) {
    w1_ = load(d, "markov_head.markov_w1.weight", {v, config_.markov_rank});
    w2_ = load(d, "markov_head.markov_w2.weight", {v, config_.markov_rank});
    if (bf16_) for (float& x : w1_) x = dspark::round_to_bf16(x);  // the engine keeps a bf16 table
  }
  if (config_.enable_confidence_head) {
    conf_w_ = load(d, "confidence_head.proj.weight",
                   {1, h + (config_.confidence_head_with_markov ? config_.markov_rank : 0)});
    conf_b_ = load(d, "confidence_head.proj.bias", {1})[0];
  }
  if (bf16_) for (float& x : embed_) x = dspark::round_to_bf16(x);
  for (int64_t l = 0; l < m.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    Layer L;
    L.input_norm = load(d, p + "input_layernorm.weight", {h});
    L.post_norm = load(d, p + "post_attention_layernorm.weight", {h});
    L.q_norm = load_if(d, p + "self_attn.q_norm.weight", {m.head_dim});
    L.k_norm = load_if(d, p + "self_attn.k_norm.weight", {m.head_dim});
    L.wq = load(d, p + "self_attn.q_proj.weight", {q, h});
    L.wk = load(d, p + "self_attn.k_proj.weight", {kv, h});
    L.wv = load(d, p + "self_attn.v_proj.weight", {kv, h});
    L.wo = load(d, p + "self_attn.o_proj.weight", {h, q});
    L.bq = load_if(d, p + "self_attn.q_proj.bias", {q});
    L.bk = load_if(d, p + "self_attn.k_proj.bias", {kv});
    L.bv = load_if(d, p + "self_attn.v_proj.bias", {kv});
    L.bo = load_if(d, p + "self_attn.o_proj.bias", {h});
    L.gate = load(d, p + "mlp.gate_proj.weight", {f, h});
    L.up = load(d, p + "mlp.up_proj.weight", {f, h});
    L.down = load(d, p + "mlp.down_proj.weight", {h, f});
    layers_.push_back(std::move(L));
  }
}

ReferenceDrafter::Output ReferenceDrafter::forward(const std::vector<std::vector<float>>& context,
                                                   const std::vector<int32_t>& prev_tokens) const {
  const ModelConfig& m = config_.layer;
  const int64_t h = m.hidden_size, hd = m.head_dim, nh = m.num_attention_heads, nkv = m.num_key_value_heads;
  const int64_t f = m.intermediate_size, vocab = m.vocab_size, th = config_.target_hidden_size;
  const int64_t block = config_.block_size;
  const int64_t num_ctx = context.empty() ? 0 : static_cast<int64_t>(context[0].size()) / th;
  const int64_t k = static_cast<int64_t>(context.size());
  const float eps = m.rms_norm_eps;

  // Context features.
  std::vector<std::vector<float>> ctx(num_ctx);
  for (int64_t p = 0; p < num_ctx; ++p) {
    std::vector<float> cat;
    for (int64_t l = 0; l < k; ++l) cat.insert(cat.end(), context[l].begin() + p * th, context[l].begin() + (p + 1) * th);
    ctx[p] = matvec(cat.data(), fc_, {}, h, k * th, bf16_);
    rmsnorm(ctx[p].data(), hidden_norm_, eps, h);
  }
  // Block input.
  std::vector<std::vector<float>> x(block, std::vector<float>(h));
  for (int64_t j = 0; j < block; ++j) {
    const int64_t token = j == 0 ? prev_tokens.at(0) : config_.mask_token_id;
    for (int64_t i = 0; i < h; ++i) x[j][i] = embed_[token * h + i];
  }
  auto head_norm_rope = [&](std::vector<float>& vec, int64_t heads, const std::vector<float>& norm, int32_t pos) {
    for (int64_t head = 0; head < heads; ++head) {
      std::vector<float> one(vec.begin() + head * hd, vec.begin() + (head + 1) * hd);
      if (!norm.empty()) rmsnorm(one.data(), norm, eps, hd);
      rope(one.data(), hd, pos, m.rope_theta);
      std::copy(one.begin(), one.end(), vec.begin() + head * hd);
    }
  };
  for (const Layer& L : layers_) {
    // Keys and values: context positions 0..C−1, then the block at C..C+γ−1.
    std::vector<std::vector<float>> keys, values, queries(block);
    for (int64_t p = 0; p < num_ctx; ++p) {
      std::vector<float> kk = matvec(ctx[p].data(), L.wk, L.bk, nkv * hd, h, bf16_);
      head_norm_rope(kk, nkv, L.k_norm, static_cast<int32_t>(p));
      keys.push_back(kk);
      values.push_back(matvec(ctx[p].data(), L.wv, L.bv, nkv * hd, h, bf16_));
    }
    for (int64_t j = 0; j < block; ++j) {
      std::vector<float> xn = x[j];
      rmsnorm(xn.data(), L.input_norm, eps, h);
      const int32_t pos = static_cast<int32_t>(num_ctx + j);
      queries[j] = matvec(xn.data(), L.wq, L.bq, nh * hd, h, bf16_);
      head_norm_rope(queries[j], nh, L.q_norm, pos);
      std::vector<float> kk = matvec(xn.data(), L.wk, L.bk, nkv * hd, h, bf16_);
      head_norm_rope(kk, nkv, L.k_norm, pos);
      keys.push_back(kk);
      values.push_back(matvec(xn.data(), L.wv, L.bv, nkv * hd, h, bf16_));
    }
    const int64_t num_keys = static_cast<int64_t>(keys.size());
    for (int64_t j = 0; j < block; ++j) {
      std::vector<float> attn(nh * hd);
      for (int64_t head = 0; head < nh; ++head) {
        const int64_t kvh = head / (nh / nkv);
        std::vector<double> scores(num_keys);
        double best = -INFINITY;
        for (int64_t s = 0; s < num_keys; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(queries[j][head * hd + d]) * keys[s][kvh * hd + d];
          scores[s] = dot / std::sqrt(static_cast<double>(hd));
          best = std::max(best, scores[s]);
        }
        double denom = 0;
        for (double& sc : scores) denom += (sc = std::exp(sc - best));
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t s = 0; s < num_keys; ++s) acc += scores[s] * values[s][kvh * hd + d];
          attn[head * hd + d] = static_cast<float>(acc / denom);
        }
      }
      const std::vector<float> o = matvec(attn.data(), L.wo, L.bo, h, nh * hd, bf16_);
      for (int64_t i = 0; i < h; ++i) x[j][i] += o[i];
    }
    for (int64_t j = 0; j < block; ++j) {
      std::vector<float> xn = x[j];
      rmsnorm(xn.data(), L.post_norm, eps, h);
      std::vector<float> g = matvec(xn.data(), L.gate, {}, f, h, bf16_);
      const std::vector<float> u = matvec(xn.data(), L.up, {}, f, h, bf16_);
      for (int64_t i = 0; i < f; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
      const std::vector<float> dn = matvec(g.data(), L.down, {}, h, f, bf16_);
      for (int64_t i = 0; i < h; ++i) x[j][i] += dn[i];
    }
  }
  Output out;
  for (int64_t j = 0; j < block; ++j) {
    rmsnorm(x[j].data(), final_norm_, eps, h);
    out.hidden.insert(out.hidden.end(), x[j].begin(), x[j].end());
  }
  const int64_t first_slot = config_.sample_from_anchor ? 0 : 1;
  const int64_t r = config_.markov_rank;
  for (size_t j = 0; j < prev_tokens.size(); ++j) {
    const std::vector<float>& hj = x[first_slot + j];
    const std::vector<float> u = matvec(hj.data(), lm_head_, {}, vocab, h, bf16_);
    out.base_logits.insert(out.base_logits.end(), u.begin(), u.end());
    std::vector<float> corrected = u;
    const float* w1_row = r > 0 ? w1_.data() + static_cast<int64_t>(prev_tokens[j]) * r : nullptr;
    if (r > 0) {
      const std::vector<float> bias = matvec(w1_row, w2_, {}, vocab, r, bf16_);
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
