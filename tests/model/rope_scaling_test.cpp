// RoPE scaling kinds of config.json (linear, dynamic NTK, yarn) against values worked out
// independently: in double from the published formulas inside this test, plus literals
// computed separately with Python's math module (noted where used). The engine computes in
// f32 as transformers does, so the tolerance is relative 2e-6 (a few f32 ulps: powf and the
// f32 blend round where the double formula does not).
#include "model/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kernels/rope.h"

namespace dspark {
namespace {

using nlohmann::json;

constexpr double kRelTolerance = 2e-6;

ModelConfig config(int64_t head_dim, double theta, int64_t max_positions, const json& rope_scaling) {
  json j = {{"model_type", "qwen2"},         {"vocab_size", 100},
            {"hidden_size", head_dim * 4},   {"intermediate_size", 64},
            {"num_hidden_layers", 1},        {"num_attention_heads", 4},
            {"head_dim", head_dim},          {"rope_theta", theta},
            {"max_position_embeddings", max_positions}};
  if (!rope_scaling.is_null()) j["rope_scaling"] = rope_scaling;
  return ModelConfig::from_json(j, "test");
}

// base^(-2i/dim) in double.
double plain(double base, int64_t dim, int64_t i) { return std::pow(base, -2.0 * i / dim); }

void expect_near_rel(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], kRelTolerance * std::abs(want[i])) << what << " i=" << i;
}

// yarn in double: dimension d completes original * inv_freq_d / (2 pi) turns over the
// original context; dims with > beta_fast turns keep their frequency, < beta_slow are
// divided by factor, a linear ramp in d between (bounds floored/ceiled when truncating).
std::vector<double> yarn_double(int64_t dim, double base, double factor, double original, double beta_fast,
                                double beta_slow, bool truncate) {
  auto dim_for_turns = [&](double turns) {
    return dim * std::log(original / (turns * 2 * std::numbers::pi)) / (2 * std::log(base));
  };
  double lo = dim_for_turns(beta_fast), hi = dim_for_turns(beta_slow);
  if (truncate) lo = std::floor(lo), hi = std::ceil(hi);
  lo = std::max(lo, 0.0);
  hi = std::min(hi, dim - 1.0);
  if (lo == hi) hi += 0.001;
  std::vector<double> out(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    const double w = std::clamp((i - lo) / (hi - lo), 0.0, 1.0);  // 0 = extrapolate, 1 = interpolate
    out[i] = plain(base, dim, i) * (1 - w) + plain(base, dim, i) / factor * w;
  }
  return out;
}

TEST(RopeScaling, UnscaledIsUnchanged) {
  // The formula the engine always used, bit for bit, and no cos/sin scale.
  const ModelConfig c = config(64, 10000.0, 4096, nullptr);
  const std::vector<float> f = rope_inverse_frequencies(c);
  for (int64_t i = 0; i < 32; ++i)
    EXPECT_EQ(f[i], 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / 64.0f)) << i;
  EXPECT_EQ(rope_attention_factor(c), 1.0f);
}

TEST(RopeScaling, LinearDividesByFactor) {
  const ModelConfig c = config(64, 10000.0, 4096, {{"rope_type", "linear"}, {"factor", 4.0}});
  std::vector<double> want(32);
  for (int64_t i = 0; i < 32; ++i) want[i] = plain(10000.0, 64, i) / 4.0;
  expect_near_rel(rope_inverse_frequencies(c), want, "linear");
  EXPECT_EQ(rope_attention_factor(c), 1.0f);
  // "type" (older key) reads the same.
  EXPECT_EQ(rope_inverse_frequencies(config(64, 10000.0, 4096, {{"type", "linear"}, {"factor", 4.0}})),
            rope_inverse_frequencies(c));
}

TEST(RopeScaling, DynamicIsFixedAtOriginalTimesFactor) {
  // factor 2, original = max_position_embeddings = 4096, fixed for 8192 positions:
  // base' = 1e4 * (2 * 8192 / 4096 - 1)^(64/62). Python: 31082.236667168814, and
  // base'^(-2/64) = 0.7237840223942559, base'^(-62/64) = 4.4450714405444134e-05.
  const ModelConfig c = config(64, 10000.0, 4096, {{"rope_type", "dynamic"}, {"factor", 2.0}});
  const std::vector<float> f = rope_inverse_frequencies(c);
  const double base = 10000.0 * std::pow(3.0, 64.0 / 62.0);
  EXPECT_NEAR(base, 31082.236667168814, 1e-9);
  std::vector<double> want(32);
  for (int64_t i = 0; i < 32; ++i) want[i] = plain(base, 64, i);
  expect_near_rel(f, want, "dynamic");
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_NEAR(f[1], 0.7237840223942559, 2e-6 * 0.72);
  EXPECT_NEAR(f[31], 4.4450714405444134e-05, 2e-6 * 4.4e-5);
  // The base depends on factor alone (original * factor / original): an explicit
  // original_max_position_embeddings gives the same frequencies.
  EXPECT_EQ(rope_inverse_frequencies(config(64, 10000.0, 4096,
                                            {{"rope_type", "dynamic"},
                                             {"factor", 2.0},
                                             {"original_max_position_embeddings", 1024}})),
            f);
  EXPECT_EQ(rope_attention_factor(c), 1.0f);
}

