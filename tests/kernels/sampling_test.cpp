#include "kernels/sampling.h"

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/isa.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

using testing::random_floats;

std::vector<float> probs_of(const std::vector<float>& logits, const SamplingParams& params,
                            const std::vector<int32_t>& history = {}) {
  LogitsProcessor processor(static_cast<int64_t>(logits.size()));
  std::vector<float> probs(logits.size(), -1.0f);
  processor.to_probs(logits.data(), probs.data(), params, history, 0);
  return probs;
}

std::vector<float> log_of(const std::vector<float>& p) {
  std::vector<float> l;
  for (float v : p) l.push_back(std::log(v));
  return l;
}

int count_nonzero(const std::vector<float>& p) {
  int n = 0;
  for (float v : p) n += v != 0.0f;
  return n;
}

TEST(Sampling, GreedyIsOneHotAtLowestArgmax) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.top_k = 3;  // ignored when greedy
  const auto p = probs_of({0.5f, 2.0f, -1.0f, 2.0f, 1.0f}, params);
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0, 0}));
}

TEST(Sampling, TopKKeepsExactlyKEvenWithTies) {
  SamplingParams params;
  params.top_k = 3;
  // Four tokens tie for the largest logit: the three lowest ids are kept.
  const auto p = probs_of({1.0f, 3.0f, 3.0f, 0.0f, 3.0f, 3.0f}, params);
  EXPECT_EQ(count_nonzero(p), 3);
  EXPECT_FLOAT_EQ(p[1], 1.0f / 3);
  EXPECT_FLOAT_EQ(p[2], 1.0f / 3);
  EXPECT_FLOAT_EQ(p[4], 1.0f / 3);
  auto big = random_floats(5000, 3, -5.0f, 5.0f);
  params.top_k = 17;
  EXPECT_EQ(count_nonzero(probs_of(big, params)), 17);
}

TEST(Sampling, TopPKeepsSmallestPrefixReachingMass) {
  const std::vector<float> logits = log_of({0.15f, 0.5f, 0.05f, 0.3f});  // sorted: 1, 3, 0, 2
  SamplingParams params;
  params.top_p = 0.75f;  // 0.5 < 0.75 <= 0.5 + 0.3
  auto p = probs_of(logits, params);
  EXPECT_NEAR(p[1], 0.5f / 0.8f, 1e-6);
  EXPECT_NEAR(p[3], 0.3f / 0.8f, 1e-6);
  EXPECT_EQ(p[0], 0.0f);
  EXPECT_EQ(p[2], 0.0f);
  params.top_p = 0.9f;  // needs three tokens
  EXPECT_EQ(count_nonzero(probs_of(logits, params)), 3);
  params.top_p = 0.01f;  // always at least one
  p = probs_of(logits, params);
  EXPECT_EQ(count_nonzero(p), 1);
  EXPECT_EQ(p[1], 1.0f);
}

TEST(Sampling, TopPOnLargeVocabularyBeyondFirstChunk) {
  // Nearly flat logits: the kept prefix is far longer than the first partial sort.
  const auto logits = random_floats(4000, 5, 0.0f, 0.01f);
  SamplingParams params;
  params.top_p = 0.5f;
  const auto p = probs_of(logits, params);
  std::vector<float> ref(logits.size());
  reference::to_probs(logits.data(), ref.data(), static_cast<int64_t>(logits.size()), params, {}, 0);
  EXPECT_GT(count_nonzero(p), 1000);
  EXPECT_EQ(count_nonzero(p), count_nonzero(ref));
}

TEST(Sampling, MinPDropsTokensBelowFractionOfMax) {
  const std::vector<float> logits = log_of({0.5f, 0.3f, 0.15f, 0.05f});
  SamplingParams params;
  params.min_p = 0.2f;  // threshold 0.1: drops only 0.05
  const auto p = probs_of(logits, params);
  EXPECT_EQ(p[3], 0.0f);
  EXPECT_NEAR(p[0], 0.5f / 0.95f, 1e-6);
  EXPECT_NEAR(p[2], 0.15f / 0.95f, 1e-6);
}

