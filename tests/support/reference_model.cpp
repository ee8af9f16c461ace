#include "support/reference_model.h"

#include <cmath>
#include <numbers>

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

// y[o] = sum_i x[i] * w[o, i] (+ b[o]).
void matvec(const std::vector<float>& x_in, const std::vector<float>& w, const std::vector<float>& b, int64_t out,
            int64_t in, bool bf16, std::vector<float>& y) {
  y.assign(out, 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    double acc = 0;
    for (int64_t i = 0; i < in; ++i) {
      float xv = x_in[i], wv = w[o * in + i];
      if (bf16) {
        xv = round_to_bf16(xv);
        wv = round_to_bf16(wv);
      }
      acc += static_cast<double>(xv) * wv;
    }
    y[o] = static_cast<float>(acc) + (b.empty() ? 0.0f : b[o]);
  }
}

void rmsnorm(std::vector<float>& x, const std::vector<float>& w, float eps, int64_t offset, int64_t n) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[offset + i]) * x[offset + i];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / n) + eps);
  for (int64_t i = 0; i < n; ++i) x[offset + i] = x[offset + i] * inv * w[i];
}

std::vector<float> inverse_frequencies(const ModelConfig& c) {
  std::vector<float> f(c.head_dim / 2);
  for (int64_t i = 0; i < c.head_dim / 2; ++i) {
    f[i] = 1.0f / std::pow(c.rope_theta, static_cast<float>(2 * i) / static_cast<float>(c.head_dim));
  }
  if (c.rope_scaling.kind == RopeScaling::Kind::kLlama3) {
    const auto& s = c.rope_scaling;
    const float old_len = static_cast<float>(s.original_max_position_embeddings);
    for (float& v : f) {
      const float wavelen = 2.0f * std::numbers::pi_v<float> / v;
      if (wavelen > old_len / s.low_freq_factor) {
        v /= s.factor;
      } else if (wavelen >= old_len / s.high_freq_factor) {
        const float smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        v = (1 - smooth) * v / s.factor + smooth * v;
      }
    }
  }
  return f;
}

// Rotate-half RoPE on one head vector.
void rope(float* x, int64_t dim, int32_t pos, const std::vector<float>& inv_freq) {
  const int64_t half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(angle), s = std::sin(angle);
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

}  // namespace

ReferenceModel::ReferenceModel(const std::filesystem::path& dir, bool round_to_bf16)
    : config_(ModelConfig::from_file(dir / "config.json")), bf16_(round_to_bf16) {
  const WeightStore s(dir);
  const auto& c = config_;
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  const int64_t f = c.intermediate_size;
  embed_ = load(s, "model.embed_tokens.weight", {c.vocab_size, h});
  final_norm_ = load(s, "model.norm.weight", {h});
  lm_head_ = s.contains("lm_head.weight") ? load(s, "lm_head.weight", {c.vocab_size, h}) : embed_;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Layer L;
    L.input_norm = load(s, p + "input_layernorm.weight", {h});
    L.post_norm = load(s, p + "post_attention_layernorm.weight", {h});
    L.q_norm = load_if(s, p + "self_attn.q_norm.weight", {c.head_dim});
    L.k_norm = load_if(s, p + "self_attn.k_norm.weight", {c.head_dim});
    L.wq = load(s, p + "self_attn.q_proj.weight", {q, h});
    L.wk = load(s, p + "self_attn.k_proj.weight", {kv, h});
    L.wv = load(s, p + "self_attn.v_proj.weight", {kv, h});
    L.wo = load(s, p + "self_attn.o_proj.weight", {h, q});
    L.bq = load_if(s, p + "self_attn.q_proj.bias", {q});
    L.bk = load_if(s, p + "self_attn.k_proj.bias", {kv});
    L.bv = load_if(s, p + "self_attn.v_proj.bias", {kv});
    L.bo = load_if(s, p + "self_attn.o_proj.bias", {h});
    L.gate = load(s, p + "mlp.gate_proj.weight", {f, h});
    L.up = load(s, p + "mlp.up_proj.weight", {f, h});
    L.down = load(s, p + "mlp.down_proj.weight", {h, f});
    L.bgate = load_if(s, p + "mlp.gate_proj.bias", {f});
    L.bup = load_if(s, p + "mlp.up_proj.bias", {f});
    L.bdown = load_if(s, p + "mlp.down_proj.bias", {h});
    layers_.push_back(std::move(L));
  }
}

