// Seeded sampled requests (SamplingParams::position_keyed) reproduce exactly under any
// speculation: the same tokens with no speculator, with n-gram drafts, with the target as
// its own draft model and with an unrelated draft model, under the fixed and the adaptive
// schedule (whose verified lengths depend on measured timing), alone and batched with
// other requests. And they stay distributed as the target: over many seeds, the first
// tokens' empirical distribution is within the sampling-noise threshold of the exact one
// (total variation, as tests/engine/speculative_sampling_test.cpp), with and without
// speculation.
#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "engine/engine.h"
#include "spec/draft_model_proposer.h"
#include "spec/ngram_proposer.h"
#include "support/continuation_stats.h"
#include "support/engine_requests.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::repetitive_prompt;

const std::filesystem::path& target_dir() {
  static const auto dir = testing::write_tiny_engine_model("seeded-target", 1, 2, 97);
  return dir;
}
const std::filesystem::path& other_dir() {
  static const auto dir = testing::write_tiny_engine_model("seeded-other-draft", 5, 1, 97);
  return dir;
}

std::unique_ptr<Transformer> load(const std::filesystem::path& dir, int64_t max_sequences = 4) {
  return testing::load_tiny_engine_model(dir, max_sequences);
}

GenerationOptions seeded(uint64_t seed, int64_t max_tokens) {
  GenerationOptions g;
  g.max_tokens = max_tokens;
  g.ignore_eos = true;
  g.sampling.temperature = 0.8f;
  g.sampling.top_k = 40;
  g.sampling.top_p = 0.9f;
  g.sampling.seed = seed;
  g.sampling.position_keyed = true;
  return g;
}

enum class Speculator { kNone, kNgram, kSelf, kOther };

EngineOptions engine_options(SpecSchedule schedule) {
  EngineOptions o;
  o.max_running = 4;
  o.max_batch_tokens = 64;
  if (schedule == SpecSchedule::kAdaptive) {
    o.spec_schedule = SpecSchedule::kAdaptive;
    std::vector<double> sps(64);  // each extra token costs 5% of a step
    for (int b = 1; b <= 64; ++b) sps[b - 1] = 1000.0 / (1.0 + 0.05 * (b - 1));
    o.step_cost = std::make_shared<StepCostTable>(std::move(sps));
  }
  return o;
}

std::unique_ptr<Proposer> make_proposer(Speculator s) {
  const DraftModelOptions d{.num_speculative_tokens = 4, .max_running = 4, .block_size = 4};
  switch (s) {
    case Speculator::kNone: return nullptr;
    case Speculator::kNgram: return std::make_unique<NgramProposer>(NgramOptions{1, 4, 6});
    case Speculator::kSelf: return std::make_unique<DraftModelProposer>(load(target_dir()), d);
    case Speculator::kOther: return std::make_unique<DraftModelProposer>(load(other_dir()), d);
  }
  return nullptr;
}

const char* name(Speculator s) {
  switch (s) {
    case Speculator::kNone: return "none";
    case Speculator::kNgram: return "ngram";
    case Speculator::kSelf: return "self-draft";
    case Speculator::kOther: return "other-draft";
  }
  return "?";
}

struct SeededRun {
  std::vector<int32_t> tokens;
  SpecDecodeMetrics metrics;
};

// The seeded request alone, or batched with three others (a greedy one, an unseeded sampled
// one, another seeded one) that change how many drafts each step verifies.
SeededRun run(Transformer& model, Speculator s, SpecSchedule schedule, const std::vector<int32_t>& prompt,
              const GenerationOptions& g, bool batched) {
  const Tokenizer tok = Tokenizer::from_dir(target_dir());
  Engine engine(model, tok, engine_options(schedule), make_proposer(s));
  if (!batched) {
    const GenerationResult r = generate_one(engine, prompt, g);
    return {r.tokens, r.spec_metrics};
  }
  SeededRun out;
  auto collect = [&out](const RequestOutput& o) {
    out.tokens.insert(out.tokens.end(), o.token_ids.begin(), o.token_ids.end());
  };
  GenerationOptions unseeded = seeded(0, 40);
  unseeded.sampling.position_keyed = false;
  unseeded.sampling.seed = 1234;
  testing::RequestDriver driver(engine);
  driver.add(repetitive_prompt(91), testing::greedy(40));
  driver.add(repetitive_prompt(92), unseeded);
  driver.add(prompt, g, collect);
  driver.add(repetitive_prompt(93), seeded(g.sampling.seed + 1, 40));
  while (driver.step()) {
  }
  out.metrics = engine.spec_metrics();
  return out;
}

