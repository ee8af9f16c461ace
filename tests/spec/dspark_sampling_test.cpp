// Sampled speculative decoding with a DSpark / DFlash drafter is distributed exactly as the
// target: a tiny random target with a 5-token vocabulary, a random drafter with a strong
// Markov head (so the corrected q differs much from softmax(U)), 24k sampled requests of
// 4 tokens; the total variation between the empirical distribution of the 625 possible
// continuations and the target's exact one must stay below a threshold derived from the
// sampling noise of N exact draws (as tests/engine/speculative_sampling_test.cpp).
// Power check: the same run with a proposer that drafts from the Markov-corrected q but
// hands the verifier q computed from the base logits U_j (the Markov term left out of q)
// must exceed the threshold — the statistic does see a q that is not the one drafted from.
// The adaptive cases let the prefix scheduler cut the drafts by their confidences, which
// the engine corrects by earlier verified rounds (spec/confidence_calibrator.h): neither
// may bias the output.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "spec/drafter_fixtures.h"
#include "spec/dspark_proposer.h"
#include "support/continuation_stats.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kVocab = 5;
constexpr int kLength = 4;
constexpr int kSamples = 24000;

const std::filesystem::path& target_dir() {
  static const auto dir = [] {
    testing::TinyModelSpec spec;
    spec.vocab_size = kVocab;
    spec.num_layers = 2;
    spec.seed = 11;
    return testing::write_tiny_model_with_tokenizer(spec, "dspark-stat-target", 'a');
  }();
  return dir;
}

std::filesystem::path drafter_dir(DrafterKind kind) {
  const ModelConfig target = ModelConfig::from_file(target_dir());
  const DrafterConfig c = testing::make_drafter_config(target, kind, {1, 2}, /*block_size=*/3, 1, /*markov_rank=*/4);
  testing::DrafterWeightsSpec spec;
  spec.seed = kind == DrafterKind::kDSpark ? 21 : 22;
  spec.markov_scale = 1.5f;
  return testing::write_random_drafter(c, testing::make_temp_dir("dspark-stat-drafter"), spec);
}

// Drafts exactly as the DSpark proposer, but reports q = transform(U_j) without the Markov term.
class BaseLogitsQProposer final : public Proposer {
 public:
  explicit BaseLogitsQProposer(std::unique_ptr<DSparkProposer> inner)
      : inner_(std::move(inner)),
        processor_(kVocab),
        probs_(16 * inner_->num_speculative_tokens() * kVocab) {}
  ProposerCapabilities capabilities() const override { return inner_->capabilities(); }
  int32_t num_speculative_tokens() const override { return inner_->num_speculative_tokens(); }
  void release(int32_t slot) override { inner_->release(slot); }
  std::vector<int32_t> target_layers() const override { return inner_->target_layers(); }
  void observe(std::span<const CommittedHiddenStates> c) override { inner_->observe(c); }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    inner_->propose(requests, drafts);
    const int64_t k = inner_->num_speculative_tokens();
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto base = inner_->inspect(i).base_logits;
      float* q = probs_.data() + i * k * kVocab;
      for (size_t j = 0; j < drafts[i].tokens.size(); ++j) {
        processor_.to_probs(base.data() + j * kVocab, q + j * kVocab, *requests[i].sampling, {}, 0);
      }
      if (!drafts[i].tokens.empty()) drafts[i].probs = q;
    }
  }

 private:
  std::unique_ptr<DSparkProposer> inner_;
  LogitsProcessor processor_;
  std::vector<float> probs_;  // [16 requests, K, vocab]
};

enum class Variant { kDSpark, kDFlash, kDSparkBaseQ };

struct StatCase {
  Variant variant;
  float temperature;
  int32_t top_k;
  bool adaptive = false;  // the prefix scheduler, with the engine's confidence calibration
};

void PrintTo(const StatCase& c, std::ostream* os) {
  *os << (c.variant == Variant::kDFlash ? "dflash" : c.variant == Variant::kDSpark ? "dspark" : "dspark-base-q")
      << " T=" << c.temperature << " top_k=" << c.top_k << (c.adaptive ? " adaptive" : "");
}