std::vector<float> ReferenceModel::forward(const std::vector<int32_t>& tokens,
                                           std::vector<std::vector<float>>* hidden_per_layer) const {
  const auto& c = config_;
  const int64_t n = static_cast<int64_t>(tokens.size()), h = c.hidden_size, hd = c.head_dim;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, f = c.intermediate_size;
  const std::vector<float> inv_freq = inverse_frequencies(c);
  std::vector<std::vector<float>> x(n, std::vector<float>(h));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < h; ++i) x[t][i] = embed_[tokens[t] * h + i];
    if (bf16_) for (auto& v : x[t]) v = round_to_bf16(v);  // the engine keeps a bf16 table
  }
  if (hidden_per_layer) hidden_per_layer->clear();
  for (const Layer& L : layers_) {
    std::vector<std::vector<float>> qs(n), ks(n), vs(n);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> xn = x[t];
      rmsnorm(xn, L.input_norm, c.rms_norm_eps, 0, h);
      matvec(xn, L.wq, L.bq, nh * hd, h, bf16_, qs[t]);
      matvec(xn, L.wk, L.bk, nkv * hd, h, bf16_, ks[t]);
      matvec(xn, L.wv, L.bv, nkv * hd, h, bf16_, vs[t]);
      for (int64_t head = 0; head < nh; ++head) {
        if (!L.q_norm.empty()) rmsnorm(qs[t], L.q_norm, c.rms_norm_eps, head * hd, hd);
        rope(qs[t].data() + head * hd, hd, static_cast<int32_t>(t), inv_freq);
      }
      for (int64_t head = 0; head < nkv; ++head) {
        if (!L.k_norm.empty()) rmsnorm(ks[t], L.k_norm, c.rms_norm_eps, head * hd, hd);
        rope(ks[t].data() + head * hd, hd, static_cast<int32_t>(t), inv_freq);
      }
    }
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> attn(nh * hd, 0.0f);
      for (int64_t head = 0; head < nh; ++head) {
        const int64_t kvh = head / (nh / nkv);
        std::vector<double> scores(t + 1);
        double max_score = -INFINITY;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(qs[t][head * hd + d]) * ks[j][kvh * hd + d];
          scores[j] = dot / std::sqrt(static_cast<double>(hd));
          max_score = std::max(max_score, scores[j]);
        }
        double denom = 0;
        for (auto& sc : scores) denom += (sc = std::exp(sc - max_score));
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t j = 0; j <= t; ++j) acc += scores[j] * vs[j][kvh * hd + d];
          attn[head * hd + d] = static_cast<float>(acc / denom);
        }
      }
      std::vector<float> o;
      matvec(attn, L.wo, L.bo, h, nh * hd, bf16_, o);
      for (int64_t i = 0; i < h; ++i) x[t][i] += o[i];
      std::vector<float> xn = x[t], g, u, d;
      rmsnorm(xn, L.post_norm, c.rms_norm_eps, 0, h);
      matvec(xn, L.gate, L.bgate, f, h, bf16_, g);
      matvec(xn, L.up, L.bup, f, h, bf16_, u);
      for (int64_t i = 0; i < f; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
      matvec(g, L.down, L.bdown, h, f, bf16_, d);
      for (int64_t i = 0; i < h; ++i) x[t][i] += d[i];
    }
    if (hidden_per_layer) {
      std::vector<float> flat;
      for (const auto& row : x) flat.insert(flat.end(), row.begin(), row.end());
      hidden_per_layer->push_back(std::move(flat));
    }
  }
  std::vector<float> logits(n * c.vocab_size);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<float> xn = x[t], row;
    rmsnorm(xn, final_norm_, c.rms_norm_eps, 0, h);
    matvec(xn, lm_head_, {}, c.vocab_size, h, bf16_, row);
    std::copy(row.begin(), row.end(), logits.begin() + t * c.vocab_size);
  }
  return logits;
}

}  // namespace dspark::testing
