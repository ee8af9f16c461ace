#include "spec/confidence_offset.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"

namespace dspark {
namespace {

// Rounds of `drafts` drafts whose head says `predicted` at every position while each
// survives with probability `actual` (given its predecessors did); returns the corrected
// confidence after them.
float corrected_after(int rounds, float predicted, double actual, int drafts = 6) {
  ConfidenceOffset offset;
  Rng rng(5);
  const std::vector<float> head(static_cast<size_t>(drafts), predicted);
  for (int r = 0; r < rounds; ++r) {
    int32_t accepted = 0;
    while (accepted < drafts && rng.uniform() < actual) ++accepted;
    offset.observe(head, accepted);
  }
  float out = 0;
  offset.apply(std::span<const float>(&predicted, 1), std::span<float>(&out, 1));
  return out;
}

TEST(ConfidenceOffset, StartsAsTheIdentity) {
  const ConfidenceOffset offset;
  const std::vector<float> c = {0.01f, 0.3f, 0.5f, 0.97f};
  std::vector<float> out(c.size());
  offset.apply(c, out);
  for (size_t j = 0; j < c.size(); ++j) EXPECT_NEAR(out[j], c[j], 1e-6) << j;
  EXPECT_EQ(offset.offset(), 0.0);
}

TEST(ConfidenceOffset, LearnsAnUnderConfidentHeadUp) {
  EXPECT_NEAR(corrected_after(300, 0.6f, 0.85), 0.85, 0.03);
}

TEST(ConfidenceOffset, LearnsAnOverConfidentHeadDown) {
  EXPECT_NEAR(corrected_after(300, 0.9f, 0.7), 0.7, 0.03);
}

TEST(ConfidenceOffset, StaysPutWhenTheHeadIsRight) {
  EXPECT_NEAR(corrected_after(300, 0.75f, 0.75), 0.75, 0.03);
}

TEST(ConfidenceOffset, OneRoundIsOneNewtonStepOverTheReachedPositions) {
  // 5 verified, 2 accepted: positions 1 and 2 survived, 3 was rejected, 4 and 5 were never
  // reached and say nothing.
  ConfidenceOffset offset(/*prior_precision=*/2.0);
  const std::vector<float> c = {0.8f, 0.5f, 0.4f, 0.01f, 0.99f};
  offset.observe(c, 2);
  const double gradient = (1 - 0.8) + (1 - 0.5) + (0 - 0.4);
  const double precision = 2.0 + 0.8 * 0.2 + 0.5 * 0.5 + 0.4 * 0.6;
  EXPECT_NEAR(offset.offset(), gradient / precision, 1e-6);
  // Every draft accepted: all positions reached, all survived.
  ConfidenceOffset all(2.0);
  all.observe(std::vector<float>{0.5f, 0.5f}, 2);
  EXPECT_NEAR(all.offset(), 1.0 / (2.0 + 0.5), 1e-6);
}

TEST(ConfidenceOffset, SaturatedConfidencesStayFinite) {
  ConfidenceOffset offset;
  const std::vector<float> c = {1.0f, 0.0f};
  for (int r = 0; r < 50; ++r) offset.observe(c, r % 2);
  std::vector<float> out(2);
  offset.apply(c, out);
  EXPECT_TRUE(std::isfinite(offset.offset()));
  EXPECT_TRUE(out[0] >= 0.0f && out[0] <= 1.0f && out[1] >= 0.0f && out[1] <= 1.0f);
}

TEST(ConfidenceOffset, ACappedPrecisionFollowsABiasThatChanges) {
  // 2,000 rounds of a head that is right, then 300 where its 0.75 survives half the time:
  // uncapped, the 2,000 rounds' precision holds b near 0; capped, b moves to the new bias.
  auto after_change = [](double max_precision) {
    ConfidenceOffset offset(2.5, max_precision);
    Rng rng(9);
    const std::vector<float> head(4, 0.75f);
    for (int r = 0; r < 2300; ++r) {
      const double actual = r < 2000 ? 0.75 : 0.5;
      int32_t accepted = 0;
      while (accepted < 4 && rng.uniform() < actual) ++accepted;
      offset.observe(head, accepted);
    }
    float out = 0;
    offset.apply(std::span<const float>(&head[0], 1), std::span<float>(&out, 1));
    return out;
  };
  EXPECT_NEAR(after_change(50.0), 0.5, 0.05);
  EXPECT_GT(after_change(std::numeric_limits<double>::infinity()), 0.62);
}

TEST(ConfidenceOffset, RejectsBadInput) {
  EXPECT_THROW(ConfidenceOffset(0.0), Error);
  EXPECT_THROW(ConfidenceOffset(-1.0), Error);
  EXPECT_THROW(ConfidenceOffset(2.0, 1.0), Error);
  ConfidenceOffset offset;
  EXPECT_THROW(offset.observe(std::vector<float>{0.5f}, 2), Error);
  EXPECT_THROW(offset.observe(std::vector<float>{0.5f}, -1), Error);
  std::vector<float> out(1);
  EXPECT_THROW(offset.apply(std::vector<float>{0.5f, 0.5f}, out), Error);
}

}  // namespace
}  // namespace dspark