TEST(Sampling, RepetitionPenaltyDividesPositiveMultipliesNegativeOnce) {
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  // Token 1 appears twice in history: penalised once (-2 -> -4, not -8).
  const auto p = probs_of({2.0f, -2.0f, 1.0f, 0.5f}, params, {0, 1, 1});
  const std::vector<double> adjusted = {1.0, -4.0, 1.0, 0.5};
  double z = 0;
  for (double a : adjusted) z += std::exp(a);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], std::exp(adjusted[i]) / z, 1e-6) << i;
  // Greedy sees the penalised logits: 0 and 2 tie at 1.0, lowest id wins.
  params.temperature = 0.0f;
  EXPECT_EQ(probs_of({2.0f, -2.0f, 1.0f, 0.5f}, params, {0, 1}), (std::vector<float>{1, 0, 0, 0}));
  params.temperature = 1.0f;
  EXPECT_THROW(probs_of({1.0f, 2.0f}, params, {2}), Error);  // history token out of range
}

// Tolerance: 1e-6 absolute per probability, and the same kept set.
void expect_probs_match_reference() {
  std::vector<SamplingParams> configs(6);
  configs[1].temperature = 0.7f;
  configs[2].top_k = 50;
  configs[3].top_p = 0.9f;
  configs[3].temperature = 0.8f;
  configs[4].min_p = 0.05f;
  configs[4].repetition_penalty = 1.3f;
  configs[5] = {1.2f, 200, 0.95f, 0.01f, 1.1f, 0};
  for (int64_t vocab : {7, 1000, 50257}) {
    const auto logits = random_floats(static_cast<size_t>(vocab), 40 + vocab, -8.0f, 8.0f);
    std::vector<int32_t> history;
    for (int32_t i = 0; i < 20; ++i) history.push_back(static_cast<int32_t>((i * 7919) % vocab));
    LogitsProcessor processor(vocab);
    for (const auto& params : configs) {
      std::vector<float> p(static_cast<size_t>(vocab)), ref(p.size());
      processor.to_probs(logits.data(), p.data(), params, history, 0);
      reference::to_probs(logits.data(), ref.data(), vocab, params, history, 0);
      double total = 0;
      for (int64_t i = 0; i < vocab; ++i) {
        ASSERT_NEAR(p[i], ref[i], 1e-6) << "vocab " << vocab << " token " << i;
        ASSERT_EQ(p[i] == 0.0f, ref[i] == 0.0f) << "vocab " << vocab << " token " << i;
        total += p[i];
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
  }
}

// A masked token (-inf, or a logit far below the others) has probability exactly 0 on every
// path; one 90 below the top keeps the same (0 or tiny) value as the reference's std::exp
// within 1e-30.
TEST(Sampling, MaskedAndFarTokensGetZero) {
  testing::EachIsa each;
  for (Isa isa : each.caps) {
    set_active_isa(isa);
    SamplingParams params;
    params.temperature = 1.0f;
    const std::vector<float> logits = {-INFINITY, 0.0f, 1.0f, -INFINITY, -200.0f, -89.0f, 2.0f, -INFINITY, 0.5f};
    const auto p = probs_of(logits, params);
    for (size_t i : {0, 3, 4, 7}) EXPECT_EQ(p[i], 0.0f) << isa_name(isa) << " token " << i;
    EXPECT_NEAR(p[5], 0.0f, 1e-30) << isa_name(isa);
    EXPECT_GT(p[6], p[2]);
  }
}

TEST(Sampling, MatchesReferenceOnRandomLogits) {
  testing::EachIsa each;
  for (Isa isa : each.caps) {
    SCOPED_TRACE(isa_name(isa));
    set_active_isa(isa);
    expect_probs_match_reference();
  }
}

// 100k draws: each frequency within 0.01 of its probability (> 6 standard deviations).
TEST(Sampling, SampleFromProbsFrequencies) {
  const std::vector<float> probs = {0.1f, 0.0f, 0.2f, 0.3f, 0.4f};
  std::vector<int> counts(probs.size(), 0);
  Rng rng(123);
  const int draws = 100000;
  for (int i = 0; i < draws; ++i) ++counts[sample_from_probs(probs.data(), 5, rng.uniform())];
  for (size_t i = 0; i < probs.size(); ++i)
    EXPECT_NEAR(counts[i] / static_cast<double>(draws), probs[i], 0.01) << i;
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(sample_from_probs(probs.data(), 5, 0.0), 0);
  EXPECT_EQ(sample_from_probs(probs.data(), 5, std::nextafter(1.0, 0.0)), 4);
  // Unnormalised input: drawn against its own total.
  const std::vector<float> scaled = {0.0f, 2.0f, 2.0f, 0.0f};
  EXPECT_EQ(sample_from_probs(scaled.data(), 4, 0.49), 1);
  EXPECT_EQ(sample_from_probs(scaled.data(), 4, 0.51), 2);
}

// The pruned scan (AVX-512, and the portable one under an AVX2 cap) picks exactly the
// reference's token: dense and sparse rows, ties, one-hot rows, lengths off the 8-lane grid.
TEST(Sampling, GumbelMaxMatchesReference) {
  std::vector<std::vector<float>> rows;
  for (const int64_t n : {1, 5, 8, 13, 100, 8192}) {
    for (const float temperature : {0.3f, 1.0f, 3.0f}) {
      SamplingParams sp;
      sp.temperature = temperature;
      rows.push_back(probs_of(random_floats(static_cast<size_t>(n), 40 + n, -6.0f, 6.0f), sp));
      sp.top_k = 7;
      rows.push_back(probs_of(random_floats(static_cast<size_t>(n), 41 + n, -6.0f, 6.0f), sp));
    }
  }
  rows.push_back({0.25f, 0.25f, 0.25f, 0.25f});         // all tied
  rows.push_back({0.0f, 0.0f, 1.0f, 0.0f, 0.0f});       // one-hot
  rows.push_back(std::vector<float>(1000, 1e-3f));      // many tied, unnormalised mass 1
  std::vector<float> tiny(300, 0.0f);
  tiny[0] = 1e-30f;  // a tiny kept token next to a dominant one
  tiny[299] = 1.0f;
  rows.push_back(tiny);
  const Isa saved = active_isa();
  for (const Isa isa : {best_isa(), Isa::kAvx2}) {
    set_active_isa(isa);
    int64_t checked = 0;
    for (const auto& row : rows) {
      const auto n = static_cast<int64_t>(row.size());
      for (uint64_t seed = 0; seed < 12; ++seed) {
        for (const int64_t position : {0, 1, 77, 4096}) {
          ASSERT_EQ(sample_gumbel_max(row.data(), n, seed, position),
                    reference::sample_gumbel_max(row.data(), n, seed, position))
              << isa_name(isa) << " n=" << n << " seed=" << seed << " position=" << position;
          ++checked;
        }
      }
    }
    EXPECT_GT(checked, 1000);
  }
  set_active_isa(saved);
  const std::vector<float> none(9, 0.0f);
  EXPECT_THROW(sample_gumbel_max(none.data(), 9, 1, 0), Error);
  EXPECT_THROW(reference::sample_gumbel_max(none.data(), 9, 1, 0), Error);
}

// Pearson's chi-square of counts against probabilities p (cells with p = 0 must be empty).
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double chi2 = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "cell " << i << " has probability 0";
      continue;
    }
    const double expected = p[i] * static_cast<double>(n);
    chi2 += (static_cast<double>(counts[i]) - expected) * (static_cast<double>(counts[i]) - expected) / expected;
  }
  return chi2;
}

