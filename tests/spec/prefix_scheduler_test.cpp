#include "spec/prefix_scheduler.h"

#include <array>
#include <cmath>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"
#include "spec/rejection_sampler.h"

namespace dspark {
namespace {

// SPS for a step costing 1 + slope * (B - 1) time units.
StepCostTable affine_cost(double slope, int64_t max_tokens = 64) {
  std::vector<double> sps(max_tokens);
  for (int64_t b = 1; b <= max_tokens; ++b) sps[b - 1] = 1.0 / (1.0 + slope * static_cast<double>(b - 1));
  return StepCostTable(sps);
}

std::vector<int32_t> choose(PrefixScheduler& s, const std::vector<std::vector<double>>& survival,
                            const StepCostTable& cost, double* predicted = nullptr, double overhead = 0) {
  std::vector<std::span<const double>> views(survival.begin(), survival.end());
  std::vector<int32_t> lengths(survival.size());
  const double p = s.choose(views, cost, lengths, overhead);
  if (predicted) *predicted = p;
  return lengths;
}

TEST(StepCostTable, SmoothsToNonIncreasingAndExtrapolates) {
  const StepCostTable t({100, 120, 80, 90, 50});
  EXPECT_EQ(t.values(), (std::vector<double>{120, 120, 90, 90, 50}));  // the faster measurement wins
  EXPECT_DOUBLE_EQ(t.sps(10), 25.0);  // 5 tokens per 1/50 s -> 10 tokens take twice as long
  // One slow outlier does not slow the batches after it.
  EXPECT_EQ(StepCostTable({100, 95, 40, 90, 85}).values(), (std::vector<double>{100, 95, 90, 90, 85}));
  EXPECT_THROW(StepCostTable({1.0, -1.0}), Error);
  EXPECT_THROW(t.sps(0), Error);
}

TEST(PrefixScheduler, AdmitsBySurvivalAndStopsAtFirstDrop) {
  PrefixScheduler s;
  double predicted = 0;
  // Worked by hand: R = 2, step time 1 + 0.1 (B - 1). Candidates in survival order:
  // (0,1) 0.9 -> Φ 2.417; (0,2) 0.8 -> 2.846; (1,1) 0.6 -> 3.071; (0,3) 0.3 -> 3.067 drop.
  const auto lengths = choose(s, {{0.9, 0.8, 0.3}, {0.6, 0.1}}, affine_cost(0.1), &predicted);
  EXPECT_EQ(lengths, (std::vector<int32_t>{2, 1}));
  EXPECT_NEAR(predicted, 0.9 + 0.8 + 0.6, 1e-12);
}

TEST(PrefixScheduler, TheStepsOverheadMakesVerificationRelativelyCheaper) {
  PrefixScheduler s;
  double predicted = 0;
  // The same candidates with t_o = 1 (the drafter takes as long as a one-token forward):
  // Φ = τ / (step + 1): 0.952 at the anchors, then 1.318, 1.609, 1.792, and (0,3) now
  // raises it to 1.840; (1,2) 0.1 -> 1.808 drops.
  const auto lengths = choose(s, {{0.9, 0.8, 0.3}, {0.6, 0.1}}, affine_cost(0.1), &predicted, 1.0);
  EXPECT_EQ(lengths, (std::vector<int32_t>{3, 1}));
  EXPECT_NEAR(predicted, 0.9 + 0.8 + 0.6 + 0.3, 1e-12);
  std::vector<int32_t> out(1);
  const std::vector<double> one = {0.5};
  const std::span<const double> view(one);
  EXPECT_THROW(s.choose({&view, 1}, affine_cost(0.1), out, -1.0), Error);
}

TEST(PrefixScheduler, IdleMachineVerifiesEverythingBusyMachineNothing) {
  PrefixScheduler s;
  const std::vector<std::vector<double>> survival = {{0.9, 0.5, 0.2}, {0.7, 0.6}};
  EXPECT_EQ(choose(s, survival, affine_cost(0.0)), (std::vector<int32_t>{3, 2}));  // free extra tokens
  EXPECT_EQ(choose(s, survival, affine_cost(1.0)), (std::vector<int32_t>{0, 0}));  // cost linear in B
}

TEST(PrefixScheduler, ShorterPrefixesAsLoadGrows) {
  // The same per-request survival at growing R: total verified drafts per request shrink.
  PrefixScheduler s;
  const StepCostTable cost = affine_cost(0.05, 512);
  double previous = 1e9;
  for (int r : {1, 2, 4, 8, 16, 32}) {
    std::vector<std::vector<double>> survival(r, {0.9, 0.8, 0.7, 0.55, 0.4, 0.3, 0.2, 0.1});
    const auto lengths = choose(s, survival, cost);
    double mean = 0;
    for (int32_t l : lengths) mean += l;
    mean /= r;
    EXPECT_LE(mean, previous) << "R = " << r;
    previous = mean;
  }
  EXPECT_LT(previous, 8.0);
}

TEST(PrefixScheduler, TiesGoToTheShorterPrefixThenTheLowerRequest) {
  PrefixScheduler s;
  // R = 2, equal survival 0.5 everywhere; SPS allows exactly one extra token: the first
  // position of request 0 (position before request index), nothing after.
  const auto lengths = choose(s, {{0.5, 0.5}, {0.5}}, StepCostTable({1.0, 1.0, 0.8, 0.1}));
  EXPECT_EQ(lengths, (std::vector<int32_t>{1, 0}));
}

TEST(PrefixScheduler, EarlyStopDiffersFromGlobalSearch) {
  // DESIGN §4's counterexample numbers: R = 1, SPS = 1, 0.5, 0.45; a = 0.8, 0.72.
  const StepCostTable cost({1.0, 0.5, 0.45});
  PrefixScheduler early;
  PrefixScheduler global(PrefixSchedulerOptions{.search_past_drop = true});
  EXPECT_EQ(choose(early, {{0.8, 0.72}}, cost), std::vector<int32_t>{0});   // Φ 0.9 < 1: stop
  EXPECT_EQ(choose(global, {{0.8, 0.72}}, cost), std::vector<int32_t>{2});  // Φ 1.134 later
  EXPECT_EQ(choose(global, {{0.8, 0.0}}, cost), std::vector<int32_t>{0});
}

TEST(PrefixScheduler, MaxUsefulDrafts) {
  EXPECT_EQ(PrefixScheduler::max_useful_drafts(1, 8, affine_cost(0.0)), 8);
  EXPECT_EQ(PrefixScheduler::max_useful_drafts(4, 8, affine_cost(1.0)), 8);  // (R+n)/(R+n) = 1: ties admit
  const StepCostTable steep({1.0, 0.4, 0.3, 0.2, 0.1});
  EXPECT_EQ(PrefixScheduler::max_useful_drafts(1, 4, steep), 0);
  EXPECT_EQ(PrefixScheduler::max_useful_drafts(0, 4, steep), 0);
  // With an overhead of 1 per step: 1 / 2 at the anchor; 2 / 3.5, 3 / 4.33, 4 / 6 and
  // 5 / 11 = 0.45 at one to four certain drafts: three beat the anchor alone.
  EXPECT_EQ(PrefixScheduler::max_useful_drafts(1, 4, steep, 1.0), 3);
}

TEST(PrefixScheduler, ExpectedUsefulDraftsWeighsMeasuredSurvivalAgainstLoad) {
  const std::vector<double> certain(8, 1.0);
  const std::vector<double> likely = {0.9, 0.72, 0.5, 0.3, 0.1, 0.05, 0.02, 0.01};
  // Free extra tokens: any draft helps.
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(4, 8, likely, affine_cost(0.0)), 8);
  // Fully compute-bound (SPS(b) = 1/b): only certain drafts break even.
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(4, 8, certain, affine_cost(1.0)), 8);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(4, 8, likely, affine_cost(1.0)), 0);
  // SPS(b) = 1 / (1 + 0.1 (b - 1)). R = 1: Φ = 1, then 1.73, 2.18, 2.40, 2.44 and 2.35 at
  // the fifth draft: four drafts. R = 16: Φ = 6.40 rises with every position-1 draft
  // (0.9 · 2.5 > 16 · 0.1 at the margin) to 7.41, and the first position-2 draft lowers it
  // (0.72 · 4.1 < 30.4 · 0.1): one draft per request.
  const StepCostTable mild = affine_cost(0.1, 256);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild), 4);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(16, 8, likely, mild), 1);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(0, 8, likely, mild), 0);
  EXPECT_THROW(PrefixScheduler::expected_useful_drafts(1, 9, likely, mild), Error);
}

