// DSpark / DFlash drafters through the whole engine on a tiny random target: greedy output
// with speculation equals plain greedy output token for token — alone, batched
// (max_running 4), with chunked prefill and under KV pressure (preemption) — for a random
// drafter (mostly rejected drafts) and for one whose Markov head is fitted to the target's
// own greedy bigrams (long accepted runs, so partial acceptance and rollback are
// exercised). The drafter is built the way engine/assembly.h builds it: a SpeculatorPlan
// gives the capture layers, then builds the proposer over the loaded target.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/rng.h"
#include "engine/engine.h"
#include "spec/drafter_fixtures.h"
#include "spec/dspark_proposer.h"
#include "spec/proposer_factory.h"
#include "support/engine_requests.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::greedy;
using testing::run_all;

const std::filesystem::path& target_dir() {
  static const auto dir = [] {
    testing::TinyModelSpec spec;
    spec.num_layers = 2;
    return testing::write_tiny_model_with_tokenizer(spec, "dspark-engine-target");
  }();
  return dir;
}

ModelConfig target_config() { return ModelConfig::from_file(target_dir() / "config.json"); }

std::vector<std::vector<int32_t>> prompts(int n) {
  std::vector<std::vector<int32_t>> out;
  Rng rng(9);
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p;
    const int len = 2 + static_cast<int>(rng.next_u64() % 30);
    for (int j = 0; j < len; ++j) p.push_back(static_cast<int32_t>(3 + rng.next_u64() % 90));
    out.push_back(p);
  }
  return out;
}

std::unique_ptr<Transformer> load_target(std::vector<int32_t> capture_layers, int64_t max_model_len = 0) {
  TransformerOptions o;
  o.max_model_len = max_model_len;
  o.max_batch_tokens = 128;
  o.max_sequences = 16;
  o.capture_layers = std::move(capture_layers);
  return Transformer::load(target_dir(), o);
}

const std::vector<std::vector<int32_t>>& plain_outputs() {
  static const auto outputs = [] {
    auto model = load_target({});
    const Tokenizer tok = Tokenizer::from_dir(target_dir());
    std::vector<std::vector<int32_t>> out;
    for (const auto& p : prompts(12)) {
      Engine engine(*model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 128});
      out.push_back(generate_one(engine, p, greedy(40)).tokens);
    }
    return out;
  }();
  return outputs;
}

enum class DrafterCase { kRandomDSpark, kFittedDSpark, kRandomDFlash };

// A DSpark drafter whose Markov head predicts the target's most frequent greedy successor
// of the previous token: W₁ = identity (rank = vocabulary), W₂[b, a] = 30 when b follows a.
std::filesystem::path write_drafter(DrafterCase which) {
  const ModelConfig target = ModelConfig::from_file(target_dir());
  const DrafterKind kind = which == DrafterCase::kRandomDFlash ? DrafterKind::kDFlash : DrafterKind::kDSpark;
  const int64_t rank = which == DrafterCase::kFittedDSpark ? target.vocab_size : 8;
  const DrafterConfig config = testing::make_drafter_config(target, kind, {1, 2}, /*block_size=*/5, 1, rank);
  testing::DrafterWeightsSpec spec;
  spec.seed = static_cast<uint64_t>(which) + 17;
  if (which == DrafterCase::kFittedDSpark) {
    std::map<int32_t, std::map<int32_t, int>> counts;
    const auto ps = prompts(12);
    for (size_t i = 0; i < ps.size(); ++i) {
      std::vector<int32_t> seq = {ps[i].back()};
      seq.insert(seq.end(), plain_outputs()[i].begin(), plain_outputs()[i].end());
      for (size_t t = 0; t + 1 < seq.size(); ++t) ++counts[seq[t]][seq[t + 1]];
    }
    const int64_t v = target.vocab_size;
    spec.edit = [counts, v](const std::string& name, std::vector<float>& values) {
      if (name == "markov_head.markov_w1.weight") {
        std::fill(values.begin(), values.end(), 0.0f);
        for (int64_t a = 0; a < v; ++a) values[a * v + a] = 1.0f;
      } else if (name == "markov_head.markov_w2.weight") {
        std::fill(values.begin(), values.end(), 0.0f);
        for (const auto& [a, next] : counts) {
          const auto best = std::max_element(next.begin(), next.end(),
                                             [](const auto& x, const auto& y) { return x.second < y.second; });
          values[best->first * v + a] = 30.0f;
        }
      }
    };
  }
  return testing::write_random_drafter(config, testing::make_temp_dir("dspark-engine-drafter"), spec);
}