// Frequencies of Gumbel-max draws follow p: over seeds at one position, and over positions
// with one seed. 100k draws, 5 kept tokens (4 degrees of freedom): a correct sampler
// exceeds chi-square 25 with probability 5e-5. The pairs drawn at two adjacent positions
// with one seed (4 x 4 cells, 15 degrees of freedom) must follow the product of the
// marginals, i.e. positions draw independently: limit 45 (exceeded with p ~ 8e-5).
TEST(Sampling, GumbelMaxFrequenciesMatchProbabilities) {
  const std::vector<float> probs = {0.1f, 0.0f, 0.2f, 0.3f, 0.05f, 0.35f};
  const std::vector<double> p(probs.begin(), probs.end());
  constexpr int64_t kDraws = 100000;
  std::vector<int64_t> by_seed(probs.size(), 0), by_position(probs.size(), 0);
  for (int64_t k = 0; k < kDraws; ++k) {
    ++by_seed[sample_gumbel_max(probs.data(), 6, static_cast<uint64_t>(k), 17)];
    ++by_position[sample_gumbel_max(probs.data(), 6, 99, k)];
  }
  EXPECT_LT(chi_square(by_seed, p, kDraws), 25.0);
  EXPECT_LT(chi_square(by_position, p, kDraws), 25.0);

  const std::vector<float> four = {0.4f, 0.3f, 0.2f, 0.1f};
  std::vector<int64_t> pairs(16, 0);
  std::vector<double> product(16);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) product[a * 4 + b] = static_cast<double>(four[a]) * four[b];
  for (int64_t k = 0; k < kDraws; ++k) {
    const auto seed = static_cast<uint64_t>(k);
    ++pairs[sample_gumbel_max(four.data(), 4, seed, 5) * 4 + sample_gumbel_max(four.data(), 4, seed, 6)];
  }
  EXPECT_LT(chi_square(pairs, product, kDraws), 45.0);
  // u is strictly inside (0, 1), so every Gumbel value is finite.
  for (int32_t token = 0; token < 1000; ++token) {
    const double u = keyed_uniform(3, 8, token);
    EXPECT_GT(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(Sampling, ArgmaxLowestIndexOnTiesAndSkipsNaN) {
  const std::vector<float> x = {NAN, 1.0f, 3.0f, 3.0f, -INFINITY, 2.0f, 3.0f, 0.0f, 1.0f, 1.0f,
                                1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 5.0f};
  const std::vector<float> all_nan(11, NAN);
  testing::EachIsa each;
  for (Isa isa : each.caps) {
    set_active_isa(isa);
    EXPECT_EQ(argmax(x.data(), 17), 2) << isa_name(isa);
    EXPECT_EQ(argmax(x.data(), 18), 17) << isa_name(isa);
    EXPECT_EQ(argmax(x.data(), 1), 0) << isa_name(isa);
    EXPECT_EQ(argmax(x.data() + 4, 1), 0) << isa_name(isa);  // -inf alone
    EXPECT_EQ(argmax(all_nan.data(), 11), 0) << isa_name(isa);
  }
}

void expect_invalid(SamplingParams params, const std::string& field) {
  try {
    params.validate();
    ADD_FAILURE() << "no error for " << field;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(Sampling, ValidateNamesTheBadField) {
  SamplingParams ok;
  EXPECT_NO_THROW(ok.validate());
  SamplingParams p;
  p.temperature = -0.1f;
  expect_invalid(p, "temperature");
  p = {};
  p.temperature = NAN;
  expect_invalid(p, "temperature");
  p = {};
  p.top_p = 0.0f;
  expect_invalid(p, "top_p");
  p.top_p = 1.5f;
  expect_invalid(p, "top_p");
  p.top_p = NAN;
  expect_invalid(p, "top_p");
  p = {};
  p.top_k = -1;
  expect_invalid(p, "top_k");
  p = {};
  p.min_p = 1.5f;
  expect_invalid(p, "min_p");
  p.min_p = NAN;
  expect_invalid(p, "min_p");
  p = {};
  p.repetition_penalty = 0.0f;
  expect_invalid(p, "repetition_penalty");
  p.repetition_penalty = NAN;
  expect_invalid(p, "repetition_penalty");
  p = {};
  p.presence_penalty = 2.5f;
  expect_invalid(p, "presence_penalty");
  p = {};
  p.frequency_penalty = -2.01f;
  expect_invalid(p, "frequency_penalty");
  p.frequency_penalty = NAN;
  expect_invalid(p, "frequency_penalty");
  p = {};
  p.logit_bias = {{3, 100.5f}};
  expect_invalid(p, "logit_bias");
  p.logit_bias = {{3, NAN}};
  expect_invalid(p, "logit_bias");
  p.logit_bias = {{-1, 1.0f}};
  expect_invalid(p, "logit_bias");
  p.logit_bias = {{4, 1.0f}, {4, 2.0f}};  // ids strictly increasing: no duplicate
  expect_invalid(p, "logit_bias");
  p.logit_bias = {{5, 1.0f}, {4, 2.0f}};
  expect_invalid(p, "logit_bias");
  p.logit_bias = {{4, -100.0f}, {5, 100.0f}};
  EXPECT_NO_THROW(p.validate());
}

// OpenAI's logit_bias: added to the named tokens' logits after the penalties, before the
// temperature; it moves the greedy choice too.
TEST(Sampling, LogitBiasIsAddedBeforeTheTemperatureAndMovesTheGreedyChoice) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f};
  SamplingParams params;
  params.temperature = 0.5f;
  params.logit_bias = {{0, 1.5f}, {3, -100.0f}};
  EXPECT_TRUE(params.shifts_logits());
  const std::vector<float> p = probs_of(logits, params);
  const std::vector<double> biased = {2.5, 2.0, 0.5, -101.0};
  double total = 0;
  for (double b : biased) total += std::exp(b / 0.5);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(p[i], std::exp(biased[i] / 0.5) / total, 1e-6) << i;
  params.temperature = 0.0f;
  EXPECT_EQ(probs_of(logits, params), (std::vector<float>{1, 0, 0, 0}));
  params.logit_bias = {{1, -100.0f}};  // the argmax banned: the next best wins
  EXPECT_EQ(probs_of(logits, params), (std::vector<float>{1, 0, 0, 0}));
  params.logit_bias = {{3, 100.0f}};  // forced
  EXPECT_EQ(probs_of(logits, params), (std::vector<float>{0, 0, 0, 1}));
  // The penalties read the model's own logits; the bias is added to what they leave.
  params.logit_bias = {{0, 0.75f}};
  params.presence_penalty = 2.0f;
  LogitsProcessor processor(4);
  std::vector<float> out(4);
  processor.to_probs(logits.data(), out.data(), params, std::vector<int32_t>{1}, 0);  // 2 - 2 = 0 < 1 + 0.75
  EXPECT_EQ(out, (std::vector<float>{1, 0, 0, 0}));
  SamplingParams plain;
  plain.temperature = 0.0f;
  EXPECT_FALSE(plain.shifts_logits());
}

// OpenAI's rule on the generated tokens only: logit -= frequency * count + presence.
TEST(Sampling, PresenceAndFrequencyPenaltiesCountOutputTokensOnly) {
  SamplingParams params;
  params.temperature = 1.0f;
  params.frequency_penalty = 0.5f;
  params.presence_penalty = 0.25f;
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f};
  // Prompt {1, 1}; output {0, 0, 2}: token 1 is only in the prompt and keeps its logit.
  const std::vector<int32_t> history = {1, 1, 0, 0, 2};
  LogitsProcessor processor(4);
  std::vector<float> p(4);
  processor.to_probs(logits.data(), p.data(), params, history, /*num_prompt_tokens=*/2);
  const std::vector<float> adjusted = {1.0f - 0.5f * 2 - 0.25f, 2.0f, 0.5f - 0.5f - 0.25f, -1.0f};
  double total = 0;
  for (float a : adjusted) total += std::exp(static_cast<double>(a));
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(p[i], std::exp(static_cast<double>(adjusted[i])) / total, 1e-6) << i;
  // The scratch counts are reset: a second call with no output tokens is unpenalised.
  processor.to_probs(logits.data(), p.data(), params, history, /*num_prompt_tokens=*/5);
  total = 0;
  for (float l : logits) total += std::exp(static_cast<double>(l));
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(p[i], std::exp(static_cast<double>(logits[i])) / total, 1e-6) << i;
  // Greedy sees the penalties too: token 0 (logit 1) would win without them over token 2
  // (0.5); with a large presence penalty on 0 only, the argmax moves.
  params.temperature = 0.0f;
  params.frequency_penalty = 0.0f;
  params.presence_penalty = 2.0f;
  const std::vector<float> close = {1.0f, -5.0f, 0.5f, -5.0f};
  processor.to_probs(close.data(), p.data(), params, std::vector<int32_t>{0}, 0);
  EXPECT_EQ(p, (std::vector<float>{0, 0, 1, 0}));
}

TEST(Sampling, PenaltiesAndBiasMatchReferenceOnRandomLogits) {
  for (int64_t vocab : {7, 1000, 50257}) {
    const auto logits = random_floats(static_cast<size_t>(vocab), 90 + vocab, -8.0f, 8.0f);
    std::vector<int32_t> history;
    for (int32_t i = 0; i < 40; ++i) history.push_back(static_cast<int32_t>((i * i * 31 + 7) % vocab));
    LogitsProcessor processor(vocab);
    for (const float frequency : {0.0f, 0.6f, -1.5f}) {
      for (const float presence : {0.0f, 1.1f, -0.3f}) {
        SamplingParams params;
        params.temperature = 0.9f;
        params.top_k = 100;
        params.top_p = 0.97f;
        params.repetition_penalty = 1.2f;
        params.frequency_penalty = frequency;
        params.presence_penalty = presence;
        // Half the settings with a bias on three tokens, the last one near the top.
        const auto id = [vocab](int64_t i) { return static_cast<int32_t>(i); };
        if (frequency != 0.0f) params.logit_bias = {{1, 3.5f}, {id(vocab / 2), -2.25f}, {id(vocab - 1), 40.0f}};
        std::vector<float> p(static_cast<size_t>(vocab)), ref(p.size());
        processor.to_probs(logits.data(), p.data(), params, history, 15);
        reference::to_probs(logits.data(), ref.data(), vocab, params, history, 15);
        for (int64_t i = 0; i < vocab; ++i) {
          ASSERT_NEAR(p[i], ref[i], 1e-6) << "vocab " << vocab << " token " << i;
          ASSERT_EQ(p[i] == 0.0f, ref[i] == 0.0f) << "vocab " << vocab << " token " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace dspark
