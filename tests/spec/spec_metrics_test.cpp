#include "spec/spec_metrics.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

TEST(SpecDecodeMetrics, EmptyMetrics) {
  const SpecDecodeMetrics m(4);
  EXPECT_EQ(m.max_positions(), 4);
  EXPECT_EQ(m.num_drafts, 0);
  EXPECT_DOUBLE_EQ(m.mean_acceptance_length(), 1.0);
  EXPECT_DOUBLE_EQ(m.acceptance_rate(), 0.0);
  EXPECT_DOUBLE_EQ(m.position_acceptance_rate(0), 0.0);
  EXPECT_DOUBLE_EQ(m.position_conditional_rate(3), 0.0);
  EXPECT_DOUBLE_EQ(m.position_pass_rate(3), 0.0);
}

TEST(SpecDecodeMetrics, RecordsRounds) {
  SpecDecodeMetrics m(4);
  m.record_round(4, 2);  // accepted at 0, 1
  m.record_round(3, 3);  // accepted at 0, 1, 2
  m.record_round(2, 0);
  m.record_round(0, 0);  // not a draft: changes nothing
  EXPECT_EQ(m.num_drafts, 3);
  EXPECT_EQ(m.num_draft_tokens, 9);
  EXPECT_EQ(m.num_accepted_tokens, 5);
  EXPECT_EQ(m.accepted_per_position, (std::vector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(m.drafted_per_position, (std::vector<int64_t>{3, 3, 2, 1}));
  // Position 1 is reached (verified after position 0 was accepted) in the first two
  // rounds, position 2 in those two as well, position 3 in none (the first round, the only
  // one to verify it, rejected position 2).
  EXPECT_EQ(m.reached_per_position, (std::vector<int64_t>{3, 2, 2, 0}));
  EXPECT_DOUBLE_EQ(m.mean_acceptance_length(), 1.0 + 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.acceptance_rate(), 5.0 / 9.0);
  EXPECT_DOUBLE_EQ(m.position_acceptance_rate(0), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.position_acceptance_rate(2), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.position_acceptance_rate(3), 0.0);
  EXPECT_DOUBLE_EQ(m.position_conditional_rate(2), 1.0 / 2.0);
  EXPECT_DOUBLE_EQ(m.position_conditional_rate(3), 0.0);
  // Pass rates multiply to the survival: 2/3 past position 0, then 2/2, then 1/2; none
  // reached position 3.
  EXPECT_DOUBLE_EQ(m.position_pass_rate(0), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.position_pass_rate(1), 1.0);
  EXPECT_DOUBLE_EQ(m.position_pass_rate(2), 1.0 / 2.0);
  EXPECT_DOUBLE_EQ(m.position_pass_rate(3), 0.0);
}

TEST(SpecDecodeMetrics, OnlyEmptyRoundsCountAsNoDrafts) {
  SpecDecodeMetrics m(3);
  for (int i = 0; i < 10; ++i) m.record_round(0, 0);
  EXPECT_EQ(m.num_drafts, 0);
  EXPECT_EQ(m.num_draft_tokens, 0);
  EXPECT_DOUBLE_EQ(m.mean_acceptance_length(), 1.0);
}

TEST(SpecDecodeMetrics, MergeAddsAndGrows) {
  SpecDecodeMetrics a(2), b(4);
  a.record_round(2, 1);
  b.record_round(4, 4);
  b.record_round(1, 0);
  a.merge(b);
  EXPECT_EQ(a.max_positions(), 4);
  EXPECT_EQ(a.num_drafts, 3);
  EXPECT_EQ(a.num_draft_tokens, 7);
  EXPECT_EQ(a.num_accepted_tokens, 5);
  EXPECT_EQ(a.accepted_per_position, (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(a.drafted_per_position, (std::vector<int64_t>{3, 2, 1, 1}));
  EXPECT_EQ(a.reached_per_position, (std::vector<int64_t>{3, 2, 1, 1}));
  // Merging a shorter one keeps the longer vectors.
  SpecDecodeMetrics c(1);
  c.record_round(1, 1);
  a.merge(c);
  EXPECT_EQ(a.max_positions(), 4);
  EXPECT_EQ(a.accepted_per_position, (std::vector<int64_t>{3, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(a.mean_acceptance_length(), 1.0 + 6.0 / 4.0);
}

TEST(SpecDecodeMetrics, CalibrationComparesPredictedAndObservedSurvival) {
  SpecDecodeMetrics m(3);
  EXPECT_FALSE(m.has_calibration());
  m.record_round(2, 1);  // no confidences: counts for tau, not for calibration
  EXPECT_FALSE(m.has_calibration());
  const std::vector<float> c1 = {0.5f, 0.5f, 1.0f};
  m.record_round(3, 3, c1);  // a = 0.5, 0.25, 0.25; all survived
  const std::vector<float> c2 = {1.0f, 0.5f};
  m.record_round(2, 0, c2);  // a = 1, 0.5; none survived
  ASSERT_TRUE(m.has_calibration());
  EXPECT_EQ(m.calibration_rounds, (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(m.calibration_survived, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(m.predicted_survival(0), (0.5 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(m.predicted_survival(1), (0.25 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(m.predicted_survival(2), 0.25);
  EXPECT_DOUBLE_EQ(m.observed_survival(0), 0.5);
  EXPECT_DOUBLE_EQ(m.observed_survival(2), 1.0);
  // Merging adds the calibration counts too.
  SpecDecodeMetrics other(3);
  const std::vector<float> c3 = {0.0f};
  other.record_round(1, 0, c3);
  m.merge(other);
  EXPECT_EQ(m.calibration_rounds, (std::vector<int64_t>{3, 2, 1}));
  EXPECT_DOUBLE_EQ(m.predicted_survival(0), 1.5 / 3);
  // Confidences must match the round's draft count.
  EXPECT_THROW(m.record_round(2, 0, c1), Error);
  EXPECT_THROW(m.predicted_survival(3), Error);
}

TEST(SpecDecodeMetrics, RejectsImpossibleRounds) {
  SpecDecodeMetrics m(3);
  EXPECT_THROW(m.record_round(4, 0), Error);
  EXPECT_THROW(m.record_round(2, 3), Error);
  EXPECT_THROW(m.record_round(-1, 0), Error);
  EXPECT_THROW(m.record_round(2, -1), Error);
  EXPECT_THROW(m.position_acceptance_rate(3), Error);
  EXPECT_THROW(SpecDecodeMetrics(-1), Error);
  EXPECT_EQ(m.num_drafts, 0);
}

}  // namespace
}  // namespace dspark
