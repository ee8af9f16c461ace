#include "spec/drafter_cost.h"

#include <gtest/gtest.h>

#include "core/check.h"

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

}  // namespace
}  // namespace dspark
