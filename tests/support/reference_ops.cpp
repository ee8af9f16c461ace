#include "support/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/dtype.h"

namespace dspark::testing::ref {

std::vector<float> load(const WeightStore& store, const std::string& name, std::vector<int64_t> shape) {
  return store.load_f32(name, shape);
}

std::vector<float> load_if(const WeightStore& store, const std::string& name, std::vector<int64_t> shape) {
  return store.contains(name) ? store.load_f32(name, shape) : std::vector<float>{};
}

LayerWeights load_layer(const WeightStore& s, const std::string& p, const ModelConfig& c) {
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.kv_size(), f = c.intermediate_size;
  LayerWeights L;
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
  return L;
}

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

std::vector<float> inverse_frequencies(const ModelConfig& c) {
  const auto& s = c.rope_scaling;
  const int64_t dim = c.head_dim, half = dim / 2;
  double theta = c.rope_theta;
  using Kind = RopeScaling::Kind;
  const double original = s.original_max_position_embeddings > 0
                              ? static_cast<double>(s.original_max_position_embeddings)
                              : static_cast<double>(c.max_position_embeddings);
  if (s.kind == Kind::kDynamic) {
    // NTK-aware base for the longest context, original * factor.
    const double longest = original * s.factor;
    theta *= std::pow(s.factor * longest / original - (s.factor - 1), static_cast<double>(dim) / (dim - 2));
  }
  std::vector<double> f(half);
  for (int64_t i = 0; i < half; ++i) f[i] = std::pow(theta, -2.0 * i / static_cast<double>(dim));
  if (s.kind == Kind::kLinear) {
    for (double& v : f) v /= s.factor;
  } else if (s.kind == Kind::kYarn) {
    // Dimension d completes original * inv_freq_d / 2pi turns over the original context:
    // extrapolate (keep) those with more than beta_fast turns, interpolate (/ factor) those
    // with fewer than beta_slow, linear ramp in dimension index between.
    auto dim_for_turns = [&](double turns) {
      return dim * std::log(original / (turns * 2 * std::numbers::pi)) / (2 * std::log(theta));
    };
    double lo = dim_for_turns(s.beta_fast), hi = dim_for_turns(s.beta_slow);
    if (s.truncate) lo = std::floor(lo), hi = std::ceil(hi);
    lo = std::max(lo, 0.0);
    hi = std::min(hi, dim - 1.0);
    if (hi == lo) hi += 0.001;
    for (int64_t i = 0; i < half; ++i) {
      const double interpolate = std::clamp((i - lo) / (hi - lo), 0.0, 1.0);
      f[i] = f[i] / s.factor * interpolate + f[i] * (1 - interpolate);
    }
  } else if (s.kind == Kind::kLlama3) {
    const double old_len = static_cast<double>(s.original_max_position_embeddings);
    for (double& v : f) {
      const double wavelen = 2 * std::numbers::pi / v;
      if (wavelen > old_len / s.low_freq_factor) {
        v /= s.factor;
      } else if (wavelen >= old_len / s.high_freq_factor) {
        const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        v = (1 - smooth) * v / s.factor + smooth * v;
      }
    }
  }
  return std::vector<float>(f.begin(), f.end());
}

double cos_sin_scale(const ModelConfig& c) {
  const auto& s = c.rope_scaling;
  if (s.kind != RopeScaling::Kind::kYarn) return 1.0;
  if (s.attention_factor > 0) return s.attention_factor;
  auto mscale = [&](double m) { return s.factor <= 1 ? 1.0 : 0.1 * m * std::log(s.factor) + 1.0; };
  if (s.mscale != 0 && s.mscale_all_dim != 0) return mscale(s.mscale) / mscale(s.mscale_all_dim);
  return mscale(1.0);
}

void rope(float* x, int64_t dim, int32_t pos, const std::vector<float>& inv_freq, double scale) {
  const int64_t half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    const float c = static_cast<float>(std::cos(angle) * scale), s = static_cast<float>(std::sin(angle) * scale);
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
}

std::vector<float> project_heads(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& b, const std::vector<float>& head_norm, int64_t heads,
                                 int32_t pos, const std::vector<float>& inv_freq, const ModelConfig& c, bool bf16) {
  const int64_t hd = c.head_dim;
  std::vector<float> y = matvec(x.data(), w, b, heads * hd, c.hidden_size, bf16);
  for (int64_t head = 0; head < heads; ++head) {
    if (!head_norm.empty()) rmsnorm(y.data() + head * hd, head_norm, c.rms_norm_eps, hd);
    rope(y.data() + head * hd, hd, pos, inv_freq, cos_sin_scale(c));
  }
  return y;
}

void add_attention(std::vector<float>& x, const std::vector<float>& q, const std::vector<std::vector<float>>& keys,
                   const std::vector<std::vector<float>>& values, int64_t num_keys, const LayerWeights& layer,
                   const ModelConfig& c, bool bf16, int64_t first_key) {
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  std::vector<float> attn(nh * hd, 0.0f);
  for (int64_t head = 0; head < nh; ++head) {
    const int64_t kvh = head / (nh / nkv);
    std::vector<double> scores(num_keys);
    double max_score = -INFINITY;
    for (int64_t j = 0; j < num_keys; ++j) {
      if (j < first_key) {  // outside the sliding window: weight exp(-inf) = 0
        scores[j] = -INFINITY;
        continue;
      }
      double dot = 0;
      for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(q[head * hd + d]) * keys[j][kvh * hd + d];
      scores[j] = dot / std::sqrt(static_cast<double>(hd));
      max_score = std::max(max_score, scores[j]);
    }
    double denom = 0;
    for (double& sc : scores) denom += (sc = std::exp(sc - max_score));
    for (int64_t d = 0; d < hd; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < num_keys; ++j) acc += scores[j] * values[j][kvh * hd + d];
      attn[head * hd + d] = static_cast<float>(acc / denom);
    }
  }
  const std::vector<float> o = matvec(attn.data(), layer.wo, layer.bo, c.hidden_size, nh * hd, bf16);
  for (int64_t i = 0; i < c.hidden_size; ++i) x[i] += o[i];
}

void add_mlp(std::vector<float>& x, const LayerWeights& layer, const ModelConfig& c, bool bf16) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  std::vector<float> xn = x;
  rmsnorm(xn.data(), layer.post_norm, c.rms_norm_eps, h);
  std::vector<float> g = matvec(xn.data(), layer.gate, layer.bgate, f, h, bf16);
  const std::vector<float> u = matvec(xn.data(), layer.up, layer.bup, f, h, bf16);
  for (int64_t i = 0; i < f; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  const std::vector<float> d = matvec(g.data(), layer.down, layer.bdown, h, f, bf16);
  for (int64_t i = 0; i < h; ++i) x[i] += d[i];
}

}  // namespace dspark::testing::ref
