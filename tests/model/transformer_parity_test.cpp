// Engine forward vs the independent scalar reference, on tiny random models of every
// supported architecture, in f32 and bf16 compute.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"
#include "model/transformer.h"
#include "support/engine_runner.h"
#include "support/reference_model.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::EngineRunner;
using testing::ReferenceModel;
using testing::TinyModelSpec;

struct ParityCase {
  std::string name;
  TinyModelSpec spec;
};

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.next_u64() % vocab);
  return t;
}

// Max |a - b| relative to max(1, max |b|).
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double max_abs = 1, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_abs = std::max(max_abs, std::abs(static_cast<double>(b[i])));
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return diff / max_abs;
}

std::vector<ParityCase> parity_cases() {
  std::vector<ParityCase> cases;
  auto add = [&](std::string name, auto&& edit) {
    TinyModelSpec s;
    edit(s);
    cases.push_back({std::move(name), s});
  };
  add("llama", [](TinyModelSpec& s) { s.model_type = "llama"; });
  add("llama_tied_bias_llama3rope", [](TinyModelSpec& s) {
    s.model_type = "llama";
    s.tie_word_embeddings = true;
    s.attention_bias = true;
    s.llama3_rope_scaling = true;
  });
  add("mistral_mha", [](TinyModelSpec& s) {
    s.model_type = "mistral";
    s.num_kv_heads = 4;
  });
  add("qwen2", [](TinyModelSpec& s) {
    s.model_type = "qwen2";
    s.tie_word_embeddings = true;
  });
  add("qwen3_wide_heads", [](TinyModelSpec& s) {
    s.model_type = "qwen3";
    s.head_dim = 32;  // head_dim * heads != hidden, as in real Qwen3
    s.num_kv_heads = 1;
  });
  add("llama_bf16_file", [](TinyModelSpec& s) { s.file_dtype = DType::kBF16; });
  // RoPE scalings and sliding windows (37 tokens: windows of 8 and 5 cut most rows).
  add("llama_linear_rope", [](TinyModelSpec& s) {
    s.rope_scaling = "linear";
    s.rope_factor = 2.0;
  });
  add("mistral_sliding_window_dynamic_rope", [](TinyModelSpec& s) {
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
  add("qwen3_layer_types_yarn", [](TinyModelSpec& s) {
    s.model_type = "qwen3";
    s.head_dim = 32;
    s.sliding_window = 6;
    s.layer_types = {"sliding_attention", "full_attention"};
    s.rope_scaling = "yarn";
    s.rope_factor = 8.0;
  });
  return cases;
}

class TransformerParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(TransformerParity, MatchesReferenceF32AndBf16) {
  const ParityCase& pc = GetParam();
  const auto dir = testing::write_tiny_model(pc.spec, testing::make_temp_dir("parity-" + pc.name));
  const std::vector<int32_t> tokens = random_tokens(37, pc.spec.vocab_size, 7);

  for (DType compute : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(compute)));
    TransformerOptions opts;
    opts.compute = compute;
    opts.max_batch_tokens = 64;
    opts.capture_layers = {0, static_cast<int32_t>(pc.spec.num_layers - 1)};
    auto model = Transformer::load(dir, opts);
    EngineRunner runner(*model);
    const int seq = runner.add_sequence();
    const std::vector<float> engine_logits = runner.run(seq, tokens, 64);

    const ReferenceModel reference(dir, compute == DType::kBF16);
    std::vector<std::vector<float>> ref_hidden;
    const std::vector<float> ref_logits = reference.forward(tokens, &ref_hidden);
    // f32: only summation order differs. bf16: operands are rounded to bf16 on both sides,
    // but a value near a rounding boundary can land one bf16 step apart and propagate.
    const double tolerance = compute == DType::kF32 ? 1e-4 : 2e-2;
    EXPECT_LT(max_rel_diff(engine_logits, ref_logits), tolerance);

    // Hidden states of the captured layers: the run above was a single chunk.
    const ForwardResult& out = runner.last_result();
    for (size_t c = 0; c < opts.capture_layers.size(); ++c) {
      const float* hidden = out.hidden_layer(c);
      const auto& ref = ref_hidden[opts.capture_layers[c]];
      EXPECT_LT(max_rel_diff(std::vector<float>(hidden, hidden + ref.size()), ref), tolerance) << "layer " << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, TransformerParity, ::testing::ValuesIn(parity_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(Transformer, RejectsBadBatches) {
  const auto dir = testing::write_tiny_model({}, testing::make_temp_dir("bad-batch"));
  TransformerOptions opts;
  opts.max_batch_tokens = 8;
  opts.compute = DType::kF32;
  auto model = Transformer::load(dir, opts);
  EngineRunner runner(*model);
  const int seq = runner.add_sequence();
  EXPECT_THROW(runner.step({{seq, std::vector<int32_t>(9, 1)}}), Error);    // too many tokens
  EXPECT_THROW(runner.step({{seq, std::vector<int32_t>{97}}}), Error);      // id outside vocab
  EXPECT_THROW(runner.step({{seq, std::vector<int32_t>{-1}}}), Error);
  EXPECT_NO_THROW(runner.step({{seq, std::vector<int32_t>{1, 2, 3}}}));
}

// The parity cases above would pass vacuously if the window or the scaling had no effect:
// the windowed yarn model's engine logits must be far (> 100x the f32 tolerance) from the
// reference of the same weights without the window, and without the yarn scaling.
TEST(Transformer, SlidingWindowAndYarnChangeTheOutput) {
  TinyModelSpec spec;
  spec.model_type = "qwen2";
  spec.num_layers = 3;
  spec.sliding_window = 5;
  spec.max_window_layers = 1;
  spec.rope_scaling = "yarn";
  const auto dir = testing::write_tiny_model(spec, testing::make_temp_dir("window-matters"));
  TinyModelSpec no_window = spec, no_yarn = spec;
  no_window.sliding_window = 0;
  no_yarn.rope_scaling.clear();
  const auto dir_no_window = testing::write_tiny_model(no_window, testing::make_temp_dir("window-matters-off"));
  const auto dir_no_yarn = testing::write_tiny_model(no_yarn, testing::make_temp_dir("yarn-matters-off"));
  const std::vector<int32_t> tokens = random_tokens(37, spec.vocab_size, 7);

  TransformerOptions opts;
  opts.compute = DType::kF32;
  opts.max_batch_tokens = 64;
  auto model = Transformer::load(dir, opts);
  EXPECT_EQ(model->config().attention_window(0), 0);
  EXPECT_EQ(model->config().attention_window(1), 5);
  EngineRunner runner(*model);
  const std::vector<float> engine_logits = runner.run(runner.add_sequence(), tokens, 64);
  EXPECT_LT(max_rel_diff(engine_logits, ReferenceModel(dir, false).forward(tokens)), 1e-4);
  EXPECT_GT(max_rel_diff(engine_logits, ReferenceModel(dir_no_window, false).forward(tokens)), 1e-2);
  EXPECT_GT(max_rel_diff(engine_logits, ReferenceModel(dir_no_yarn, false).forward(tokens)), 1e-2);
}

TEST(Transformer, MissingDirectoryAndUnknownCaptureLayerFailClearly) {
  EXPECT_THROW(Transformer::load("/nonexistent/model", {}), Error);
  const auto dir = testing::write_tiny_model({}, testing::make_temp_dir("bad-capture"));
  TransformerOptions opts;
  opts.capture_layers = {5};
  try {
    Transformer::load(dir, opts);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("capture layer 5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dspark
