// Sampled speculative decoding with a DSpark / DFlash drafter is distributed exactly as the
// target: a tiny random target with a 5-token vocabulary, a random drafter with a strong
// Markov head (so the corrected q differs much from softmax(U)), 24k sampled requests of
// 4 tokens; the total variation between the empirical distribution of the 625 possible
// continuations and the target's exact one must stay below a threshold derived from the
// sampling noise of N exact draws (as tests/engine/speculative_sampling_test.cpp).
// Power check: the same run with a proposer that drafts from the Markov-corrected q but
// hands the verifier q computed from the base logits U_j (the Markov term left out of q)
// must exceed the threshold — the statistic does see a q that is not the one drafted from.
#include <cmath>
#include <fstream>
#include <numbers>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "spec/drafter_fixtures.h"
#include "spec/dspark_proposer.h"
#include "support/engine_runner.h"
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
    const auto d = testing::write_tiny_model(spec, testing::make_temp_dir("dspark-stat-target"));
    nlohmann::json vocab = nlohmann::json::object();
    for (int i = 0; i < kVocab; ++i) vocab[std::string(1, static_cast<char>('a' + i))] = i;
    const nlohmann::json bl = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
    std::ofstream(d / "tokenizer.json") << nlohmann::json{
        {"version", "1.0"}, {"added_tokens", nlohmann::json::array()}, {"normalizer", nullptr}, {"pre_tokenizer", bl},
        {"post_processor", nullptr}, {"decoder", bl},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}}.dump();
    return d;
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

// Exact probability of every continuation under the target with the sampling transform.
std::vector<double> exact_distribution(Transformer& model, const std::vector<int32_t>& prompt, const SamplingParams& sp) {
  std::vector<double> dist(static_cast<size_t>(std::pow(kVocab, kLength)));
  LogitsProcessor processor(kVocab);
  std::vector<float> probs(kVocab);
  for (size_t code = 0; code < dist.size(); ++code) {
    std::vector<int32_t> cont(kLength);
    size_t c = code;
    for (int i = kLength - 1; i >= 0; --i) {
      cont[i] = static_cast<int32_t>(c % kVocab);
      c /= kVocab;
    }
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), cont.begin(), cont.end() - 1);
    testing::EngineRunner runner(model);
    const std::vector<float> logits = runner.run(runner.add_sequence(), seq, 64);
    double p = 1;
    for (int i = 0; i < kLength; ++i) {
      processor.to_probs(logits.data() + (prompt.size() - 1 + i) * kVocab, probs.data(), sp, {});
      p *= probs[cont[i]];
    }
    dist[code] = p;
  }
  return dist;
}

double total_variation(const std::vector<double>& a, const std::vector<double>& b) {
  double tv = 0;
  for (size_t i = 0; i < a.size(); ++i) tv += std::abs(a[i] - b[i]);
  return tv / 2;
}

// Expected TV of N exact draws plus 6 standard deviations (normal approximation per cell).
double threshold(const std::vector<double>& exact, int n) {
  double mean = 0, var = 0;
  for (double p : exact) {
    const double sigma2 = p * (1 - p) / n;
    mean += std::sqrt(sigma2) * std::sqrt(2 / std::numbers::pi) / 2;
    var += sigma2 * (1 - 2 / std::numbers::pi) / 4;
  }
  return mean + 6 * std::sqrt(var);
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
        processor_.to_probs(base.data() + j * kVocab, q + j * kVocab, *requests[i].sampling, {});
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
};

void PrintTo(const StatCase& c, std::ostream* os) {
  *os << (c.variant == Variant::kDFlash ? "dflash" : c.variant == Variant::kDSpark ? "dspark" : "dspark-base-q")
      << " T=" << c.temperature << " top_k=" << c.top_k;
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
  const std::vector<double> exact = exact_distribution(*plain_target, prompt, sp);

  std::unique_ptr<Proposer> proposer = std::move(drafter);
  if (param.variant == Variant::kDSparkBaseQ) {
    proposer = std::make_unique<BaseLogitsQProposer>(std::unique_ptr<DSparkProposer>(
        static_cast<DSparkProposer*>(proposer.release())));
  }
  Engine engine(*target, tok, EngineOptions{.max_running = 16, .max_batch_tokens = 128}, std::move(proposer));
  std::vector<double> counts(exact.size());
  GenerationOptions g;
  g.max_tokens = kLength;
  g.ignore_eos = true;
  g.sampling = sp;
  for (int i = 0; i < kSamples; ++i) {
    g.sampling.seed = static_cast<uint64_t>(i) + 7000;
    auto tokens = std::make_shared<std::vector<int32_t>>();
    engine.add_request(prompt, g, [tokens, &counts](const RequestOutput& o) {
      tokens->insert(tokens->end(), o.token_ids.begin(), o.token_ids.end());
      if (o.finished) {
        size_t code = 0;
        for (int32_t t : *tokens) code = code * kVocab + t;
        counts[code] += 1;
      }
    });
    if (engine.stats().num_waiting >= 64) engine.step();
  }
  while (engine.step()) {
  }
  for (double& c : counts) c /= kSamples;
  const double tv = total_variation(counts, exact);
  const double limit = threshold(exact, kSamples);
  const SpecDecodeMetrics& m = engine.spec_metrics();
  std::printf("TV %.5f threshold %.5f tau %.3f\n", tv, limit, m.mean_acceptance_length());
  EXPECT_GT(m.num_accepted_tokens, 0);
  EXPECT_LT(m.acceptance_rate(), 1.0);
  if (param.variant == Variant::kDSparkBaseQ) {
    EXPECT_GT(tv, limit) << "the test cannot tell a q that is not the drafting distribution";
  } else {
    EXPECT_LT(tv, limit) << "TV to the target";
  }
}

INSTANTIATE_TEST_SUITE_P(Drafters, DSparkSampling,
                         ::testing::Values(StatCase{Variant::kDSpark, 1.0f, 0}, StatCase{Variant::kDSpark, 0.7f, 3},
                                           StatCase{Variant::kDFlash, 1.0f, 0},
                                           StatCase{Variant::kDSparkBaseQ, 1.0f, 0}),
                         [](const auto& info) {
                           const Variant v = info.param.variant;
                           return std::string(v == Variant::kDFlash ? "dflash" : v == Variant::kDSpark ? "dspark" : "dspark_base_q") +
                                  "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace dspark
