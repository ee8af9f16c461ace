// RejectionSampler on hand-made p and q. Statistical checks use fixed seeds and 200k
// rounds; each frequency must lie within 5 binomial standard deviations,
// sqrt(f (1 - f) / n), of its exact value (plus 1e-12 so exact zeros must be exactly 0),
// so a correct sampler fails with probability < 1e-5 per cell and any bias above ~0.5%
// (absolute, for the sizes used) is caught.
#include "spec/rejection_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/sampling.h"

namespace dspark {
namespace {

constexpr int64_t kRounds = 200000;

// counts[i] / n against expected[i] (not necessarily normalised: divided by its sum).
void expect_frequencies(const std::vector<int64_t>& counts, const std::vector<double>& expected,
                        const char* what) {
  ASSERT_EQ(counts.size(), expected.size());
  int64_t n = 0;
  double total = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    n += counts[i];
    total += expected[i];
  }
  ASSERT_GT(n, 1000) << what << ": too few samples to compare";
  for (size_t i = 0; i < counts.size(); ++i) {
    const double f = expected[i] / total;
    const double observed = static_cast<double>(counts[i]) / static_cast<double>(n);
    const double tolerance = 5.0 * std::sqrt(f * (1.0 - f) / static_cast<double>(n)) + 1e-12;
    EXPECT_NEAR(observed, f, tolerance) << what << ", token " << i << ", n = " << n;
  }
}

std::vector<double> to_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

// Draws x ~ q, verifies one draft, and counts the first emitted token (x if accepted,
// else the recovered token). Lossless verification makes those counts follow p exactly.
std::vector<int64_t> first_token_counts(const std::vector<float>& p0, const std::vector<float>& p1,
                                        const std::vector<float>& q, uint64_t seed) {
  const auto vocab = static_cast<int64_t>(q.size());
  std::vector<float> target(p0);  // [2, vocab]
  target.insert(target.end(), p1.begin(), p1.end());
  RejectionSampler sampler(vocab);
  Rng rng(seed);
  std::vector<int64_t> counts(static_cast<size_t>(vocab), 0);
  for (int64_t r = 0; r < kRounds; ++r) {
    const int32_t x = sample_from_probs(q.data(), vocab, rng.uniform());
    const VerifyInput input{std::span<const int32_t>(&x, 1), q.data(), target.data(), vocab, false};
    const VerifyResult result = sampler.verify(input, rng);
    counts[static_cast<size_t>(result.num_accepted == 1 ? x : result.next_token)] += 1;
  }
  return counts;
}

TEST(RejectionSampler, EqualDistributionsAcceptEveryDraft) {
  const int64_t vocab = 6;
  // Three positions with p == q (including a draft of probability 0.01), then the bonus row.
  const std::vector<float> q = {0.50f, 0.20f, 0.10f, 0.10f, 0.09f, 0.01f,
                                0.05f, 0.05f, 0.30f, 0.30f, 0.20f, 0.10f,
                                0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 0.95f};
  const std::vector<float> bonus = {0.1f, 0.2f, 0.3f, 0.0f, 0.25f, 0.15f};
  std::vector<float> p(q);  // [4, vocab]
  p.insert(p.end(), bonus.begin(), bonus.end());
  const std::vector<int32_t> drafts = {5, 0, 3};
  RejectionSampler sampler(vocab);
  Rng rng(11);
  std::vector<int64_t> counts(vocab, 0);
  for (int64_t r = 0; r < kRounds; ++r) {
    const VerifyResult result = sampler.verify({drafts, q.data(), p.data(), vocab, false}, rng);
    ASSERT_EQ(result.num_accepted, 3);
    ASSERT_TRUE(result.is_bonus);
    counts[static_cast<size_t>(result.next_token)] += 1;
  }
  expect_frequencies(counts, to_double(bonus), "bonus token");
}

TEST(RejectionSampler, FirstRejectionDrawsFromTheResidual) {
  const int64_t vocab = 5;
  const std::vector<float> q0 = {0.10f, 0.50f, 0.20f, 0.15f, 0.05f};
  const std::vector<float> p0 = {0.30f, 0.20f, 0.25f, 0.05f, 0.20f};
  const std::vector<float> q1 = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
  const std::vector<float> p1 = {0.6f, 0.1f, 0.1f, 0.1f, 0.1f};
  const std::vector<float> p2 = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
  std::vector<float> q(q0), p(p0);  // [2, vocab], [3, vocab]
  q.insert(q.end(), q1.begin(), q1.end());
  p.insert(p.end(), p1.begin(), p1.end());
  p.insert(p.end(), p2.begin(), p2.end());
  // Draft 1 at position 0: q = 0.5 > p = 0.2, accepted with probability 0.4.
  const std::vector<int32_t> drafts = {1, 3};
  RejectionSampler sampler(vocab);
  Rng rng(12);
  std::vector<int64_t> accepted_at_0(2, 0);  // [rejected, accepted]
  std::vector<int64_t> recovered(vocab, 0);
  for (int64_t r = 0; r < kRounds; ++r) {
    const VerifyResult result = sampler.verify({drafts, q.data(), p.data(), vocab, false}, rng);
    if (result.num_accepted == 0) {
      accepted_at_0[0] += 1;
      EXPECT_FALSE(result.is_bonus);
      recovered[static_cast<size_t>(result.next_token)] += 1;
    } else {
      accepted_at_0[1] += 1;
    }
  }
  expect_frequencies(accepted_at_0, {0.6, 0.4}, "acceptance of draft 0");
  // max(0, p0 - q0) = (0.2, 0, 0.05, 0, 0.15), normalised by its mass 0.4.
  expect_frequencies(recovered, {0.20, 0.0, 0.05, 0.0, 0.15}, "recovered token");
}

TEST(RejectionSampler, OutputMarginalEqualsTarget) {
  const std::vector<float> q = {0.40f, 0.05f, 0.25f, 0.20f, 0.10f};
  const std::vector<float> p = {0.10f, 0.30f, 0.25f, 0.05f, 0.30f};
  const std::vector<float> unused = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
  expect_frequencies(first_token_counts(p, unused, q, 13), to_double(p), "first emitted token");
}

TEST(RejectionSampler, ResidualCoversTokensTheDraftCannotPropose) {
  // q has no mass on tokens 2 and 3; they can only come out as recovered tokens.
  const std::vector<float> q = {0.7f, 0.3f, 0.0f, 0.0f};
  const std::vector<float> p = {0.4f, 0.3f, 0.2f, 0.1f};
  const std::vector<float> unused = {0.25f, 0.25f, 0.25f, 0.25f};
  expect_frequencies(first_token_counts(p, unused, q, 14), to_double(p), "first emitted token");
}

TEST(RejectionSampler, DraftOutsideTheDraftSupport) {
  const int64_t vocab = 4;
  const std::vector<float> q = {0.5f, 0.5f, 0.0f, 0.0f};
  const std::vector<float> p = {0.2f, 0.3f, 0.5f, 0.0f, 0.25f, 0.25f, 0.25f, 0.25f};  // [2, vocab]
  RejectionSampler sampler(vocab);
  Rng rng(15);
  for (int r = 0; r < 1000; ++r) {
    // q(2) = 0 with p(2) > 0: treated as an infinite ratio, always accepted.
    const int32_t in_p = 2;
    const VerifyResult a = sampler.verify({{&in_p, 1}, q.data(), p.data(), vocab, false}, rng);
    EXPECT_EQ(a.num_accepted, 1);
    // q(3) = p(3) = 0: never accepted, and the recovered token is inside p's support.
    const int32_t outside = 3;
    const VerifyResult b = sampler.verify({{&outside, 1}, q.data(), p.data(), vocab, false}, rng);
    EXPECT_EQ(b.num_accepted, 0);
    EXPECT_NE(b.next_token, 3);
  }
}

TEST(RejectionSampler, TopKTopPTransformsKeepTheTargetMarginal) {
  const int64_t vocab = 6;
  SamplingParams params;
  params.temperature = 0.9f;
  params.top_k = 2;
  params.top_p = 0.8f;
  LogitsProcessor processor(vocab);
  // Target: top-2 = {1, 3} with masses ~(0.56, 0.44), so top-p keeps both.
  const std::vector<float> target_logits = {1.0f, 2.2f, 0.3f, 2.0f, -1.0f, 0.5f};
  std::vector<float> p(vocab);
  processor.to_probs(target_logits.data(), p.data(), params, {}, 0);
  EXPECT_GT(p[1], 0.0f);
  EXPECT_GT(p[3], 0.0f);
  EXPECT_NEAR(p[1] + p[3], 1.0f, 1e-6f);
  const std::vector<float> unused(vocab, 1.0f / vocab);
  {
    // Draft: top-2 = {0, 3} with masses ~(0.61, 0.39): supports overlap on token 3 only.
    const std::vector<float> draft_logits = {2.5f, 1.0f, 0.1f, 2.1f, 0.0f, -0.5f};
    std::vector<float> q(vocab);
    processor.to_probs(draft_logits.data(), q.data(), params, {}, 0);
    EXPECT_GT(q[0], 0.0f);
    EXPECT_GT(q[3], 0.0f);
    EXPECT_NEAR(q[0] + q[3], 1.0f, 1e-6f);
    expect_frequencies(first_token_counts(p, unused, q, 16), to_double(p), "top-k draft");
  }
  {
    // Draft: top-2 = {3, 4} with token 3 at ~0.84 >= top_p, so top-p leaves q one-hot at 3.
    const std::vector<float> draft_logits = {1.0f, 0.5f, 0.1f, 3.5f, 2.0f, -0.5f};
    std::vector<float> q(vocab);
    processor.to_probs(draft_logits.data(), q.data(), params, {}, 0);
    EXPECT_EQ(q[3], 1.0f);
    expect_frequencies(first_token_counts(p, unused, q, 17), to_double(p), "top-p draft");
  }
}

TEST(RejectionSampler, OneHotDraftsAcceptWithTargetProbability) {
  const int64_t vocab = 5;
  const std::vector<float> p = {0.1f, 0.2f, 0.4f, 0.25f, 0.05f, 0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
  const int32_t draft = 2;
  RejectionSampler sampler(vocab);
  Rng rng(17);
  std::vector<int64_t> emitted(vocab, 0);
  std::vector<int64_t> recovered(vocab, 0);
  for (int64_t r = 0; r < kRounds; ++r) {
    const VerifyResult result = sampler.verify({{&draft, 1}, nullptr, p.data(), vocab, false}, rng);
    if (result.num_accepted == 1) {
      emitted[draft] += 1;
    } else {
      emitted[static_cast<size_t>(result.next_token)] += 1;
      recovered[static_cast<size_t>(result.next_token)] += 1;
    }
  }
  expect_frequencies(emitted, {0.1, 0.2, 0.4, 0.25, 0.05}, "first emitted token");
  expect_frequencies(recovered, {0.1, 0.2, 0.0, 0.25, 0.05}, "recovered token");
}

TEST(RejectionSampler, ZeroDraftsSamplesTheBonusLikePlainDecoding) {
  const int64_t vocab = 4;
  const std::vector<float> p = {0.1f, 0.6f, 0.2f, 0.1f};
  RejectionSampler sampler(vocab);
  Rng rng(18), plain(18);
  for (int r = 0; r < 1000; ++r) {
    const VerifyResult result = sampler.verify({{}, nullptr, p.data(), vocab, false}, rng);
    EXPECT_EQ(result.num_accepted, 0);
    EXPECT_TRUE(result.is_bonus);
    EXPECT_EQ(result.next_token, sample_from_probs(p.data(), vocab, plain.uniform()));
  }
  EXPECT_EQ(rng.next_u64(), plain.next_u64());
}

// Replays the documented draw order with the same generator and compares every field.
TEST(RejectionSampler, DrawOrderIsTheDocumentedOne) {
  const int64_t vocab = 7;
  const int32_t num_drafts = 4;
  Rng data_rng(19);
  RejectionSampler sampler(vocab);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<float> q(num_drafts * vocab), p((num_drafts + 1) * vocab);
    auto fill = [&](float* row) {
      float sum = 0.0f;
      for (int64_t i = 0; i < vocab; ++i) sum += row[i] = static_cast<float>(data_rng.uniform());
      for (int64_t i = 0; i < vocab; ++i) row[i] /= sum;
    };
    for (int32_t j = 0; j < num_drafts; ++j) fill(&q[j * vocab]);
    for (int32_t j = 0; j <= num_drafts; ++j) fill(&p[j * vocab]);
    std::vector<int32_t> drafts(num_drafts);
    for (auto& x : drafts) x = static_cast<int32_t>(data_rng.next_u64() % vocab);
    const bool one_hot = trial % 2 == 1;

    Rng rng(1000 + trial), replay(1000 + trial);
    const VerifyResult result =
        sampler.verify({drafts, one_hot ? nullptr : q.data(), p.data(), vocab, false}, rng);

    int32_t accepted = 0;
    int32_t next = -1;
    for (; accepted < num_drafts; ++accepted) {
      const int32_t x = drafts[accepted];
      const double qx = one_hot ? 1.0 : q[accepted * vocab + x];
      if (!(replay.uniform() * qx < p[accepted * vocab + x])) break;
    }
    const float* row = &p[accepted * vocab];
    std::vector<float> residual(row, row + vocab);
    if (accepted < num_drafts) {
      ++rejected;
      for (int64_t i = 0; i < vocab; ++i) {
        const float qi = one_hot ? (i == drafts[accepted] ? 1.0f : 0.0f) : q[accepted * vocab + i];
        residual[i] = std::max(row[i] - qi, 0.0f);
      }
    }
    next = sample_from_probs(residual.data(), vocab, replay.uniform());
    ASSERT_EQ(result.num_accepted, accepted) << "trial " << trial;
    ASSERT_EQ(result.next_token, next) << "trial " << trial;
    ASSERT_EQ(result.is_bonus, accepted == num_drafts);
    ASSERT_EQ(rng.next_u64(), replay.next_u64()) << "trial " << trial << ": draw count differs";
  }
  EXPECT_GT(rejected, 500);
}

TEST(RejectionSampler, SameSeedSameResult) {
  const int64_t vocab = 3;
  const std::vector<float> q = {0.6f, 0.3f, 0.1f, 0.6f, 0.3f, 0.1f};
  const std::vector<float> p = {0.2f, 0.3f, 0.5f, 0.2f, 0.3f, 0.5f, 0.2f, 0.3f, 0.5f};
  const std::vector<int32_t> drafts = {0, 0};
  RejectionSampler a(vocab), b(vocab);
  Rng ra(20), rb(20);
  for (int r = 0; r < 1000; ++r) {
    const VerifyResult x = a.verify({drafts, q.data(), p.data(), vocab, false}, ra);
    const VerifyResult y = b.verify({drafts, q.data(), p.data(), vocab, false}, rb);
    ASSERT_EQ(x.num_accepted, y.num_accepted);
    ASSERT_EQ(x.next_token, y.next_token);
  }
}

TEST(RejectionSampler, GreedyAcceptsWhileDraftIsArgmax) {
  const int64_t vocab = 4;
  // One-hot rows as temperature 0 produces them; row 2 is a tie to check lowest index wins.
  const std::vector<float> p = {0, 0, 1, 0,  //
                                0, 1, 0, 0,  //
                                0.5f, 0, 0.5f, 0, //
                                0, 0, 0, 1};
  RejectionSampler sampler(vocab);
  Rng rng(21), untouched(21);
  auto run = [&](std::vector<int32_t> drafts) {
    return sampler.verify({drafts, nullptr, p.data(), vocab, true}, rng);
  };
  VerifyResult r = run({});
  EXPECT_EQ(r.num_accepted, 0);
  EXPECT_EQ(r.next_token, 2);
  EXPECT_TRUE(r.is_bonus);
  r = run({2, 1, 0});
  EXPECT_EQ(r.num_accepted, 3);
  EXPECT_EQ(r.next_token, 3);
  EXPECT_TRUE(r.is_bonus);
  r = run({2, 3, 0});
  EXPECT_EQ(r.num_accepted, 1);
  EXPECT_EQ(r.next_token, 1);
  EXPECT_FALSE(r.is_bonus);
  r = run({2, 1, 2});
  EXPECT_EQ(r.num_accepted, 2);
  EXPECT_EQ(r.next_token, 0);
  r = run({0});
  EXPECT_EQ(r.num_accepted, 0);
  EXPECT_EQ(r.next_token, 2);
  // Greedy draws nothing and ignores draft_probs.
  const std::vector<float> q(3 * vocab, 0.25f);
  const std::vector<int32_t> drafts = {2, 1};
  r = sampler.verify({drafts, q.data(), p.data(), vocab, true}, rng);
  EXPECT_EQ(r.num_accepted, 2);
  EXPECT_EQ(r.next_token, 0);
  EXPECT_EQ(rng.next_u64(), untouched.next_u64());
}

// The coupled rule: y_j is the Gumbel-max draw of p_j at position first_position + j;
// drafts are accepted while they equal it, the round emits y at the first mismatch or the
// bonus y_L, and no Rng draw is used. Whatever the drafts, the emitted tokens are the y's.
TEST(RejectionSampler, PositionKeyedEmitsThePlainDrawsWhateverTheDrafts) {
  const int64_t vocab = 6;
  const std::vector<float> row = {0.3f, 0.0f, 0.25f, 0.2f, 0.15f, 0.1f};
  std::vector<float> p;  // [4, vocab]
  for (int j = 0; j < 4; ++j) p.insert(p.end(), row.begin(), row.end());
  RejectionSampler sampler(vocab);
  Rng rng(7), untouched(7);
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const int64_t first = 40 + static_cast<int64_t>(seed % 5);
    std::vector<int32_t> y;
    for (int j = 0; j < 4; ++j) y.push_back(sample_gumbel_max(row.data(), vocab, seed, first + j));
    VerifyInput in{{}, nullptr, p.data(), vocab, false};
    in.position_keyed = true;
    in.seed = seed;
    in.first_position = first;
    // All three drafts right: bonus y_3.
    in.draft_tokens = std::span<const int32_t>(y.data(), 3);
    VerifyResult r = sampler.verify(in, rng);
    EXPECT_EQ(r.num_accepted, 3);
    EXPECT_EQ(r.next_token, y[3]);
    EXPECT_TRUE(r.is_bonus);
    // Draft 1 wrong: y_0 accepted, y_1 emitted.
    std::vector<int32_t> drafts = {y[0], (y[1] + 1) % 6, y[2]};
    in.draft_tokens = drafts;
    r = sampler.verify(in, rng);
    EXPECT_EQ(r.num_accepted, 1);
    EXPECT_EQ(r.next_token, y[1]);
    EXPECT_FALSE(r.is_bonus);
    // No drafts: the plain decoding draw.
    in.draft_tokens = {};
    EXPECT_EQ(sampler.verify(in, rng).next_token, y[0]);
  }
  EXPECT_EQ(rng.next_u64(), untouched.next_u64());
}

TEST(RejectionSampler, RejectsInvalidInput) {
  const int64_t vocab = 3;
  const std::vector<float> p(2 * vocab, 1.0f / 3);
  RejectionSampler sampler(vocab);
  Rng rng(22);
  const int32_t bad = 3;
  EXPECT_THROW(sampler.verify({{&bad, 1}, nullptr, p.data(), vocab, false}, rng), Error);
  const int32_t negative = -1;
  EXPECT_THROW(sampler.verify({{&negative, 1}, nullptr, p.data(), vocab, true}, rng), Error);
  EXPECT_THROW(sampler.verify({{}, nullptr, p.data(), vocab + 1, false}, rng), Error);
  EXPECT_THROW(sampler.verify({{}, nullptr, nullptr, vocab, false}, rng), Error);
  EXPECT_THROW(RejectionSampler(0), Error);
}

}  // namespace
}  // namespace dspark
