// Sampled speculative decoding through the whole engine is distributed exactly as the
// target: a tiny random target with a 5-token vocabulary, draft models proposing up to
// K = 3 tokens with their own q, 24k sampled requests of 4 tokens each; the total
// variation between the empirical distribution of the 625 possible continuations and the
// target's exact one (enumerated from the target's own probabilities) must stay below a
// threshold derived from the sampling noise of N exact draws. As a power check, the same
// statistic against the draft's distribution must exceed it.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "spec/draft_model_proposer.h"
#include "support/continuation_stats.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kVocab = 5;
constexpr int kLength = 4;     // the first token comes from the prefill; then rounds of up to 2 drafts
constexpr int kSamples = 24000;

std::filesystem::path write_model(uint64_t seed, int64_t layers, DType file_dtype, const std::string& name) {
  testing::TinyModelSpec spec;
  spec.vocab_size = kVocab;
  spec.num_layers = layers;
  spec.seed = seed;
  spec.file_dtype = file_dtype;
  return testing::write_tiny_model_with_tokenizer(spec, name, 'a');
}

// Two drafters: an unrelated random model (most drafts rejected: exercises the residual
// resampling), and the target's own weights rounded to bf16 (q close to but not equal to
// p: long accepted runs with occasional rejections).
enum class DraftKind { kUnrelated, kNearTarget };

struct StatCase {
  DraftKind draft;
  SamplingParams sampling;
};

void PrintTo(const StatCase& c, std::ostream* os) {
  *os << (c.draft == DraftKind::kUnrelated ? "unrelated" : "near-target") << " draft, T=" << c.sampling.temperature
      << " top_k=" << c.sampling.top_k << " top_p=" << c.sampling.top_p << " biased tokens "
      << c.sampling.logit_bias.size();
}

class EngineSpeculativeSampling : public ::testing::TestWithParam<StatCase> {};

TEST_P(EngineSpeculativeSampling, OutputDistributionEqualsTarget) {
  static const auto target_dir = write_model(11, 2, DType::kF32, "stat-target");
  static const auto unrelated_dir = write_model(12, 1, DType::kF32, "stat-draft");
  static const auto near_dir = write_model(11, 2, DType::kBF16, "stat-near");
  const auto& draft_dir = GetParam().draft == DraftKind::kUnrelated ? unrelated_dir : near_dir;
  TransformerOptions to;
  to.max_batch_tokens = 128;
  to.max_sequences = 16;
  auto target = Transformer::load(target_dir, to);
  const Tokenizer tok = Tokenizer::from_dir(target_dir);
  const SamplingParams sp = GetParam().sampling;
  const std::vector<int32_t> prompt = {1, 3, 4};
  const std::vector<double> exact = testing::exact_continuations(*target, prompt, sp, kVocab, kLength);
  auto draft_for_exact = Transformer::load(draft_dir, to);
  const std::vector<double> draft_exact = testing::exact_continuations(*draft_for_exact, prompt, sp, kVocab, kLength);

  DraftModelOptions d{.num_speculative_tokens = 3, .max_running = 16, .block_size = 4};
  Engine engine(*target, tok, EngineOptions{.max_running = 16, .max_batch_tokens = 128},
                std::make_unique<DraftModelProposer>(Transformer::load(draft_dir, to), d));
  const std::vector<double> counts = testing::sampled_continuations(engine, prompt, sp, kVocab, kLength, kSamples, 1000);
  const double tv = testing::total_variation(counts, exact);
  const double limit = testing::tv_threshold(exact, kSamples);
  EXPECT_LT(tv, limit) << "TV to the target";
  if (GetParam().draft == DraftKind::kUnrelated) {
    EXPECT_GT(testing::total_variation(counts, draft_exact), limit) << "the test cannot tell target from draft";
  } else {
    EXPECT_GT(engine.spec_metrics().mean_acceptance_length(), 2.5);  // mostly accepted (at most 3 here)
    EXPECT_LT(engine.spec_metrics().acceptance_rate(), 1.0);         // but not always
  }
  EXPECT_GT(engine.spec_metrics().num_accepted_tokens, 0);
  RecordProperty("tv", std::to_string(tv));
  RecordProperty("threshold", std::to_string(limit));
  std::printf("TV %.5f threshold %.5f tau %.3f\n", tv, limit, engine.spec_metrics().mean_acceptance_length());
}

StatCase make_case(DraftKind draft, float temperature, int32_t top_k, float top_p,
                   std::vector<std::pair<int32_t, float>> logit_bias = {}) {
  StatCase c{draft, {}};
  c.sampling.temperature = temperature;
  c.sampling.top_k = top_k;
  c.sampling.top_p = top_p;
  c.sampling.logit_bias = std::move(logit_bias);
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Transforms, EngineSpeculativeSampling,
    ::testing::Values(make_case(DraftKind::kUnrelated, 1.0f, 0, 1.0f), make_case(DraftKind::kUnrelated, 0.7f, 4, 1.0f),
                      make_case(DraftKind::kNearTarget, 1.0f, 0, 1.0f), make_case(DraftKind::kNearTarget, 1.3f, 0, 0.8f),
                      make_case(DraftKind::kUnrelated, 1.0f, 0, 1.0f, {{1, 1.5f}, {3, -2.0f}, {4, 0.75f}})),
    [](const auto& info) {
      return std::string(info.param.draft == DraftKind::kUnrelated ? "unrelated" : "near") + "_draft_" +
             std::to_string(info.index);
    });

}  // namespace
}  // namespace dspark