struct SpecRun {
  std::vector<std::vector<int32_t>> outputs;
  SpecDecodeMetrics metrics;
  int64_t preemptions = 0;
  bool confidence_head = false;
};

SpecRun run_speculative(DrafterCase which, EngineOptions options, DType compute = DType::kBF16,
                        int64_t max_model_len = 0, std::optional<WeightQuantization> drafter_weights = {},
                        const GenerationOptions& request = greedy(40)) {
  SpeculatorOptions so;
  so.speculator = write_drafter(which).string();
  so.max_running = options.max_running;
  so.compute = compute;
  so.quantization = drafter_weights;
  const SpeculatorPlan plan(so, target_config());
  auto model = load_target(plan.capture_layers(), max_model_len);
  const Tokenizer tok = Tokenizer::from_dir(target_dir());
  std::unique_ptr<Proposer> proposer = plan.build(*model);
  EXPECT_NE(dynamic_cast<DSparkProposer*>(proposer.get()), nullptr);
  Engine engine(*model, tok, options, std::move(proposer));
  SpecRun run;
  run.outputs = run_all(engine, prompts(12), request);
  run.metrics = engine.spec_metrics();
  run.preemptions = engine.stats().num_preemptions;
  run.confidence_head = which != DrafterCase::kRandomDFlash;
  return run;
}

void expect_identical(const SpecRun& run) {
  ASSERT_EQ(run.outputs.size(), plain_outputs().size());
  for (size_t i = 0; i < run.outputs.size(); ++i) EXPECT_EQ(run.outputs[i], plain_outputs()[i]) << "prompt " << i;
  EXPECT_GT(run.metrics.num_drafts, 0);
  // With a confidence head (DSpark) every verified round feeds the calibration counters,
  // position 0 in each of them; without one (DFlash) none does.
  EXPECT_EQ(run.metrics.calibration_rounds[0], run.confidence_head ? run.metrics.drafted_per_position[0] : 0);
}

TEST(DSparkEngine, CaptureLayersComeFromTheDrafter) {
  SpeculatorOptions so;
  so.speculator = write_drafter(DrafterCase::kRandomDSpark).string();
  so.max_running = 2;
  const SpeculatorPlan plan(so, target_config());
  EXPECT_EQ(plan.capture_layers(), (std::vector<int32_t>{0, 1}));  // aux ids {1, 2}
  // A target loaded without them is refused by the engine.
  auto model = load_target({});
  const Tokenizer tok = Tokenizer::from_dir(target_dir());
  EXPECT_THROW(Engine(*model, tok, EngineOptions{.max_running = 2, .max_batch_tokens = 64}, plan.build(*model)),
               Error);
  // A drafter whose aux layers the target does not have is refused before anything loads.
  ModelConfig shallow = target_config();
  shallow.num_hidden_layers = 1;
  EXPECT_THROW(SpeculatorPlan(so, shallow), Error);
  so.speculator = "ngram";
  EXPECT_TRUE(SpeculatorPlan(so, target_config()).capture_layers().empty());
  so.speculator = (target_dir() / "no-such-drafter").string();
  EXPECT_THROW(SpeculatorPlan(so, target_config()), Error);
}

