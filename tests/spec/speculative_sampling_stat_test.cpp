// Statistical losslessness of speculative sampling: a speculative generation loop built on
// RejectionSampler must produce continuations distributed exactly as the target model.
//
// Setup: a synthetic target over kVocab = 5 tokens whose next-token distribution depends on
// the last two tokens (a fixed random table), and a synthetic drafter with a different
// table. Each round drafts up to kDraftLen = 3 tokens autoregressively from the drafter,
// verifies them against the target rows at the drafted positions, and continues from the
// accepted prefix plus the round's next token, until kNewTokens = 3 tokens exist
// (truncated to exactly 3). The empirical distribution of the 125 continuations over
// kSamples runs is compared with the exact one (enumeration) by total variation.
//
// Threshold: for N samples from the true distribution, |f_i - p_i| is about normal with
// sigma_i = sqrt(p_i (1 - p_i) / N), so E[TV] = 1/2 sum sigma_i sqrt(2/pi) and
// SD[TV] ~= 1/2 sqrt(sum sigma_i^2 (1 - 2/pi)) (cells treated as independent). The test
// asserts TV < E[TV] + 6 SD[TV]. An exact ancestral sampler is checked against the same
// threshold (it must pass), and deliberately broken verifiers (resampling from p instead of
// the residual; accepting every draft) must exceed it, so the test demonstrably can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <vector>

#include "core/rng.h"
#include "kernels/sampling.h"
#include "spec/rejection_sampler.h"

namespace dspark {
namespace {

constexpr int32_t kVocab = 5;
constexpr int32_t kDraftLen = 3;
constexpr int32_t kNewTokens = 3;
constexpr int32_t kNumOutcomes = kVocab * kVocab * kVocab;
constexpr int64_t kSamples = 200000;
constexpr std::array<int32_t, 2> kPrompt = {3, 1};

// Next-token distribution as a function of the last two tokens (a, b).
class ContextModel {
 public:
  // Logits are scale * N(0, 1) from seed, turned into probabilities by the request's
  // transform (the same one for target and drafter, as verification requires).
  ContextModel(uint64_t seed, float scale, const SamplingParams& params) : probs_(kVocab * kVocab * kVocab) {
    Rng rng(seed);
    LogitsProcessor processor(kVocab);
    std::array<float, kVocab> logits{};  // [vocab]
    for (int32_t context = 0; context < kVocab * kVocab; ++context) {
      for (auto& l : logits) {
        const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
        l = scale * static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
      }
      processor.to_probs(logits.data(), &probs_[context * kVocab], params, {}, 0);
    }
  }
  const float* row(int32_t a, int32_t b) const { return &probs_[(a * kVocab + b) * kVocab]; }