TEST(PrefixScheduler, ExpectedUsefulDraftsPaysForTheDrafter) {
  const std::vector<double> likely = {0.9, 0.72, 0.5, 0.3, 0.1, 0.05, 0.02, 0.01};
  const StepCostTable mild = affine_cost(0.1, 256);
  // R = 1: four drafts, τ = 3.42 in a step of 1 / SPS(5) = 1.4 against plain Φ = 1: the
  // drafter may take up to 2.02 before drafting stops paying.
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, 1.0), 4);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, 2.0), 4);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, 2.1), 0);
  // R = 16: one draft each without the drafter's time (above); with it, the step's fixed
  // cost makes a second draft each worth verifying: τ = 41.92 in 4.1 + 1.6 + t_o against
  // plain 16 · SPS(16) = 6.4: Φ 6.65 at t_o = 0.6, 6.55 at 0.7, 6.26 at 1.
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(16, 8, likely, mild, 0.6), 2);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(16, 8, likely, mild, 0.7), 2);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(16, 8, likely, mild, 1.0), 0);
  EXPECT_THROW(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, -1.0), Error);
}

TEST(PrefixScheduler, ExpectedUsefulDraftsWithADrafterThatPaysPerDraft) {
  const std::vector<double> likely = {0.9, 0.72, 0.5, 0.3, 0.1, 0.05, 0.02, 0.01};
  const StepCostTable mild = affine_cost(0.1, 256);
  // R = 1. A fixed 0.4 s drafter: four drafts, Φ = 3.42 / (1.4 + 0.4) = 1.90. The same
  // 0.4 s spread over four drafts (0.1 each): three drafts cost 0.3, Φ = 3.12 / 1.6 =
  // 1.95 beats four at 3.42 / 1.8 = 1.90.
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, 0.4), 4);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, DrafterTime::per_draft_seconds(0.1)), 3);
  // 0.5 per draft: Φ 1.19 at one draft and at two (2.62 / 2.2), 1.11 at three: two.
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, DrafterTime::per_draft_seconds(0.5)), 2);
  // 0.7: one draft (1.9 / 1.8 = 1.06 > 1), where a fixed 0.7 s would still pick four.
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, DrafterTime::per_draft_seconds(0.7)), 1);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, 0.7), 4);
  // R = 16: one draft each at 0.5 per draft (Φ 6.61 > plain 6.4); none at 0.7 (6.33).
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(16, 8, likely, mild, DrafterTime::per_draft_seconds(0.5)), 1);
  EXPECT_EQ(PrefixScheduler::expected_useful_drafts(16, 8, likely, mild, DrafterTime::per_draft_seconds(0.7)), 0);
  // The bound: with SPS = 1 everywhere, n certain drafts give (1 + n) / (1 + t·n) against
  // 1 for the anchor alone: all of them while t <= 1, none past it.
  EXPECT_EQ(PrefixScheduler::max_useful_drafts(1, 8, affine_cost(0.0), DrafterTime::per_draft_seconds(1.0)), 8);
  EXPECT_EQ(PrefixScheduler::max_useful_drafts(1, 8, affine_cost(0.0), DrafterTime::per_draft_seconds(1.5)), 0);
  EXPECT_THROW(PrefixScheduler::expected_useful_drafts(1, 8, likely, mild, DrafterTime::per_draft_seconds(-1)), Error);
}

