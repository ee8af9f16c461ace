// Sampled speculative decoding through the whole engine is distributed exactly as the
// target: a tiny random target with a 5-token vocabulary, draft models proposing up to
// K = 3 tokens with their own q, 24k sampled requests of 4 tokens each; the total
// variation between the empirical distribution of the 625 possible continuations and the
// target's exact one (enumerated from the target's own probabilities) must stay below a
// threshold derived from the sampling noise of N exact draws. As a power check, the same
// statistic against the draft's distribution must exceed it.
#include <cmath>
#include <fstream>
#include <numbers>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "spec/draft_model_proposer.h"
#include "support/engine_runner.h"
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
  const auto dir = testing::write_tiny_model(spec, testing::make_temp_dir(name));
  nlohmann::json vocab = nlohmann::json::object();
  for (int i = 0; i < kVocab; ++i) vocab[std::string(1, static_cast<char>('a' + i))] = i;
  const nlohmann::json bl = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  std::ofstream(dir / "tokenizer.json") << nlohmann::json{
      {"version", "1.0"}, {"added_tokens", nlohmann::json::array()}, {"normalizer", nullptr}, {"pre_tokenizer", bl},
      {"post_processor", nullptr}, {"decoder", bl},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}}.dump();
  return dir;
}

// Exact probability of every continuation under `model` with the sampling transform.
std::vector<double> exact_distribution(Transformer& model, const std::vector<int32_t>& prompt, const SamplingParams& sp) {
  std::vector<double> dist(static_cast<size_t>(std::pow(kVocab, kLength)));
  LogitsProcessor processor(kVocab);
  std::vector<float> probs(kVocab);
  for (size_t code = 0; code < dist.size(); ++code) {
    std::vector<int32_t> seq = prompt;
    size_t c = code;
    std::vector<int32_t> cont(kLength);
    for (int i = kLength - 1; i >= 0; --i) {
      cont[i] = static_cast<int32_t>(c % kVocab);
      c /= kVocab;
    }
    seq.insert(seq.end(), cont.begin(), cont.end() - 1);
    testing::EngineRunner runner(model);
    const std::vector<float> logits = runner.run(runner.add_sequence(), seq, 64);
    double p = 1;
    for (int i = 0; i < kLength; ++i) {
      const size_t row = prompt.size() - 1 + i;
      processor.to_probs(logits.data() + row * kVocab, probs.data(), sp, {});
      p *= probs[cont[i]];
    }
    dist[code] = p;
  }
  return dist;
}

double total_variation(const std::vector<double>& empirical, const std::vector<double>& exact) {
  double tv = 0;
  for (size_t i = 0; i < exact.size(); ++i) tv += std::abs(empirical[i] - exact[i]);
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
      << " top_k=" << c.sampling.top_k << " top_p=" << c.sampling.top_p;
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
  const std::vector<double> exact = exact_distribution(*target, prompt, sp);
  auto draft_for_exact = Transformer::load(draft_dir, to);
  const std::vector<double> draft_exact = exact_distribution(*draft_for_exact, prompt, sp);

  DraftModelOptions d{.num_speculative_tokens = 3, .max_running = 16, .block_size = 4};
  Engine engine(*target, tok, EngineOptions{.max_running = 16, .max_batch_tokens = 128},
                std::make_unique<DraftModelProposer>(Transformer::load(draft_dir, to), d));
  std::vector<double> counts(exact.size());
  GenerationOptions g;
  g.max_tokens = kLength;
  g.ignore_eos = true;
  g.sampling = sp;
  for (int i = 0; i < kSamples; ++i) {
    g.sampling.seed = static_cast<uint64_t>(i) + 1000;
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
  for (auto& c : counts) c /= kSamples;
  const double tv = total_variation(counts, exact);
  const double limit = threshold(exact, kSamples);
  EXPECT_LT(tv, limit) << "TV to the target";
  if (GetParam().draft == DraftKind::kUnrelated) {
    EXPECT_GT(total_variation(counts, draft_exact), limit) << "the test cannot tell target from draft";
  } else {
    EXPECT_GT(engine.spec_metrics().mean_acceptance_length(), 2.5);  // mostly accepted (at most 3 here)
    EXPECT_LT(engine.spec_metrics().acceptance_rate(), 1.0);         // but not always
  }
  EXPECT_GT(engine.spec_metrics().num_accepted_tokens, 0);
  RecordProperty("tv", std::to_string(tv));
  RecordProperty("threshold", std::to_string(limit));
  std::printf("TV %.5f threshold %.5f tau %.3f\n", tv, limit, engine.spec_metrics().mean_acceptance_length());
}

StatCase make_case(DraftKind draft, float temperature, int32_t top_k, float top_p) {
  StatCase c{draft, {}};
  c.sampling.temperature = temperature;
  c.sampling.top_k = top_k;
  c.sampling.top_p = top_p;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Transforms, EngineSpeculativeSampling,
    ::testing::Values(make_case(DraftKind::kUnrelated, 1.0f, 0, 1.0f), make_case(DraftKind::kUnrelated, 0.7f, 4, 1.0f),
                      make_case(DraftKind::kNearTarget, 1.0f, 0, 1.0f), make_case(DraftKind::kNearTarget, 1.3f, 0, 0.8f)),
    [](const auto& info) {
      return std::string(info.param.draft == DraftKind::kUnrelated ? "unrelated" : "near") + "_draft_" +
             std::to_string(info.index);
    });

}  // namespace
}  // namespace dspark