// The drafter's matmul weights: as named, else as its config.json's "quantization" says,
// else the target's.
TEST(DSparkEngine, DrafterWeightsAreNamedThenConfiguredThenTheTargets) {
  SpeculatorOptions so;
  so.speculator = write_drafter(DrafterCase::kRandomDSpark).string();
  auto bf16_target = load_target({});
  EXPECT_EQ(drafter_quantization(so, *bf16_target), WeightQuantization::kNone);
  TransformerOptions int8;
  int8.quantization = WeightQuantization::kInt8;
  const auto int8_target = Transformer::load(target_dir(), int8);
  EXPECT_EQ(drafter_quantization(so, *int8_target), WeightQuantization::kInt8);
  so.quantization = WeightQuantization::kInt8;
  EXPECT_EQ(drafter_quantization(so, *bf16_target), WeightQuantization::kInt8);
  so.quantization = WeightQuantization::kNone;
  EXPECT_EQ(drafter_quantization(so, *int8_target), WeightQuantization::kNone);

  // A drafter that ships int8 at load: its config decides unless the options name weights.
  const std::filesystem::path config_path = std::filesystem::path(so.speculator) / "config.json";
  nlohmann::json config = nlohmann::json::parse(std::ifstream(config_path));
  config["quantization"] = "int8";
  std::ofstream(config_path) << config.dump();
  so.quantization.reset();
  EXPECT_EQ(drafter_quantization(so, *bf16_target), WeightQuantization::kInt8);
  so.quantization = WeightQuantization::kNone;
  EXPECT_EQ(drafter_quantization(so, *bf16_target), WeightQuantization::kNone);
  config["quantization"] = "none";
  std::ofstream(config_path) << config.dump();
  so.quantization.reset();
  EXPECT_EQ(drafter_quantization(so, *int8_target), WeightQuantization::kNone);
  config["quantization"] = "fp8";
  std::ofstream(config_path) << config.dump();
  EXPECT_THROW(drafter_quantization(so, *bf16_target), Error);
}

// An int8 drafter proposes for a bf16 target: the drafts differ, the output does not.
TEST(DSparkEngine, GreedyLosslessInt8DrafterOnBf16Target) {
  expect_identical(run_speculative(DrafterCase::kFittedDSpark, {.max_running = 4, .max_batch_tokens = 128},
                                   DType::kBF16, 0, WeightQuantization::kInt8));
}

TEST(DSparkEngine, GreedyLosslessRandomDrafterAlone) {
  expect_identical(run_speculative(DrafterCase::kRandomDSpark, {.max_running = 1, .max_batch_tokens = 128}));
}

TEST(DSparkEngine, GreedyLosslessFittedDrafterBatchedAndChunked) {
  const SpecRun run = run_speculative(DrafterCase::kFittedDSpark,
                                  {.max_running = 4, .max_batch_tokens = 64, .prefill_chunk = 7}, DType::kF32);
  expect_identical(run);
  // The fitted Markov head makes most drafts right: multi-token acceptance and partial
  // rejections both happen.
  std::printf("fitted drafter: tau %.3f, acceptance %.3f\n", run.metrics.mean_acceptance_length(),
              run.metrics.acceptance_rate());
  EXPECT_GT(run.metrics.mean_acceptance_length(), 2.0);
  EXPECT_LT(run.metrics.acceptance_rate(), 1.0);
}

TEST(DSparkEngine, GreedyLosslessWithALogitBias) {
  // A bias moves the target's greedy choice away from the drafter's own argmax: drafts go
  // through the request's transform, and the output must still be plain decoding's, bias
  // included. The token plain decoding emits most is banned, another one favoured.
  std::map<int32_t, int> uses;
  for (const auto& out : plain_outputs())
    for (int32_t t : out) ++uses[t];
  const int32_t banned = std::max_element(uses.begin(), uses.end(), [](const auto& a, const auto& b) {
                           return a.second < b.second;
                         })->first;
  const int32_t favoured = banned == 40 ? 41 : 40;
  GenerationOptions biased = greedy(40);
  biased.sampling.logit_bias = {{std::min(banned, favoured), banned < favoured ? -100.0f : 1.5f},
                                {std::max(banned, favoured), banned < favoured ? 1.5f : -100.0f}};
  auto model = load_target({});
  const Tokenizer tok = Tokenizer::from_dir(target_dir());
  Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 128});
  const auto reference = run_all(plain, prompts(12), biased);
  EXPECT_NE(reference, plain_outputs()) << "the bias changes the output";
  for (const auto& out : reference) EXPECT_EQ(std::count(out.begin(), out.end(), banned), 0) << "banned token emitted";

  const SpecRun run = run_speculative(DrafterCase::kFittedDSpark, {.max_running = 4, .max_batch_tokens = 128},
                                      DType::kBF16, 0, {}, biased);
  EXPECT_EQ(run.outputs, reference);
  EXPECT_GT(run.metrics.num_accepted_tokens, 0);
}

