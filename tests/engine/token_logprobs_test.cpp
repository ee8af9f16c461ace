#include "engine/token_logprobs.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

TEST(TokenLogprobs, TopNMostLikelyFirstLowerIdOnTies) {
  const std::vector<float> p = {0.1f, 0.3f, 0.0f, 0.3f, 0.05f, 0.25f};
  const TokenLogprob lp = token_logprob(p.data(), 6, 4, 4);
  EXPECT_EQ(lp.token, 4);
  EXPECT_FLOAT_EQ(lp.logprob, std::log(0.05f));
  ASSERT_EQ(lp.top.size(), 4u);
  EXPECT_EQ(lp.top[0].first, 1);
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 5);
  EXPECT_EQ(lp.top[3].first, 0);
  EXPECT_FLOAT_EQ(lp.top[0].second, std::log(0.3f));
  EXPECT_FLOAT_EQ(lp.top[3].second, std::log(0.1f));
}

// rank: 1 + the tokens strictly more likely (ties share a rank), with or without a top n.
TEST(TokenLogprobs, RankCountsTheTokensMoreLikely) {
  const std::vector<float> p = {0.1f, 0.3f, 0.0f, 0.3f, 0.05f, 0.25f};
  EXPECT_EQ(token_logprob(p.data(), 6, 4, 4).rank, 5);
  EXPECT_EQ(token_logprob(p.data(), 6, 4, 0).rank, 5);
  EXPECT_EQ(token_logprob(p.data(), 6, 1, 2).rank, 1);
  EXPECT_EQ(token_logprob(p.data(), 6, 3, 0).rank, 1);
  EXPECT_EQ(token_logprob(p.data(), 6, 5, 1).rank, 3);
  EXPECT_EQ(token_logprob(p.data(), 6, 2, 6).rank, 6);
}

TEST(TokenLogprobs, ZeroProbabilityIsMinusInfinityAndTopZeroIsEmpty) {
  const std::vector<float> p = {1.0f, 0.0f, 0.0f};
  const TokenLogprob lp = token_logprob(p.data(), 3, 2, 0);
  EXPECT_EQ(lp.logprob, -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(lp.top.empty());
  // Asking for the whole vocabulary lists every token, zeros last in id order.
  const TokenLogprob all = token_logprob(p.data(), 3, 0, 3);
  ASSERT_EQ(all.top.size(), 3u);
  EXPECT_EQ(all.top[0].first, 0);
  EXPECT_EQ(all.top[1].first, 1);
  EXPECT_EQ(all.top[2].first, 2);
  EXPECT_EQ(all.top[0].second, 0.0f);
}

TEST(TokenLogprobs, RejectsOutOfRangeArguments) {
  const std::vector<float> p = {0.5f, 0.5f};
  EXPECT_THROW(token_logprob(p.data(), 2, 2, 1), Error);
  EXPECT_THROW(token_logprob(p.data(), 2, 0, 3), Error);
}

}  // namespace
}  // namespace dspark