 private:
  std::vector<float> probs_;  // [vocab * vocab contexts, vocab]
};

int32_t outcome(const int32_t* tokens) { return (tokens[0] * kVocab + tokens[1]) * kVocab + tokens[2]; }

std::vector<double> exact_distribution(const ContextModel& target) {
  std::vector<double> exact(kNumOutcomes);
  for (int32_t t1 = 0; t1 < kVocab; ++t1)
    for (int32_t t2 = 0; t2 < kVocab; ++t2)
      for (int32_t t3 = 0; t3 < kVocab; ++t3) {
        const int32_t tokens[3] = {t1, t2, t3};
        exact[outcome(tokens)] = static_cast<double>(target.row(kPrompt[0], kPrompt[1])[t1]) *
                                 target.row(kPrompt[1], t1)[t2] * target.row(t1, t2)[t3];
      }
  return exact;
}

struct Threshold {
  double expected_tv;
  double sd_tv;
  double value() const { return expected_tv + 6.0 * sd_tv; }
};

Threshold tv_threshold(const std::vector<double>& exact, int64_t n) {
  double mean = 0.0, var = 0.0;
  for (const double p : exact) {
    const double sigma2 = p * (1.0 - p) / static_cast<double>(n);
    mean += 0.5 * std::sqrt(sigma2) * std::sqrt(2.0 / std::numbers::pi);
    var += 0.25 * sigma2 * (1.0 - 2.0 / std::numbers::pi);
  }
  return {mean, std::sqrt(var)};
}

double total_variation(const std::vector<int64_t>& counts, const std::vector<double>& exact) {
  int64_t n = 0;
  for (const int64_t c : counts) n += c;
  double tv = 0.0;
  for (size_t i = 0; i < counts.size(); ++i)
    tv += std::abs(static_cast<double>(counts[i]) / static_cast<double>(n) - exact[i]);
  return 0.5 * tv;
}

int64_t count_outside_support(const std::vector<int64_t>& counts, const std::vector<double>& exact) {
  int64_t outside = 0;
  for (size_t i = 0; i < counts.size(); ++i)
    if (exact[i] == 0.0) outside += counts[i];
  return outside;
}

using Verifier = std::function<VerifyResult(const VerifyInput&, Rng&)>;

enum class DraftMode { kSampled, kOneHot };

struct LoopConfig {
  const ContextModel* target;
  const ContextModel* drafter;
  DraftMode mode = DraftMode::kSampled;
  bool random_length = false;  // draft length per round uniform in 0..kDraftLen
};

// The speculative generation loop; returns counts over the 125 continuations.
std::vector<int64_t> run_speculative(const LoopConfig& config, const Verifier& verify, uint64_t seed) {
  Rng rng(seed);
  std::vector<int64_t> counts(kNumOutcomes, 0);
  std::array<float, kDraftLen * kVocab> draft_probs{};         // [kDraftLen, vocab]
  std::array<float, (kDraftLen + 1) * kVocab> target_probs{};  // [kDraftLen + 1, vocab]
  std::array<int32_t, kDraftLen> drafts{};                     // [kDraftLen]
  for (int64_t s = 0; s < kSamples; ++s) {
    std::array<int32_t, 2 + kNewTokens + kDraftLen + 1> seq{};  // prompt, output, overshoot
    seq[0] = kPrompt[0];
    seq[1] = kPrompt[1];
    int32_t len = 2;
    while (len < 2 + kNewTokens) {
      // The length is chosen before drafting and never depends on the drafted tokens.
      const int32_t num_drafts =
          config.random_length ? static_cast<int32_t>(rng.next_u64() % (kDraftLen + 1)) : kDraftLen;
      int32_t a = seq[len - 2], b = seq[len - 1];
      for (int32_t j = 0; j < num_drafts; ++j) {
        const float* q = config.drafter->row(a, b);  // [vocab]
        std::copy(q, q + kVocab, &draft_probs[j * kVocab]);
        const int32_t x = config.mode == DraftMode::kOneHot ? argmax(q, kVocab)
                                                            : sample_from_probs(q, kVocab, rng.uniform());
        drafts[j] = x;
        a = b;
        b = x;
      }
      a = seq[len - 2];
      b = seq[len - 1];
      for (int32_t j = 0; j <= num_drafts; ++j) {
        const float* p = config.target->row(a, b);  // [vocab]
        std::copy(p, p + kVocab, &target_probs[j * kVocab]);
        if (j < num_drafts) {
          a = b;
          b = drafts[j];
        }
      }
      const VerifyInput input{std::span<const int32_t>(drafts.data(), num_drafts),
                              config.mode == DraftMode::kOneHot ? nullptr : draft_probs.data(),
                              target_probs.data(), kVocab, false};
      const VerifyResult result = verify(input, rng);
      for (int32_t j = 0; j < result.num_accepted; ++j) seq[len++] = drafts[j];
      seq[len++] = result.next_token;
    }
    counts[outcome(&seq[2])] += 1;
  }
  return counts;
}

std::vector<int64_t> run_exact(const ContextModel& target, uint64_t seed) {
  Rng rng(seed);
  std::vector<int64_t> counts(kNumOutcomes, 0);
  for (int64_t s = 0; s < kSamples; ++s) {
    int32_t seq[2 + kNewTokens] = {kPrompt[0], kPrompt[1]};
    for (int32_t i = 2; i < 2 + kNewTokens; ++i)
      seq[i] = sample_from_probs(target.row(seq[i - 2], seq[i - 1]), kVocab, rng.uniform());
    counts[outcome(&seq[2])] += 1;
  }
  return counts;
}

// Broken on purpose: min(1, p/q) acceptance, but a rejection resamples from p instead of
// the residual max(0, p - q).
VerifyResult resample_from_target(const VerifyInput& in, Rng& rng) {
  const auto n = static_cast<int32_t>(in.draft_tokens.size());
  for (int32_t j = 0; j < n; ++j) {
    const int32_t x = in.draft_tokens[j];
    const double qx = in.draft_probs ? in.draft_probs[j * in.vocab_size + x] : 1.0;
    if (!(rng.uniform() * qx < in.target_probs[j * in.vocab_size + x]))
      return {j, sample_from_probs(in.target_probs + j * in.vocab_size, in.vocab_size, rng.uniform()), false};
  }
  return {n, sample_from_probs(in.target_probs + n * in.vocab_size, in.vocab_size, rng.uniform()), true};
}

// Broken on purpose: every draft is accepted.
VerifyResult accept_everything(const VerifyInput& in, Rng& rng) {
  const auto n = static_cast<int32_t>(in.draft_tokens.size());
  return {n, sample_from_probs(in.target_probs + n * in.vocab_size, in.vocab_size, rng.uniform()), true};
}

class SpeculativeSamplingStat : public ::testing::Test {
 protected:
  // Runs a correct loop and the broken controls on one (target, drafter) pair.
  void check(const char* name, const SamplingParams& params, DraftMode mode, bool random_length,
             uint64_t seed) {
    const ContextModel target(101, 1.5f, params);
    const ContextModel drafter(202, 1.5f, params);
    const std::vector<double> exact = exact_distribution(target);
    const Threshold threshold = tv_threshold(exact, kSamples);
    const LoopConfig config{&target, &drafter, mode, random_length};

    RejectionSampler sampler(kVocab);
    const Verifier correct = [&](const VerifyInput& in, Rng& rng) { return sampler.verify(in, rng); };
    const std::vector<int64_t> counts = run_speculative(config, correct, seed);
    const double tv = total_variation(counts, exact);
    const double tv_exact = total_variation(run_exact(target, seed + 1), exact);
    const double tv_resample = total_variation(run_speculative(config, resample_from_target, seed + 2), exact);
    const double tv_accept = total_variation(run_speculative(config, accept_everything, seed + 3), exact);
    std::printf("%-28s TV %.5f | exact sampling %.5f | threshold %.5f (E %.5f, SD %.5f) | "
                "broken: resample-from-p %.5f, accept-all %.5f\n",
                name, tv, tv_exact, threshold.value(), threshold.expected_tv, threshold.sd_tv,
                tv_resample, tv_accept);
    EXPECT_LT(tv, threshold.value()) << name;
    EXPECT_EQ(count_outside_support(counts, exact), 0) << name;
    EXPECT_LT(tv_exact, threshold.value()) << name << ": the threshold is too tight for exact sampling";
    EXPECT_GT(tv_resample, threshold.value()) << name << ": the resample-from-p control went undetected";
    EXPECT_GT(tv_accept, threshold.value()) << name << ": the accept-all control went undetected";
  }
};

TEST_F(SpeculativeSamplingStat, SampledDrafts) {
  check("sampled drafts", SamplingParams{}, DraftMode::kSampled, false, 1000);
}

TEST_F(SpeculativeSamplingStat, SampledDraftsOfVaryingLength) {
  check("sampled drafts, L in 0..3", SamplingParams{}, DraftMode::kSampled, true, 2000);
}

TEST_F(SpeculativeSamplingStat, OneHotDrafts) {
  check("one-hot drafts", SamplingParams{}, DraftMode::kOneHot, false, 3000);
}

TEST_F(SpeculativeSamplingStat, TopKTemperatureTransform) {
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_k = 3;
  check("top-k 3, T 0.8", params, DraftMode::kSampled, false, 4000);
}

TEST_F(SpeculativeSamplingStat, TopKTopPTransform) {
  SamplingParams params;
  params.top_k = 4;
  params.top_p = 0.8f;
  check("top-k 4, top-p 0.8", params, DraftMode::kSampled, false, 5000);
}

// Greedy: the speculative loop must reproduce the plain greedy continuation exactly,
// whatever the drafts are.
TEST(SpeculativeGreedy, MatchesPlainGreedyDecoding) {
  SamplingParams params;
  params.temperature = 0.0f;
  const ContextModel target(101, 1.5f, params);
  const ContextModel drafter(202, 1.5f, SamplingParams{});
  RejectionSampler sampler(kVocab);
  Rng rng(7);
  constexpr int32_t kLength = 12;
  int64_t total_accepted = 0, total_rejected = 0;
  for (int32_t a0 = 0; a0 < kVocab; ++a0) {
    for (int32_t b0 = 0; b0 < kVocab; ++b0) {
      std::vector<int32_t> plain = {a0, b0};
      while (plain.size() < 2 + kLength)
        plain.push_back(argmax(target.row(plain[plain.size() - 2], plain.back()), kVocab));
      for (int32_t num_drafts = 0; num_drafts <= 4; ++num_drafts) {
        std::vector<int32_t> seq = {a0, b0};
        while (seq.size() < 2 + kLength) {
          std::vector<int32_t> drafts;
          std::vector<float> p;  // [num_drafts + 1, vocab]
          int32_t a = seq[seq.size() - 2], b = seq.back();
          for (int32_t j = 0; j <= num_drafts; ++j) {
            const float* row = target.row(a, b);
            p.insert(p.end(), row, row + kVocab);
            if (j == num_drafts) break;
            const int32_t x = sample_from_probs(drafter.row(a, b), kVocab, rng.uniform());
            drafts.push_back(x);
            a = b;
            b = x;
          }
          const VerifyResult r = sampler.verify({drafts, nullptr, p.data(), kVocab, true}, rng);
          total_accepted += r.num_accepted;
          total_rejected += r.is_bonus ? 0 : 1;
          seq.insert(seq.end(), drafts.begin(), drafts.begin() + r.num_accepted);
          seq.push_back(r.next_token);
        }
        seq.resize(2 + kLength);
        ASSERT_EQ(seq, plain) << "prompt " << a0 << " " << b0 << ", " << num_drafts << " drafts";
      }
    }
  }
  // Both branches of the verifier were exercised.
  EXPECT_GT(total_accepted, 100);
  EXPECT_GT(total_rejected, 100);
}

}  // namespace
}  // namespace dspark
