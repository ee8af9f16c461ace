#include "spec/tail_match.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/rng.h"

namespace dspark {
namespace {

TEST(TailMatch, LongestTailThenMostRecentOccurrence) {
  //                          0  1  2  3  4  5  6  7  8  9
  const std::vector<int32_t> t{5, 1, 2, 9, 1, 2, 3, 7, 2, 3};
  // Tail "2 3" occurs ending at 7 (t[5..7)); "1 2 3" is not repeated; "3" alone ends at 7 too.
  const TailMatch m = find_tail_match(t, 1, 4);
  EXPECT_EQ(m.end, 7);
  EXPECT_EQ(m.length, 2);
  const TailMatch single = find_tail_match(std::vector<int32_t>{4, 2, 4, 3, 4}, 1, 4);
  EXPECT_EQ(single.end, 3);  // the most recent "4" before the tail
  EXPECT_EQ(single.length, 1);
}

TEST(TailMatch, NothingShorterThanMinN) {
  const std::vector<int32_t> t{1, 2, 3, 9, 3};
  EXPECT_TRUE(find_tail_match(t, 1, 4).found());
  EXPECT_FALSE(find_tail_match(t, 2, 4).found());
  EXPECT_FALSE(find_tail_match(std::vector<int32_t>{7}, 1, 4).found());
  EXPECT_FALSE(find_tail_match(std::vector<int32_t>{}, 1, 4).found());
}

TEST(TailMatch, RepeatedTokensReadTheSequenceAsALoop) {
  // A loop of period 3 ("a b c") that has run for a while: the tail "b c" last occurred
  // ending 3 tokens back, so the continuation is "a b c a b c ...".
  const std::vector<int32_t> t{9, 1, 2, 3, 1, 2, 3, 1, 2, 3};
  const TailMatch m = find_tail_match(t, 2, 16);
  ASSERT_TRUE(m.found());
  EXPECT_EQ(static_cast<int64_t>(t.size()) - m.end, 3);  // the period
  const std::vector<int32_t> expected{1, 2, 3, 1, 2, 3, 1, 2};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(repeated_token(t, m, i), expected[i]) << i;
  // A match far back continues with what followed it, then wraps over the same span.
  const std::vector<int32_t> u{4, 5, 6, 8, 8, 4, 5};
  const TailMatch far = find_tail_match(u, 2, 16);
  ASSERT_EQ(far.end, 2);
  const std::vector<int32_t> far_expected{6, 8, 8, 4, 5, 6, 8, 8, 4};
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(repeated_token(u, far, i), far_expected[i]) << i;
}

TEST(TailMatch, LeadingAgreementCountsDraftsUntilTheFirstDifference) {
  const std::vector<int32_t> t{9, 1, 2, 3, 1, 2, 3, 1, 2, 3};
  EXPECT_EQ(leading_repeat_agreement(t, std::vector<int32_t>{1, 2, 3, 1, 2}, 2, 16), 5);
  EXPECT_EQ(leading_repeat_agreement(t, std::vector<int32_t>{1, 2, 7, 1, 2}, 2, 16), 2);
  EXPECT_EQ(leading_repeat_agreement(t, std::vector<int32_t>{4, 2, 3}, 2, 16), 0);
  EXPECT_EQ(leading_repeat_agreement(std::vector<int32_t>{1, 2, 3, 4}, std::vector<int32_t>{1, 2}, 2, 16), 0);
  EXPECT_EQ(leading_repeat_agreement(t, std::vector<int32_t>{}, 2, 16), 0);
}

// Against a direct transcription of the definition on random sequences over a small
// alphabet (many matches of every length).
TEST(TailMatch, MatchesTheDefinitionOnRandomSequences) {
  Rng rng(11);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int32_t> t(1 + rng.next_u64() % 40);
    for (int32_t& x : t) x = static_cast<int32_t>(rng.next_u64() % 3);
    const int32_t min_n = 1 + static_cast<int32_t>(rng.next_u64() % 3);
    const int32_t max_n = min_n + static_cast<int32_t>(rng.next_u64() % 5);
    const auto size = static_cast<int64_t>(t.size());
    TailMatch expected;
    for (int64_t n = max_n; n >= min_n && !expected.found(); --n) {
      if (n > size - 1) continue;
      for (int64_t end = size - 1; end >= n; --end) {
        if (std::equal(t.begin() + (end - n), t.begin() + end, t.end() - n)) {
          expected = {end, n};
          break;
        }
      }
    }
    const TailMatch got = find_tail_match(t, min_n, max_n);
    ASSERT_EQ(got.end, expected.end) << "trial " << trial;
    if (got.found()) ASSERT_EQ(got.length, expected.length) << "trial " << trial;
  }
}

}  // namespace
}  // namespace dspark
