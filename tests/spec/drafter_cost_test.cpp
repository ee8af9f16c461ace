#include "spec/drafter_cost.h"

#include <gtest/gtest.h>

#include "core/check.h"
#include "spec/draft_budget.h"

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

// One drafter measurement so slow that even every draft accepted would not pay switches
// drafting off, but not for good: every 64 steps without drafts the drafter drafts again,
// and normal measurements bring it back.
TEST(DraftBudget, ASlowDrafterMeasurementIsMeasuredAgain) {
  // One target step: 1 ms for 1 token, 1.25 ms for 2 .. 9.
  std::vector<double> sps(9, 800.0);
  sps[0] = 1000.0;
  const auto table = std::make_shared<const StepCostTable>(sps);
  DraftBudget budget(8, 1, table, DrafterCostShape::kPerDraft);
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

}  // namespace
}  // namespace dspark