TEST(RopeScaling, YarnQwen3Style) {
  // Qwen3's recommended long-context setting: factor 4 over 32768 positions, theta 1e6,
  // head_dim 128. Python: correction dims 23.596 (beta_fast 32) and 39.651 (beta_slow 1),
  // truncated to [23, 40]; attention factor 0.1 ln 4 + 1 = 1.138629436111989.
  const ModelConfig c = config(128, 1e6, 40960,
                               {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}});
  const std::vector<float> f = rope_inverse_frequencies(c);
  expect_near_rel(f, yarn_double(128, 1e6, 4.0, 32768, 32, 1, true), "yarn");
  for (int64_t i = 0; i <= 23; ++i) EXPECT_NEAR(f[i], plain(1e6, 128, i), 2e-6 * plain(1e6, 128, i)) << i;
  for (int64_t i = 40; i < 64; ++i) EXPECT_NEAR(f[i], plain(1e6, 128, i) / 4, 2e-6 * plain(1e6, 128, i) / 4) << i;
  // Half way along the ramp, dimension 31.5 would be an even blend; 31 is 8/17 of the way.
  EXPECT_NEAR(f[31], plain(1e6, 128, 31) * (1 - 8.0 / 17) + plain(1e6, 128, 31) / 4 * (8.0 / 17),
              2e-6 * plain(1e6, 128, 31));
  EXPECT_FLOAT_EQ(rope_attention_factor(c), 1.138629436111989f);
}

TEST(RopeScaling, YarnOptions) {
  // No original_max_position_embeddings: the config's max_position_embeddings (2048).
  // Python: correction dims 8.064 and 20.105 for head_dim 64, theta 1e4.
  const json yarn8 = {{"rope_type", "yarn"}, {"factor", 8.0}};
  const ModelConfig plain_yarn = config(64, 10000.0, 2048, yarn8);
  expect_near_rel(rope_inverse_frequencies(plain_yarn), yarn_double(64, 1e4, 8.0, 2048, 32, 1, true), "default");
  EXPECT_FLOAT_EQ(rope_attention_factor(plain_yarn), static_cast<float>(0.1 * std::log(8.0) + 1));

  json untruncated = yarn8;
  untruncated["truncate"] = false;
  untruncated["beta_fast"] = 16.0;
  untruncated["beta_slow"] = 2.0;
  expect_near_rel(rope_inverse_frequencies(config(64, 10000.0, 2048, untruncated)),
                  yarn_double(64, 1e4, 8.0, 2048, 16, 2, false), "untruncated");

  // DeepSeek-style mscale pair: attention factor = mscale(40, 1) / mscale(40, 0.707).
  // Python: (0.1 ln 40 + 1) / (0.0707 ln 40 + 1) = 1.0857263992561355.
  json pair = {{"rope_type", "yarn"}, {"factor", 40.0}, {"mscale", 1.0}, {"mscale_all_dim", 0.707}};
  EXPECT_FLOAT_EQ(rope_attention_factor(config(64, 10000.0, 2048, pair)), 1.0857263992561355f);
  pair["attention_factor"] = 0.5;  // an explicit factor wins
  EXPECT_EQ(rope_attention_factor(config(64, 10000.0, 2048, pair)), 0.5f);
  // factor <= 1: no magnitude change.
  EXPECT_EQ(rope_attention_factor(config(64, 10000.0, 2048, {{"rope_type", "yarn"}, {"factor", 1.0}})), 1.0f);
}

TEST(RopeScaling, ReadFromRopeParameters) {
  // Newer transformers: rope_theta and the scaling in one rope_parameters object.
  json j = {{"model_type", "qwen3"},        {"vocab_size", 100},     {"hidden_size", 256},
            {"intermediate_size", 64},      {"num_hidden_layers", 1}, {"num_attention_heads", 4},
            {"head_dim", 128},              {"max_position_embeddings", 40960},
            {"rope_parameters",
             {{"rope_type", "yarn"}, {"rope_theta", 1e6}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}}}};
  const ModelConfig c = ModelConfig::from_json(j, "test");
  EXPECT_EQ(rope_inverse_frequencies(c),
            rope_inverse_frequencies(config(128, 1e6, 40960,
                                            {{"rope_type", "yarn"},
                                             {"factor", 4.0},
                                             {"original_max_position_embeddings", 32768}})));
}

// The yarn factor reaches the rotation: the table and the reference scale cos and sin alike
// (bit-identical), every rotated pair grows by exactly that factor in norm (to f32
// rounding), and a scale of 1 is bit-identical to the unscaled table.
TEST(RopeScaling, CosSinScaleAppliedByTableAndReference) {
  const ModelConfig c = config(64, 10000.0, 2048, {{"rope_type", "yarn"}, {"factor", 8.0}});
  const std::vector<float> f = rope_inverse_frequencies(c);
  const float scale = rope_attention_factor(c);
  const RopeTable table(f, 512, scale);
  const std::vector<int32_t> positions = {0, 5, 300, 511};
  std::vector<float> x(4 * 2 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f;
  std::vector<float> got = x, ref = x;
  apply_rope(got.data(), positions.data(), 4, 2, 64, table);
  reference::apply_rope(ref.data(), positions.data(), 4, 2, 64, f, scale);
  EXPECT_EQ(got, ref);
  for (size_t row = 0; row < 8; ++row)
    for (size_t i = 0; i < 32; ++i) {
      const float* a = x.data() + row * 64;
      const float* b = got.data() + row * 64;
      const double before = std::hypot(a[i], a[i + 32]), after = std::hypot(b[i], b[i + 32]);
      EXPECT_NEAR(after, scale * before, 1e-5 * (1 + before)) << row << " " << i;
    }
  std::vector<float> one = x, none = x;
  apply_rope(one.data(), positions.data(), 4, 2, 64, RopeTable(f, 512, 1.0f));
  apply_rope(none.data(), positions.data(), 4, 2, 64, RopeTable(f, 512));
  EXPECT_EQ(one, none);
}

}  // namespace
}  // namespace dspark