TEST(SeededSampling, SameTokensWhateverTheSpeculatorScheduleAndBatch) {
  auto model = load(target_dir());
  for (const uint64_t seed : {1, 2, 3}) {
    const auto prompt = repetitive_prompt(seed);
    const GenerationOptions g = seeded(seed * 7 + 1, 32);
    const SeededRun plain = run(*model, Speculator::kNone, SpecSchedule::kFixed, prompt, g, false);
    ASSERT_EQ(plain.tokens.size(), 32u);
    EXPECT_EQ(run(*model, Speculator::kNone, SpecSchedule::kFixed, prompt, g, true).tokens, plain.tokens);
    for (const Speculator s : {Speculator::kNgram, Speculator::kSelf, Speculator::kOther}) {
      for (const SpecSchedule schedule : {SpecSchedule::kFixed, SpecSchedule::kAdaptive}) {
        for (const bool batched : {false, true}) {
          const SeededRun spec = run(*model, s, schedule, prompt, g, batched);
          EXPECT_EQ(spec.tokens, plain.tokens)
              << name(s) << (schedule == SpecSchedule::kFixed ? " fixed" : " adaptive")
              << (batched ? " batched" : " alone") << ", seed " << seed;
          EXPECT_GT(spec.metrics.num_drafts, 0) << name(s) << " drafted nothing";
          if (s == Speculator::kSelf && schedule == SpecSchedule::kFixed && !batched) {
            // The drafter's q equals p bit for bit and draws with the same noise: every
            // draft is the token verification emits.
            ASSERT_GT(spec.metrics.num_drafts, 0);
            EXPECT_EQ(spec.metrics.num_accepted_tokens, spec.metrics.num_draft_tokens);
          }
        }
      }
    }
  }
}

// A different seed gives other tokens; an unseeded request (Rng stream) is unaffected by
// the flag's existence: plain decoding of it still reproduces from its seed.
TEST(SeededSampling, SeedsMatterAndPlainUnkeyedStillReproduces) {
  auto model = load(target_dir());
  const auto prompt = repetitive_prompt(4);
  const auto a = run(*model, Speculator::kNone, SpecSchedule::kFixed, prompt, seeded(10, 24), false);
  const auto b = run(*model, Speculator::kNone, SpecSchedule::kFixed, prompt, seeded(11, 24), false);
  EXPECT_NE(a.tokens, b.tokens);
  GenerationOptions unkeyed = seeded(10, 24);
  unkeyed.sampling.position_keyed = false;
  EXPECT_EQ(run(*model, Speculator::kNone, SpecSchedule::kFixed, prompt, unkeyed, false).tokens,
            run(*model, Speculator::kNone, SpecSchedule::kFixed, prompt, unkeyed, false).tokens);
}

// Over 20k seeds, the first 3 tokens after a prompt (125 continuations of a 5-token
// vocabulary) follow the target's exact distribution: TV below the threshold of
// testing::tv_threshold (expected TV of exact draws + 6 standard deviations), without a
// speculator, with an unrelated draft model (many rejections) and with the target drafting
// for itself; and since every seed's tokens are schedule-independent, the three histograms
// are identical. The power check: the unrelated draft model's own distribution is far off.
TEST(SeededSampling, OutputDistributionEqualsTarget) {
  constexpr int64_t kVocab = 5;
  constexpr int kLength = 3;
  constexpr int kSamples = 20000;
  const auto stat_target = testing::write_tiny_engine_model("seeded-stat-target", 11, 2, kVocab);
  const auto stat_draft = testing::write_tiny_engine_model("seeded-stat-draft", 12, 1, kVocab);
  auto target = load(stat_target, 16);
  const Tokenizer tok = Tokenizer::from_dir(stat_target);
  SamplingParams sp;
  sp.temperature = 0.8f;
  sp.top_k = 4;
  sp.top_p = 0.95f;
  sp.position_keyed = true;
  const std::vector<int32_t> prompt = {1, 3, 4};
  const std::vector<double> exact = testing::exact_continuations(*target, prompt, sp, kVocab, kLength);
  auto draft_model = load(stat_draft, 16);
  const std::vector<double> draft_exact = testing::exact_continuations(*draft_model, prompt, sp, kVocab, kLength);
  const double limit = testing::tv_threshold(exact, kSamples);
  const DraftModelOptions d{.num_speculative_tokens = 3, .max_running = 16, .block_size = 4};
  EngineOptions options;
  options.max_running = 16;
  options.max_batch_tokens = 128;
  std::vector<double> plain_counts;
  for (const int drafter : {0, 1, 2}) {
    std::unique_ptr<Proposer> proposer;
    if (drafter == 1) proposer = std::make_unique<DraftModelProposer>(load(stat_draft, 16), d);
    if (drafter == 2) proposer = std::make_unique<DraftModelProposer>(load(stat_target, 16), d);
    Engine engine(*target, tok, options, std::move(proposer));
    const std::vector<double> counts =
        testing::sampled_continuations(engine, prompt, sp, kVocab, kLength, kSamples, 5000);
    const double tv = testing::total_variation(counts, exact);
    EXPECT_LT(tv, limit) << "drafter " << drafter;
    if (drafter == 0) {
      plain_counts = counts;
    } else {
      // Seed by seed the same continuations, so the same histogram.
      EXPECT_EQ(counts, plain_counts) << "drafter " << drafter;
      EXPECT_GT(engine.spec_metrics().num_accepted_tokens, 0) << "drafter " << drafter;
    }
    if (drafter == 1) {
      EXPECT_GT(testing::total_variation(counts, draft_exact), limit) << "no power";
    }
    std::printf("drafter %d: TV %.5f threshold %.5f tau %.3f\n", drafter, tv, limit,
                engine.spec_metrics().mean_acceptance_length());
  }
}

}  // namespace
}  // namespace dspark