class DSparkSampling : public ::testing::TestWithParam<StatCase> {};

TEST_P(DSparkSampling, OutputDistributionEqualsTarget) {
  const StatCase param = GetParam();
  static const auto dspark_dir = drafter_dir(DrafterKind::kDSpark);
  static const auto dflash_dir = drafter_dir(DrafterKind::kDFlash);
  const auto& dir = param.variant == Variant::kDFlash ? dflash_dir : dspark_dir;
  DSparkProposerOptions po;
  po.max_running = 16;
  po.max_model_len = 256;
  po.kv_block_size = 4;
  po.keep_base_logits = param.variant == Variant::kDSparkBaseQ;
  auto drafter = DSparkProposer::load(dir, target_dir(), po);
  TransformerOptions to;
  to.max_batch_tokens = 128;
  to.max_sequences = 16;
  auto plain_target = Transformer::load(target_dir(), to);
  to.capture_layers = drafter->target_layers();
  auto target = Transformer::load(target_dir(), to);
  const Tokenizer tok = Tokenizer::from_dir(target_dir());
  SamplingParams sp;
  sp.temperature = param.temperature;
  sp.top_k = param.top_k;
  const std::vector<int32_t> prompt = {1, 3, 4, 0};
  const std::vector<double> exact = testing::exact_continuations(*plain_target, prompt, sp, kVocab, kLength);

  std::unique_ptr<Proposer> proposer = std::move(drafter);
  if (param.variant == Variant::kDSparkBaseQ) {
    proposer = std::make_unique<BaseLogitsQProposer>(std::unique_ptr<DSparkProposer>(
        static_cast<DSparkProposer*>(proposer.release())));
  }
  EngineOptions eo;
  eo.max_running = 16;
  eo.max_batch_tokens = 128;
  if (param.adaptive) {
    // A step's cost grows 5% per token: with 16 requests a draft is worth verifying only
    // above a survival of about 0.45, so the random head's confidences (as corrected)
    // decide the lengths.
    std::vector<double> sps;
    for (int64_t b = 1; b <= 128; ++b) sps.push_back(1.0 / (1.0 + 0.05 * static_cast<double>(b)));
    eo.spec_schedule = SpecSchedule::kAdaptive;
    eo.step_cost = std::make_shared<const StepCostTable>(sps);
  }
  Engine engine(*target, tok, eo, std::move(proposer));
  const std::vector<double> counts = testing::sampled_continuations(engine, prompt, sp, kVocab, kLength, kSamples, 7000);
  const double tv = testing::total_variation(counts, exact);
  const double limit = testing::tv_threshold(exact, kSamples);
  const SpecDecodeMetrics& m = engine.spec_metrics();
  std::printf("TV %.5f threshold %.5f tau %.3f\n", tv, limit, m.mean_acceptance_length());
  EXPECT_GT(m.num_accepted_tokens, 0);
  EXPECT_LT(m.acceptance_rate(), 1.0);
  if (param.adaptive) {
    // The lengths must vary, or the confidences decided nothing.
    int lengths_used = 0;
    for (const int64_t count : engine.schedule_metrics().verified_length_counts) lengths_used += count > 0 ? 1 : 0;
    EXPECT_GE(lengths_used, 2);
  }
  if (param.variant == Variant::kDSparkBaseQ) {
    EXPECT_GT(tv, limit) << "the test cannot tell a q that is not the drafting distribution";
  } else {
    EXPECT_LT(tv, limit) << "TV to the target";
  }
}

INSTANTIATE_TEST_SUITE_P(Drafters, DSparkSampling,
                         ::testing::Values(StatCase{Variant::kDSpark, 1.0f, 0}, StatCase{Variant::kDSpark, 0.7f, 3},
                                           StatCase{Variant::kDSpark, 1.0f, 0, /*adaptive=*/true},
                                           StatCase{Variant::kDFlash, 1.0f, 0},
                                           StatCase{Variant::kDSparkBaseQ, 1.0f, 0}),
                         [](const auto& info) {
                           const Variant v = info.param.variant;
                           return std::string(v == Variant::kDFlash ? "dflash" : v == Variant::kDSpark ? "dspark" : "dspark_base_q") +
                                  "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace dspark