TEST(DSparkEngine, GreedyLosslessUnderPreemption) {
  // Context 96 (26 blocks of 4 for one sequence with its block), 30 blocks for 4 requests
  // of up to 71 tokens: requests are preempted and recomputed, and the drafter's slots are
  // released and observed again from position 0.
  const SpecRun run = run_speculative(DrafterCase::kFittedDSpark,
                                      {.max_running = 4, .max_batch_tokens = 64, .block_size = 4, .num_kv_blocks = 30},
                                      DType::kBF16, 96);
  expect_identical(run);
  EXPECT_GT(run.preemptions, 0);
  const SpecRun dflash = run_speculative(
      DrafterCase::kRandomDFlash, {.max_running = 4, .max_batch_tokens = 64, .block_size = 4, .num_kv_blocks = 30},
      DType::kBF16, 96);
  expect_identical(dflash);
  EXPECT_GT(dflash.preemptions, 0);
}

TEST(DSparkEngine, PrefixCachingShowsTheDrafterTheSameContext) {
  // Requests that repeat earlier prompts and conversations: with prefix caching their
  // cached positions are never run through the target, yet the drafter must draft exactly
  // as without it (same drafts, so the same acceptance counts), and the outputs stay the
  // plain ones.
  SpeculatorOptions so;
  so.speculator = write_drafter(DrafterCase::kFittedDSpark).string();
  so.max_running = 1;
  const SpeculatorPlan plan(so, target_config());
  auto model = load_target(plan.capture_layers());
  const Tokenizer tok = Tokenizer::from_dir(target_dir());
  const auto ps = prompts(12);
  auto run = [&](bool caching) {
    Engine engine(*model, tok,
                  EngineOptions{.max_running = 1, .max_batch_tokens = 64, .block_size = 4,
                                .enable_prefix_caching = caching},
                  plan.build(*model));
    std::vector<GenerationResult> results;
    for (size_t i = 0; i < 6; ++i) {
      results.push_back(generate_one(engine, ps[i], greedy(40)));
      EXPECT_EQ(results.back().tokens, plain_outputs()[i]) << "prompt " << i;
      // The conversation so far, continued: all of it but the last block comes cached.
      std::vector<int32_t> turn2 = ps[i];
      turn2.insert(turn2.end(), results.back().tokens.begin(), results.back().tokens.end());
      turn2.push_back(5);
      results.push_back(generate_one(engine, turn2, greedy(20)));
    }
    EXPECT_EQ(engine.stats().prefix_cache_hits > 0, caching);
    return results;
  };
  const auto cached = run(true);
  const auto uncached = run(false);
  ASSERT_EQ(cached.size(), uncached.size());
  for (size_t i = 0; i < cached.size(); ++i) {
    EXPECT_EQ(cached[i].tokens, uncached[i].tokens) << "request " << i;
    EXPECT_EQ(cached[i].spec_metrics.accepted_per_position, uncached[i].spec_metrics.accepted_per_position)
        << "request " << i;
    EXPECT_EQ(cached[i].spec_metrics.num_draft_tokens, uncached[i].spec_metrics.num_draft_tokens) << "request " << i;
    if (i % 2 == 1) EXPECT_GT(cached[i].cached_prompt_tokens, 40) << "request " << i;
  }
}

TEST(DSparkEngine, GreedyLosslessDFlashBatched) {
  const SpecRun run = run_speculative(DrafterCase::kRandomDFlash, {.max_running = 4, .max_batch_tokens = 64});
  expect_identical(run);
  EXPECT_LE(run.metrics.max_positions(), 4);  // γ - 1 drafts
}

}  // namespace
}  // namespace dspark