// The paper's counterexample, run as a sampling experiment through the real scheduler and
// rejection sampler. Vocabulary {A, B}; target p = (0.7, 0.3) at every position; draft
// q = (0.5, 0.5); c1 = 0.8; c2 = 0.9 if x1 = A else 0; SPS = 1, 0.5, 0.45. The first
// emitted token must be distributed as p. With the early stop it is; a scheduler that
// searches past the drop verifies x1 only when x1 = A and emits A with probability 0.85.
double first_token_a_rate(PrefixScheduler& scheduler, const StepCostTable& cost, int n, uint64_t seed) {
  const std::array<float, 2> p = {0.7f, 0.3f}, q = {0.5f, 0.5f};
  const std::array<float, 6> target = {p[0], p[1], p[0], p[1], p[0], p[1]};
  const std::array<float, 4> draft = {q[0], q[1], q[0], q[1]};
  RejectionSampler sampler(2);
  Rng rng(seed);
  int a_count = 0;
  for (int i = 0; i < n; ++i) {
    std::array<int32_t, 2> x = {rng.uniform() < 0.5 ? 0 : 1, rng.uniform() < 0.5 ? 0 : 1};
    const double c2 = x[0] == 0 ? 0.9 : 0.0;
    std::vector<std::vector<double>> survival = {{0.8, 0.8 * c2}};
    std::vector<std::span<const double>> views(survival.begin(), survival.end());
    std::vector<int32_t> lengths(1);
    scheduler.choose(views, cost, lengths);
    VerifyInput in;
    in.draft_tokens = std::span<const int32_t>(x.data(), lengths[0]);
    in.draft_probs = draft.data();
    in.target_probs = target.data();
    in.vocab_size = 2;
    const VerifyResult r = sampler.verify(in, rng);
    const int32_t first = r.num_accepted > 0 ? x[0] : r.next_token;
    a_count += first == 0;
  }
  return static_cast<double>(a_count) / n;
}

TEST(PrefixScheduler, EarlyStopKeepsTheTargetDistributionGlobalSearchDoesNot) {
  constexpr int kN = 200000;
  const double sigma = std::sqrt(0.7 * 0.3 / kN);
  const StepCostTable cost({1.0, 0.5, 0.45});
  PrefixScheduler early;
  PrefixScheduler global(PrefixSchedulerOptions{.search_past_drop = true});
  EXPECT_NEAR(first_token_a_rate(early, cost, kN, 1), 0.7, 5 * sigma);
  const double biased = first_token_a_rate(global, cost, kN, 2);
  EXPECT_NEAR(biased, 0.85, 5 * sigma);
  EXPECT_GT(std::abs(biased - 0.7), 20 * sigma);  // the test detects the bias
  // And where the early-stop scheduler does admit drafts (a free machine), still p.
  EXPECT_NEAR(first_token_a_rate(early, StepCostTable({1.0, 1.0, 1.0}), kN, 3), 0.7, 5 * sigma);
}

}  // namespace
}  // namespace dspark
