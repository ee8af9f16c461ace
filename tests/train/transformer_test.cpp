// CausalLm forward against a naive scalar reference (double precision, one position at a
// time, written from the Hugging Face definitions) on tiny random models; f32 tolerance 1e-5.
#include <cmath>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "train/model/transformer.h"

namespace dspark::train {
namespace {

using Vec = std::vector<double>;

// Weights as row-major doubles, by Hugging Face name.
std::map<std::string, Vec> weights_of(const CausalLmImpl& model) {
  std::map<std::string, Vec> out;
  for (const auto& item : model.named_parameters()) {
    auto t = item.value().detach().to(at::kDouble).contiguous();
    out[item.key()] = Vec(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }
  return out;
}

// y[r] = sum_c W[r, c] x[c] (+ b[r])
Vec matvec(const Vec& w, const Vec& x, int64_t rows, const Vec* bias = nullptr) {
  const int64_t cols = static_cast<int64_t>(x.size());
  Vec y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = bias ? (*bias)[r] : 0.0;
    for (int64_t c = 0; c < cols; ++c) s += w[r * cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

Vec rms_norm(const Vec& x, const Vec& w, double eps, size_t offset = 0, size_t n = 0) {
  if (n == 0) n = x.size();
  double ms = 0;
  for (size_t i = 0; i < n; ++i) ms += x[offset + i] * x[offset + i];
  ms /= static_cast<double>(n);
  const double inv = 1.0 / std::sqrt(ms + eps);
  Vec y(n);
  for (size_t i = 0; i < n; ++i) y[i] = x[offset + i] * inv * w[i];
  return y;
}

Vec inv_freq_reference(const ModelConfig& c) {
  const int64_t d = c.head_dim;
  Vec f(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) {
    double v = 1.0 / std::pow(static_cast<double>(c.rope_theta), static_cast<double>(2 * i) / static_cast<double>(d));
    if (c.rope_scaling.kind == RopeScaling::Kind::kLlama3) {
      const auto& rs = c.rope_scaling;
      const double old_len = static_cast<double>(rs.original_max_position_embeddings);
      const double wavelen = 2 * std::numbers::pi / v;
      if (wavelen > old_len / rs.low_freq_factor) {
        v = v / rs.factor;
      } else if (wavelen >= old_len / rs.high_freq_factor) {
        const double smooth = (old_len / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
        v = (1 - smooth) * v / rs.factor + smooth * v;
      }
    }
    f[i] = v;
  }
  return f;
}

// Rotates one head (head_dim values at offset) in the rotate-half convention.
void rope(Vec& x, size_t offset, int64_t head_dim, int64_t pos, const Vec& inv_freq) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double a = static_cast<double>(pos) * inv_freq[i];
    const double x1 = x[offset + i], x2 = x[offset + i + half];
    x[offset + i] = x1 * std::cos(a) - x2 * std::sin(a);
    x[offset + i + half] = x2 * std::cos(a) + x1 * std::sin(a);
  }
}

// Logits [T][V] and hidden states [layers][T][H] of one sequence.
struct Reference {
  std::vector<Vec> logits;
  std::vector<std::vector<Vec>> hidden;
};

Reference reference_forward(const CausalLmImpl& model, const std::vector<int64_t>& ids) {
  const ModelConfig& c = model.config();
  auto w = weights_of(model);
  const int64_t h = c.hidden_size, nh = c.num_attention_heads, nkv = c.num_key_value_heads, d = c.head_dim;
  const int64_t t_len = static_cast<int64_t>(ids.size());
  const Vec inv_freq = inv_freq_reference(c);
  const Vec& embed = w["model.embed_tokens.weight"];
  std::vector<Vec> x(t_len);
  for (int64_t t = 0; t < t_len; ++t) x[t] = Vec(embed.begin() + ids[t] * h, embed.begin() + (ids[t] + 1) * h);

  Reference ref;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    auto bias = [&](const std::string& name) -> const Vec* {
      auto it = w.find(p + name);
      return it == w.end() ? nullptr : &it->second;
    };
    std::vector<Vec> q(t_len), k(t_len), v(t_len);
    for (int64_t t = 0; t < t_len; ++t) {
      const Vec n = rms_norm(x[t], w[p + "input_layernorm.weight"], c.rms_norm_eps);
      q[t] = matvec(w[p + "self_attn.q_proj.weight"], n, nh * d, bias("self_attn.q_proj.bias"));
      k[t] = matvec(w[p + "self_attn.k_proj.weight"], n, nkv * d, bias("self_attn.k_proj.bias"));
      v[t] = matvec(w[p + "self_attn.v_proj.weight"], n, nkv * d, bias("self_attn.v_proj.bias"));
      if (c.qk_norm) {
        for (int64_t hh = 0; hh < nh; ++hh) {
          Vec r = rms_norm(q[t], w[p + "self_attn.q_norm.weight"], c.rms_norm_eps, hh * d, d);
          std::copy(r.begin(), r.end(), q[t].begin() + hh * d);
        }
        for (int64_t hh = 0; hh < nkv; ++hh) {
          Vec r = rms_norm(k[t], w[p + "self_attn.k_norm.weight"], c.rms_norm_eps, hh * d, d);
          std::copy(r.begin(), r.end(), k[t].begin() + hh * d);
        }
      }
      for (int64_t hh = 0; hh < nh; ++hh) rope(q[t], hh * d, d, t, inv_freq);
      for (int64_t hh = 0; hh < nkv; ++hh) rope(k[t], hh * d, d, t, inv_freq);
    }
    std::vector<Vec> next(t_len);
    for (int64_t t = 0; t < t_len; ++t) {
      Vec attn(nh * d, 0.0);
      for (int64_t hh = 0; hh < nh; ++hh) {
        const int64_t kv = hh / (nh / nkv);
        Vec scores(t + 1);
        double mx = -1e300;
        for (int64_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t i = 0; i < d; ++i) dot += q[t][hh * d + i] * k[s][kv * d + i];
          scores[s] = dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, scores[s]);
        }
        double sum = 0;
        for (auto& sc : scores) sum += (sc = std::exp(sc - mx));
        for (int64_t s = 0; s <= t; ++s)
          for (int64_t i = 0; i < d; ++i) attn[hh * d + i] += scores[s] / sum * v[s][kv * d + i];
      }
      Vec o = matvec(w[p + "self_attn.o_proj.weight"], attn, h, bias("self_attn.o_proj.bias"));
      Vec r(h);
      for (int64_t i = 0; i < h; ++i) r[i] = x[t][i] + o[i];
      const Vec n = rms_norm(r, w[p + "post_attention_layernorm.weight"], c.rms_norm_eps);
      const int64_t f = c.intermediate_size;
      Vec g = matvec(w[p + "mlp.gate_proj.weight"], n, f, bias("mlp.gate_proj.bias"));
      Vec u = matvec(w[p + "mlp.up_proj.weight"], n, f, bias("mlp.up_proj.bias"));
      for (int64_t i = 0; i < f; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      Vec m = matvec(w[p + "mlp.down_proj.weight"], g, h, bias("mlp.down_proj.bias"));
      for (int64_t i = 0; i < h; ++i) r[i] += m[i];
      next[t] = r;
    }
    x = next;
    ref.hidden.push_back(x);
  }
  const Vec& head = c.tie_word_embeddings ? w["model.embed_tokens.weight"] : w["lm_head.weight"];
  for (int64_t t = 0; t < t_len; ++t)
    ref.logits.push_back(matvec(head, rms_norm(x[t], w["model.norm.weight"], c.rms_norm_eps), c.vocab_size));
  return ref;
}

ModelConfig tiny_config() {
  ModelConfig c;
  c.model_type = ModelType::kLlama;
  c.model_type_name = "llama";
  c.vocab_size = 37;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 100.0f;  // small base: every frequency turns noticeably over a short sequence
  return c;
}

// Random weights, including norms and biases (init_weights would leave norms at 1).
std::shared_ptr<CausalLmImpl> random_model(const ModelConfig& c, uint64_t seed) {
  auto model = std::make_shared<CausalLmImpl>(c);
  at::NoGradGuard no_grad;
  at::manual_seed(static_cast<int64_t>(seed));
  for (auto& p : model->parameters()) p.normal_(0.0, 0.3);
  for (auto& item : model->named_parameters())
    if (item.key().find("norm") != std::string::npos) item.value().uniform_(0.5, 1.5);
  return model;
}

void expect_matches_reference(const ModelConfig& c, uint64_t seed) {
  auto model = random_model(c, seed);
  const std::vector<int64_t> ids = {5, 1, 36, 7, 7, 20, 0, 11, 3};
  const int64_t t_len = static_cast<int64_t>(ids.size());
  const Reference ref = reference_forward(*model, ids);

  std::vector<int64_t> layers = {1, 0};
  at::NoGradGuard no_grad;
  auto input = at::tensor(ids, at::kLong).view({1, t_len});
  ForwardOutput out = model->forward(input, layers);
  ASSERT_EQ(out.logits.sizes(), (std::vector<int64_t>{1, t_len, c.vocab_size}));
  ASSERT_EQ(out.hidden_states.size(), 2u);
  // f32 throughout: only the summation order differs (libtorch's kernels vary with the
  // CPU), so the error is a few ulps of the largest value, bounded relative to it.
  constexpr double kRelTolerance = 1e-5;
  double max_err = 0, max_ref = 1;
  for (int64_t t = 0; t < t_len; ++t)
    for (int64_t v = 0; v < c.vocab_size; ++v) {
      max_err = std::max(max_err, std::abs(out.logits[0][t][v].item<double>() - ref.logits[t][v]));
      max_ref = std::max(max_ref, std::abs(ref.logits[t][v]));
    }
  EXPECT_LT(max_err, kRelTolerance * max_ref) << "logits (largest " << max_ref << ")";
  for (size_t j = 0; j < layers.size(); ++j) {
    double err = 0, largest = 1;
    for (int64_t t = 0; t < t_len; ++t)
      for (int64_t i = 0; i < c.hidden_size; ++i) {
        const double r = ref.hidden[layers[j]][t][i];
        err = std::max(err, std::abs(out.hidden_states[j][0][t][i].item<double>() - r));
        largest = std::max(largest, std::abs(r));
      }
    EXPECT_LT(err, kRelTolerance * largest) << "hidden state of layer " << layers[j];
  }
}

TEST(TransformerTest, LlamaGqaTiedMatchesScalarReference) {
  ModelConfig c = tiny_config();
  c.tie_word_embeddings = true;
  expect_matches_reference(c, 1);
}

TEST(TransformerTest, LlamaUntiedWithBiasesMatchesScalarReference) {
  ModelConfig c = tiny_config();
  c.attention_bias = c.attention_output_bias = true;
  c.mlp_bias = true;
  c.num_key_value_heads = 4;
  expect_matches_reference(c, 2);
}

TEST(TransformerTest, Qwen3QkNormMatchesScalarReference) {
  ModelConfig c = tiny_config();
  c.model_type = ModelType::kQwen3;
  c.model_type_name = "qwen3";
  c.qk_norm = true;
  c.num_key_value_heads = 1;
  c.head_dim = 6;  // head_dim independent of hidden / heads, as Qwen3 allows
  expect_matches_reference(c, 3);
}

TEST(TransformerTest, Llama3RopeScalingMatchesScalarReference) {
  ModelConfig c = tiny_config();
  c.head_dim = 8;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.rope_theta = 10000.0f;
  c.rope_scaling.kind = RopeScaling::Kind::kLlama3;
  c.rope_scaling.factor = 8.0f;
  c.rope_scaling.low_freq_factor = 1.0f;
  c.rope_scaling.high_freq_factor = 4.0f;
  c.rope_scaling.original_max_position_embeddings = 64;  // puts the 4 frequencies in all three bands
  auto inv = rope_inv_freq(c);
  const Vec ref = inv_freq_reference(c);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(inv[i].item<double>(), ref[i], 1e-7 * ref[i]) << i;
  expect_matches_reference(c, 4);
}

TEST(TransformerTest, ParameterNamesAreHuggingFaceNames) {
  ModelConfig c = tiny_config();
  c.model_type = ModelType::kQwen3;
  c.qk_norm = true;
  CausalLmImpl model(c);
  std::vector<std::string> names;
  for (const auto& item : model.named_parameters()) names.push_back(item.key());
  std::vector<std::string> expected = {"model.embed_tokens.weight"};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* n : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                          "self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight",
                          "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
                          "input_layernorm.weight", "post_attention_layernorm.weight"})
      expected.push_back(p + n);
  }
  expected.push_back("model.norm.weight");
  expected.push_back("lm_head.weight");
  std::sort(names.begin(), names.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
}

