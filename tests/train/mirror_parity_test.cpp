// Engine ↔ libtorch mirror parity on tiny random models of every checkpoint feature the
// loader accepts: RoPE scaling linear, dynamic, yarn (with its attention factor) and
// llama3, Qwen3's q/k norms, and sliding windows (mistral on every layer, qwen2 above
// max_window_layers, qwen3 from layer_types). The mirror (train/model/transformer.h) is
// the trainer's own module, written from Hugging Face's eager code and independent of the
// engine's kernels, so this is the second reference beside the scalar one of
// tests/model/transformer_parity_test.cpp.
//
// 37 tokens against windows of 5..8 and an original context of 64: the windows cut most
// rows, and the engine reads its KV cache across chunk boundaries (chunks of 8 and 64).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "core/rng.h"
#include "loader/config.h"
#include "model/transformer.h"
#include "support/engine_runner.h"
#include "support/tiny_models.h"
#include "train/model/hf_weights.h"

namespace dspark::train {
namespace {

using dspark::testing::TinyModelSpec;

struct MirrorCase {
  std::string name;
  TinyModelSpec spec;
};
void PrintTo(const MirrorCase& c, std::ostream* os) { *os << c.name; }

std::vector<MirrorCase> mirror_cases() {
  std::vector<MirrorCase> cases;
  auto add = [&](std::string name, auto&& edit) {
    TinyModelSpec s;
    edit(s);
    cases.push_back({std::move(name), s});
  };
  add("llama_linear_rope", [](TinyModelSpec& s) {
    s.rope_scaling = "linear";
    s.rope_factor = 2.0;
  });
  add("llama_llama3_rope_tied_bias", [](TinyModelSpec& s) {
    s.llama3_rope_scaling = true;
    s.tie_word_embeddings = true;
    s.attention_bias = true;
  });
  add("mistral_window_8_dynamic_rope", [](TinyModelSpec& s) {
    s.model_type = "mistral";
    s.sliding_window = 8;
    s.rope_scaling = "dynamic";
  });
  add("qwen2_window_on_upper_layers_yarn", [](TinyModelSpec& s) {
    s.model_type = "qwen2";
    s.num_layers = 3;
    s.sliding_window = 5;
    s.max_window_layers = 1;  // layers 1 and 2 slide, layer 0 is full
    s.rope_scaling = "yarn";
  });
  add("qwen3_layer_types_yarn_factor_8", [](TinyModelSpec& s) {
    s.model_type = "qwen3";
    s.head_dim = 32;
    s.num_kv_heads = 1;
    s.sliding_window = 6;
    s.layer_types = {"sliding_attention", "full_attention"};
    s.rope_scaling = "yarn";
    s.rope_factor = 8.0;
  });
  return cases;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.next_u64() % vocab);
  return t;
}

// max |a - b| / max(1, max |b|).
double relative_error(const std::vector<float>& a, const float* b) {
  double max_abs = 1, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_abs = std::max(max_abs, std::abs(static_cast<double>(b[i])));
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return diff / max_abs;
}

class MirrorParity : public ::testing::TestWithParam<MirrorCase> {};

TEST_P(MirrorParity, EngineLogitsAndHiddenStatesMatchTheLibtorchMirror) {
  const MirrorCase& mc = GetParam();
  const auto dir = dspark::testing::write_tiny_model(mc.spec, dspark::testing::make_temp_dir("mirror-" + mc.name));
  const std::vector<int32_t> tokens = random_tokens(37, mc.spec.vocab_size, 11);
  const int64_t last_layer = mc.spec.num_layers - 1;

  const auto mirror = load_hf_model(dir);
  const at::Tensor ids = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), at::kLong).unsqueeze(0);
  const std::vector<int64_t> hidden_layers = {0, last_layer};
  ForwardOutput reference;
  {
    at::NoGradGuard no_grad;
    reference = mirror->forward(ids, hidden_layers);
  }
  const at::Tensor ref_logits = reference.logits.squeeze(0).to(at::kFloat).contiguous();  // [T, vocab]

  TransformerOptions options;
  options.compute = DType::kF32;
  options.max_batch_tokens = 64;
  options.capture_layers = {0, static_cast<int32_t>(last_layer)};
  auto model = Transformer::load(dir, options);
  for (int64_t chunk : {int64_t{64}, int64_t{8}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    dspark::testing::EngineRunner runner(*model);
    const int seq = runner.add_sequence();
    const std::vector<float> logits = runner.run(seq, tokens, chunk);
    ASSERT_EQ(static_cast<int64_t>(logits.size()), ref_logits.numel());
    // f32 on both sides: only the summation order differs.
    EXPECT_LT(relative_error(logits, ref_logits.data_ptr<float>()), 1e-5);
    if (chunk != 64) continue;
    // One chunk: the captured hidden states cover every position.
    for (size_t c = 0; c < hidden_layers.size(); ++c) {
      const at::Tensor ref = reference.hidden_states[c].squeeze(0).to(at::kFloat).contiguous();  // [T, hidden]
      const float* engine_hidden = runner.last_result().hidden_layer(static_cast<int>(c));
      EXPECT_LT(relative_error(std::vector<float>(engine_hidden, engine_hidden + ref.numel()), ref.data_ptr<float>()),
                1e-5)
          << "layer " << hidden_layers[c];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CheckpointFeatures, MirrorParity, ::testing::ValuesIn(mirror_cases()),
                         [](const auto& info) { return info.param.name; });

// Each feature changes the mirror's output, so the parity above could not pass with the
// mirror ignoring it.
TEST(MirrorFeatures, ScalingsAndWindowsChangeTheLogits) {
  TinyModelSpec base;
  base.model_type = "qwen2";
  base.num_layers = 3;
  base.max_window_layers = 1;
  const std::vector<int32_t> tokens = random_tokens(37, base.vocab_size, 3);
  auto logits_of = [&](const TinyModelSpec& spec, const std::string& name) {
    const auto dir = dspark::testing::write_tiny_model(spec, dspark::testing::make_temp_dir("mirror-feature-" + name));
    at::NoGradGuard no_grad;
    return hf_logits(dir, tokens);
  };
  const at::Tensor plain = logits_of(base, "plain");
  for (const char* kind : {"linear", "dynamic", "yarn"}) {
    TinyModelSpec s = base;
    s.rope_scaling = kind;
    EXPECT_GT((logits_of(s, kind) - plain).abs().max().item<double>(), 1e-3) << kind;
  }
  TinyModelSpec windowed = base;
  windowed.sliding_window = 5;
  const at::Tensor with_window = logits_of(windowed, "window");
  EXPECT_GT((with_window - plain).abs().max().item<double>(), 1e-3);
  // Rows that the window does not cut are unchanged (query i sees keys i-4..i).
  EXPECT_EQ((with_window.slice(0, 0, 5) - plain.slice(0, 0, 5)).abs().max().item<double>(), 0.0);
}

TEST(MirrorFeatures, YarnAttentionScalingFollowsTheConfig) {
  ModelConfig c;
  c.head_dim = 16;
  c.rope_theta = 10000;
  c.max_position_embeddings = 256;
  EXPECT_EQ(rope_attention_scaling(c), 1.0);
  c.rope_scaling.kind = RopeScaling::Kind::kYarn;
  c.rope_scaling.factor = 4.0;
  EXPECT_NEAR(rope_attention_scaling(c), 0.1 * std::log(4.0) + 1.0, 1e-12);
  c.rope_scaling.mscale = 1.0;
  c.rope_scaling.mscale_all_dim = 0.5;
  EXPECT_NEAR(rope_attention_scaling(c), (0.1 * std::log(4.0) + 1.0) / (0.05 * std::log(4.0) + 1.0), 1e-12);
  c.rope_scaling.attention_factor = 1.25;
  EXPECT_EQ(rope_attention_scaling(c), 1.25);
  c.rope_scaling.kind = RopeScaling::Kind::kLinear;
  EXPECT_EQ(rope_attention_scaling(c), 1.0);
}

}  // namespace
}  // namespace dspark::train
