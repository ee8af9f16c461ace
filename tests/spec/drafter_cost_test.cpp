#include "spec/drafter_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/check.h"
#include "spec/draft_budget.h"
#include "spec/step_time_ratio.h"

namespace dspark {
namespace {

TEST(DrafterCost, AveragesPerRequestCountAndScalesToTheNearestMeasured) {
  DrafterCost cost(8);
  EXPECT_EQ(cost.seconds(3), 0.0);  // nothing measured: free, so the drafter runs and is measured
  cost.record(2, 5.0);              // the first call (one-time set-up) is not counted
  EXPECT_EQ(cost.seconds(2), 0.0);
  cost.record(2, 0.010);
  cost.record(2, 0.020);
  EXPECT_DOUBLE_EQ(cost.seconds(2), 0.015);
  EXPECT_DOUBLE_EQ(cost.seconds(1), 0.0075);  // linear in R from R = 2
  EXPECT_DOUBLE_EQ(cost.seconds(8), 0.060);
  cost.record(6, 0.030);
  EXPECT_DOUBLE_EQ(cost.seconds(5), 0.025);  // nearest measured: 6
  EXPECT_DOUBLE_EQ(cost.seconds(4), 0.030);  // 2 and 6 equally near: the smaller
  EXPECT_EQ(cost.seconds(0), 0.0);
  // After many samples the average moves by a fixed fraction (0.05) toward a new value.
  DrafterCost slow(1);
  for (int i = 0; i < 41; ++i) slow.record(1, 1.0);
  slow.record(1, 2.0);
  EXPECT_DOUBLE_EQ(slow.seconds(1), 1.05);
  EXPECT_THROW(slow.record(2, 1.0), Error);
  EXPECT_THROW(slow.record(0, 1.0), Error);
}

// An autoregressive drafter's propose() time is kept per draft position, so the budget
// sees that fewer drafts cost less; a block drafter's time is the same for any count.
TEST(DraftBudget, DrafterTimePerStepOrPerDraft) {
  const auto sps = std::make_shared<const StepCostTable>(std::vector<double>{100.0, 90.0, 80.0});
  DraftBudget per_draft(8, 4, sps, DrafterCostShape::kPerDraft);
  per_draft.record_drafting(2, 4, 1.0);  // first call: set-up, not counted
  per_draft.record_drafting(2, 4, 0.040);
  per_draft.record_drafting(2, 0, 9.0);  // no drafts asked: nothing to learn
  EXPECT_DOUBLE_EQ(per_draft.drafter_time(2).at(4), 0.040);
  EXPECT_DOUBLE_EQ(per_draft.drafter_time(2).at(1), 0.010);
  EXPECT_DOUBLE_EQ(per_draft.drafter_time(4).at(2), 0.040);  // linear in R as well
  EXPECT_EQ(per_draft.drafter_time(2).at(0), 0.0);
  DraftBudget per_step(8, 4, sps, DrafterCostShape::kPerStep);
  per_step.record_drafting(2, 4, 1.0);
  per_step.record_drafting(2, 4, 0.040);
  EXPECT_DOUBLE_EQ(per_step.drafter_time(2).at(1), 0.040);
  EXPECT_DOUBLE_EQ(per_step.drafter_time(2).at(8), 0.040);
}

// A step-cost profile: one target step takes 1 ms for 1 token, 1.25 ms for 2 .. 9.
std::shared_ptr<const StepCostTable> one_ms_then_flat() {
  std::vector<double> sps(9, 800.0);
  sps[0] = 1000.0;
  return std::make_shared<const StepCostTable>(sps);
}

// One drafter measurement so slow that even every draft accepted would not pay switches
// drafting off, but not for good: every 64 steps without drafts the drafter drafts again,
// and normal measurements bring it back.
TEST(DraftBudget, ASlowDrafterMeasurementIsMeasuredAgain) {
  DraftBudget budget(8, 1, one_ms_then_flat(), DrafterCostShape::kPerDraft);
  const SpecDecodeMetrics measured(8);  // nothing measured: every draft expected accepted
  EXPECT_GT(budget.drafts_to_make(1, measured), 0);  // the drafter has not been measured: free
  budget.record_drafting(1, 1, 1.0);                 // first call: set-up, not counted
  budget.record_drafting(1, 1, 0.010);               // 10 ms per draft: nothing could pay for that
  for (int step = 1; step < 64; ++step) EXPECT_EQ(budget.drafts_to_make(1, measured), 0) << "step " << step;
  EXPECT_GT(budget.drafts_to_make(1, measured), 0);  // measured again
  EXPECT_EQ(budget.drafts_to_make(1, measured), 0);  // (its time is still the slow one)
  for (int i = 0; i < 200; ++i) budget.record_drafting(1, 1, 0.0001);
  EXPECT_EQ(budget.drafts_to_make(1, measured), 8);  // 0.1 ms per draft: all eight pay
}

// The step-cost profile and the drafter's time meet in one unit: when the target's steps
// run 4x slower than its profile says (a profile cached at an idler hour), the drafter's
// live time counts a quarter as much against the profile's steps, as it does against the
// steps that actually run.
TEST(DraftBudget, WeighsTheDrafterAgainstTheTargetsMeasuredSteps) {
  DraftBudget budget(8, 1, one_ms_then_flat(), DrafterCostShape::kPerDraft);
  const SpecDecodeMetrics measured(8);  // nothing measured: every draft expected accepted
  budget.record_drafting(1, 8, 1.0);    // first call: set-up, not counted
  budget.record_drafting(1, 8, 0.008);  // 1 ms per draft: 9 tokens in 9.25 ms lose to 1 in 1 ms
  EXPECT_EQ(budget.step_time_ratio(), 1.0);
  EXPECT_EQ(budget.drafts_to_make(1, measured), 0);
  budget.record_target_step(9, 1.0);  // the first step (set-up) is not counted
  EXPECT_EQ(budget.step_time_ratio(), 1.0);
  for (int i = 0; i < 20; ++i) budget.record_target_step(9, 0.005);  // 5 ms, the profile says 1.25
  EXPECT_NEAR(budget.step_time_ratio(), 4.0, 1e-9);
  EXPECT_NEAR(budget.drafter_time(1).at(8), 0.002, 1e-12);  // 8 ms live, 2 ms in the profile's time
  EXPECT_EQ(budget.drafts_to_make(1, measured), 8);  // 9 tokens in 3.25 ms beat 1 in 1 ms
  for (int i = 0; i < 200; ++i) budget.record_target_step(1, 0.001);  // back at the profile's speed
  EXPECT_NEAR(budget.step_time_ratio(), 1.0, 1e-3);
  EXPECT_EQ(budget.drafts_to_make(1, measured), 0);
}

TEST(StepTimeRatio, AveragesTheLogRatioAndBoundsOneStep) {
  const StepCostTable cost(std::vector<double>{1000.0, 500.0});  // 1 ms for 1 token, 2 ms for 2
  StepTimeRatio ratio;
  EXPECT_EQ(ratio.ratio(), 1.0);
  ratio.record(1, 0.5, cost);  // the first step (set-up) is not counted
  EXPECT_EQ(ratio.ratio(), 1.0);
  ratio.record(2, 0.001, cost);  // half the profile's time
  EXPECT_NEAR(ratio.ratio(), 0.5, 1e-12);
  ratio.record(1, 0.002, cost);  // twice it: the geometric mean of the two
  EXPECT_NEAR(ratio.ratio(), 1.0, 1e-12);
  ratio.record(1, 0.0, cost);  // not a measurement
  ratio.record(0, 0.001, cost);
  EXPECT_NEAR(ratio.ratio(), 1.0, 1e-12);
  StepTimeRatio bounded;
  bounded.record(1, 0.001, cost);
  bounded.record(1, 1.0, cost);  // a 1000x slower step (preempted) counts as 4x
  EXPECT_NEAR(bounded.ratio(), 4.0, 1e-9);
  // After many samples one step moves the average by a fixed 5% of its logarithm.
  for (int i = 0; i < 200; ++i) bounded.record(1, 0.001, cost);
  EXPECT_NEAR(bounded.ratio(), 1.0, 1e-4);
  bounded.record(1, 0.004, cost);
  EXPECT_NEAR(bounded.ratio(), std::exp(0.05 * std::log(4.0)), 1e-4);
}


// A step-cost profile of 1 ms for one token and 0.25 ms more for each further one.
std::shared_ptr<const StepCostTable> one_ms_plus_a_quarter() {
  std::vector<double> sps(9);
  for (int b = 1; b <= 9; ++b) sps[b - 1] = 1000.0 / (1.0 + 0.25 * (b - 1));
  return std::make_shared<const StepCostTable>(sps);
}

// A block drafter with a confidence head whose rounds the admission cuts after two drafts
// (confidences 0.9, 0.5, then 0.1: survival 0.9, 0.45, 0.045, ...). Positions 3 and on are
// then never verified, so never measured: priced as certain they would make drafting look
// worth 9 tokens a step. The admission replayed on the rounds' own confidences is what
// drafting is worth.
TEST(DraftBudget, AHeadsConfidencesDecideWhetherABlockDrafterPays) {
  static const std::vector<float> confidence = {0.9f, 0.5f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
  const SpecDecodeMetrics measured(8);  // nothing verified beyond what the rounds verify
  auto run_rounds = [&](DraftBudget& budget) {
    const DraftBudget::Candidate candidate{8, confidence.data()};
    int32_t length = 0;
    for (int round = 0; round < 8; ++round) budget.choose_lengths({&candidate, 1}, 1, measured, {&length, 1});
    return length;
  };
  // 1 ms a round: 2.35 tokens expected in 1.5 + 1 ms lose to 1 token in 1 ms.
  DraftBudget slow(8, 1, one_ms_plus_a_quarter(), DrafterCostShape::kPerStep);
  slow.record_drafting(1, 8, 1.0);  // first call: set-up, not counted
  slow.record_drafting(1, 8, 0.001);
  EXPECT_EQ(slow.drafts_to_make(1, measured), 8);  // before any round: every draft certain
  EXPECT_EQ(run_rounds(slow), 2);                  // the admission verifies two
  for (int step = 1; step < 64; ++step) EXPECT_EQ(slow.drafts_to_make(1, measured), 0) << "step " << step;
  EXPECT_EQ(slow.drafts_to_make(1, measured), 8);  // measured again, every position

  // 0.01 ms a round: two drafts pay (2.35 tokens in 1.51 ms), and the third is drafted as
  // the first the admission cuts, which calibration learns from.
  DraftBudget fast(8, 1, one_ms_plus_a_quarter(), DrafterCostShape::kPerStep);
  fast.record_drafting(1, 8, 1.0);
  fast.record_drafting(1, 8, 0.00001);
  run_rounds(fast);
  EXPECT_EQ(fast.drafts_to_make(1, measured), 3);
  // Confident rounds (0.9 at every position) verify six drafts: three of them among the
  // eleven kept make the plan reach their fifth draft (the sixth adds under 1% to the
  // replayed rate) and the first past it, where a mean of the rounds' survival would stop
  // at three (at position 4, 3/11 · 0.66 = 0.18: not worth a token's 0.25 ms).
  static const std::vector<float> sure = {0.9f, 0.9f, 0.9f, 0.9f, 0.9f, 0.9f, 0.9f, 0.9f};
  const DraftBudget::Candidate confident{8, sure.data()};
  int32_t length = 0;
  for (int round = 0; round < 3; ++round) fast.choose_lengths({&confident, 1}, 1, measured, {&length, 1});
  EXPECT_EQ(length, 6);
  EXPECT_EQ(fast.drafts_to_make(1, measured), 6);
}
}  // namespace
}  // namespace dspark
