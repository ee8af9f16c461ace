// Engine ↔ libtorch parity on the shipped, trained target (models/tiny-target): the
// trainer's CausalLm module (f32, its own attention and RoPE) is the independent
// reference for the engine's paged, packed forward.
//
// 1. Logits of eight eval prompts (two per eval set): engine f32 within 1e-5 of the
//    largest reference logit magnitude (summation order only; measured ~1e-6), engine
//    bf16 within 1e-2 (bf16 rounds activations before every matmul; measured ~1.3e-3).
// 2. Greedy generation of 64 tokens by the engine (Engine + generate_one, EOS ignored),
//    checked against libtorch in one teacher-forced pass over prompt + generation: at
//    every generated position the engine's token must be libtorch's argmax. This is
//    exactly "libtorch's own greedy run produces the same 64 tokens" for a causal model.
//    A position may differ only where libtorch's top-2 margin is within the tolerance
//    of step 1 (a numeric near-tie); such exemptions are counted and must stay rare.
// Skipped when models/tiny-target is absent.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "loadgen/dataset.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"
#include "support/engine_runner.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

const fs::path kTarget = fs::path(DSPARK_SOURCE_DIR) / "models" / "tiny-target";
const fs::path kEval = fs::path(DSPARK_SHARED_DIR) / "data" / "eval";
constexpr int64_t kGenerated = 64;

struct Tolerance {
  DType compute;
  double relative;  // of the largest reference logit magnitude
};

class ShippedTargetParity : public ::testing::TestWithParam<Tolerance> {
 protected:
  void SetUp() override {
    if (!fs::exists(kTarget / "config.json") || !fs::exists(kTarget / "model.safetensors")) {
      GTEST_SKIP() << "models/tiny-target is not present";
    }
  }
};

std::vector<std::vector<int32_t>> eval_prompts(const Tokenizer& tokenizer) {
  std::vector<std::vector<int32_t>> out;
  for (const char* file : {"gsm8k_test.jsonl", "humaneval.jsonl", "mbpp.jsonl", "mtbench_question.jsonl"}) {
    for (const DatasetPrompt& p : load_dataset(kEval / file, 2)) out.push_back(tokenizer.encode(p.text, true));
  }
  return out;
}

TEST_P(ShippedTargetParity, LogitsAndGreedy64TokensMatchTheLibtorchModule) {
  const Tolerance tol = GetParam();
  const auto reference = load_hf_model(kTarget);
  const Tokenizer tokenizer = Tokenizer::from_dir(kTarget);
  TransformerOptions options;
  options.compute = tol.compute;
  options.max_batch_tokens = 512;
  options.max_sequences = 4;
  auto model = Transformer::load(kTarget, options);
  const int64_t vocab = model->config().vocab_size;
  const auto prompts = eval_prompts(tokenizer);
  ASSERT_EQ(prompts.size(), 8u);

  Engine engine(*model, tokenizer, EngineOptions{.max_running = 1, .max_batch_tokens = 512});
  GenerationOptions greedy;
  greedy.max_tokens = kGenerated;
  greedy.sampling.temperature = 0;
  greedy.ignore_eos = true;

  int64_t near_ties = 0;
  double worst_logit_error = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int32_t>& prompt = prompts[i];
    // 1. Prompt logits, engine (chunked prefill) vs libtorch.
    testing::EngineRunner runner(*model);
    const int seq = runner.add_sequence();
    const std::vector<float> engine_logits = runner.run(seq, prompt, 64);
    const at::Tensor ref_prompt = hf_logits(*reference, prompt).contiguous();
    ASSERT_EQ(ref_prompt.size(0), static_cast<int64_t>(prompt.size()));
    const float* r = ref_prompt.data_ptr<float>();
    double max_ref = 0, max_err = 0;
    for (int64_t k = 0; k < ref_prompt.numel(); ++k) {
      max_ref = std::max(max_ref, std::abs(static_cast<double>(r[k])));
      max_err = std::max(max_err, std::abs(static_cast<double>(engine_logits[k]) - r[k]));
    }
    worst_logit_error = std::max(worst_logit_error, max_err / max_ref);
    EXPECT_LE(max_err, tol.relative * max_ref) << "prompt " << i << ": max |logit| " << max_ref;

    // 2. 64 greedy tokens from the engine, checked position by position against libtorch.
    const GenerationResult gen = generate_one(engine, prompt, greedy);
    ASSERT_EQ(static_cast<int64_t>(gen.tokens.size()), kGenerated) << gen.error;
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), gen.tokens.begin(), gen.tokens.end());
    const at::Tensor ref_all = hf_logits(*reference, all).contiguous();
    const float* ra = ref_all.data_ptr<float>();
    for (int64_t t = 0; t < kGenerated; ++t) {
      const float* row = ra + (static_cast<int64_t>(prompt.size()) - 1 + t) * vocab;
      const int64_t best = std::max_element(row, row + vocab) - row;
      if (best == gen.tokens[static_cast<size_t>(t)]) continue;
      const double margin = static_cast<double>(row[best]) - row[gen.tokens[static_cast<size_t>(t)]];
      EXPECT_LE(margin, 2 * tol.relative * max_ref)
          << "prompt " << i << " token " << t << ": engine chose " << gen.tokens[static_cast<size_t>(t)]
          << ", libtorch " << best << " by a margin of " << margin;
      ++near_ties;
      break;  // after a (tolerated) divergence the continuations are different sequences
    }
  }
  EXPECT_LE(near_ties, 1) << "greedy runs that met a numeric near-tie";
  RecordProperty("worst_relative_logit_error", std::to_string(worst_logit_error));
  std::printf("worst relative logit error %.3g, near-tie divergences %lld of %zu greedy runs\n", worst_logit_error,
              static_cast<long long>(near_ties), prompts.size());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ShippedTargetParity,
                         ::testing::Values(Tolerance{DType::kF32, 1e-5}, Tolerance{DType::kBF16, 1e-2}),
                         [](const auto& info) { return info.param.compute == DType::kF32 ? "f32" : "bf16"; });

}  // namespace
}  // namespace dspark::train