TEST(TransformerTest, BatchRowsAreIndependentAndPositionsShift) {
  auto model = random_model(tiny_config(), 5);
  at::NoGradGuard no_grad;
  auto a = at::tensor(std::vector<int64_t>{3, 4, 5, 6}, at::kLong).view({1, 4});
  auto b = at::tensor(std::vector<int64_t>{9, 8, 7, 6}, at::kLong).view({1, 4});
  auto both = model->forward(at::cat({a, b}, 0)).logits;
  EXPECT_TRUE(at::allclose(both[0], model->forward(a).logits[0], 1e-6, 1e-6));
  EXPECT_TRUE(at::allclose(both[1], model->forward(b).logits[0], 1e-6, 1e-6));
  // Causality: the first three positions do not depend on the fourth token.
  auto c = at::tensor(std::vector<int64_t>{3, 4, 5, 30}, at::kLong).view({1, 4});
  EXPECT_TRUE(at::allclose(model->forward(c).logits[0].narrow(0, 0, 3), model->forward(a).logits[0].narrow(0, 0, 3),
                           1e-6, 1e-6));
  // Explicit positions 0..3 equal the default.
  auto pos = at::arange(4, at::kLong);
  EXPECT_TRUE(at::equal(model->forward(a, {}, pos).logits, model->forward(a).logits));
}

TEST(TransformerTest, InitWeightsHasRequestedScale) {
  ModelConfig c = tiny_config();
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.head_dim = 16;
  CausalLmImpl model(c);
  model.init_weights(0.02, 9);
  for (const auto& item : model.named_parameters()) {
    const auto& p = item.value();
    if (item.key().find("norm") != std::string::npos) {
      EXPECT_TRUE(at::all(p == 1).item<bool>()) << item.key();
    } else {
      const double expected = item.key().find("o_proj") != std::string::npos ||
                                      item.key().find("down_proj") != std::string::npos
                                  ? 0.02 / 2.0
                                  : 0.02;
      EXPECT_NEAR(p.std().item<double>(), expected, expected * 0.15) << item.key();
    }
  }
}

}  // namespace
}  // namespace dspark::train
