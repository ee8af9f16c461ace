#include "spec/ngram_proposer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/check.h"
#include "core/rng.h"

namespace dspark {
namespace {

std::vector<int32_t> propose(const NgramOptions& options, const std::vector<int32_t>& tokens) {
  const NgramProposer proposer(options);
  const std::span<const int32_t> out = proposer.propose(tokens);
  if (!out.empty()) {
    // The proposal is a view into the input, right after a matching occurrence.
    EXPECT_GE(out.data(), tokens.data());
    EXPECT_LE(out.data() + out.size(), tokens.data() + tokens.size());
  }
  return {out.begin(), out.end()};
}

NgramOptions options(int32_t min_n, int32_t max_n, int32_t k) {
  NgramOptions o;
  o.min_n = min_n;
  o.max_n = max_n;
  o.num_speculative_tokens = k;
  return o;
}

// Direct transcription of the definition: for n = max_n .. min_n, the last earlier
// occurrence of the tail of length n. O(N^2 max_n); the reference for the random test.
std::vector<int32_t> reference_propose(const NgramOptions& o, const std::vector<int32_t>& t) {
  const auto size = static_cast<int64_t>(t.size());
  for (int64_t n = o.max_n; n >= o.min_n; --n) {
    if (n > size - 1) continue;
    for (int64_t end = size - 1; end >= n; --end) {
      if (std::equal(t.begin() + (end - n), t.begin() + end, t.end() - n)) {
        const int64_t count = std::min<int64_t>(o.num_speculative_tokens, size - end);
        return {t.begin() + end, t.begin() + end + count};
      }
    }
  }
  return {};
}

TEST(NgramProposer, ProposesWhatFollowedTheMatch) {
  // Tail (7, 8) occurred at positions 1..2, followed by 9 10 11.
  const std::vector<int32_t> tokens = {5, 7, 8, 9, 10, 11, 12, 7, 8};
  EXPECT_EQ(propose(options(1, 4, 3), tokens), (std::vector<int32_t>{9, 10, 11}));
  EXPECT_EQ(propose(options(2, 2, 5), tokens), (std::vector<int32_t>{9, 10, 11, 12, 7}));
}

TEST(NgramProposer, PrefersTheLongestMatch) {
  // Tail 3 2 1: "1" last occurs at 6 (followed by 50), "2 1" at 5..6 (followed by 50),
  // "3 2 1" only at 0..2 (followed by 40). The longest match wins.
  const std::vector<int32_t> tokens = {3, 2, 1, 40, 41, 2, 1, 50, 51, 3, 2, 1};
  EXPECT_EQ(propose(options(1, 3, 2), tokens), (std::vector<int32_t>{40, 41}));
  EXPECT_EQ(propose(options(1, 2, 2), tokens), (std::vector<int32_t>{50, 51}));
  // min_n above every available match length: nothing.
  EXPECT_TRUE(propose(options(4, 5, 2), tokens).empty());
}

TEST(NgramProposer, PrefersTheMostRecentOccurrence) {
  const std::vector<int32_t> tokens = {1, 2, 10, 1, 2, 20, 1, 2, 30, 31, 1, 2};
  EXPECT_EQ(propose(options(2, 2, 2), tokens), (std::vector<int32_t>{30, 31}));
}

TEST(NgramProposer, OccurrenceMayOverlapTheTail) {
  // Repetition: the most recent "4 4" ends one position before the end.
  const std::vector<int32_t> tokens = {9, 4, 4, 4};
  EXPECT_EQ(propose(options(2, 2, 3), tokens), (std::vector<int32_t>{4}));
  EXPECT_EQ(propose(options(1, 3, 3), tokens), (std::vector<int32_t>{4}));
}

TEST(NgramProposer, NoMatchGivesNothing) {
  EXPECT_TRUE(propose(options(1, 4, 3), {1, 2, 3, 4, 5}).empty());
  EXPECT_TRUE(propose(options(1, 4, 3), {}).empty());
  EXPECT_TRUE(propose(options(1, 4, 3), {7}).empty());
  EXPECT_TRUE(propose(options(2, 4, 3), {7, 7}).empty());  // the tail of 2 has no earlier copy
  EXPECT_EQ(propose(options(1, 4, 3), {7, 7}), (std::vector<int32_t>{7}));
}

TEST(NgramProposer, TruncatesAtSequenceEndAndAtK) {
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 1, 2};
  EXPECT_EQ(propose(options(2, 3, 10), tokens), (std::vector<int32_t>{3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(propose(options(2, 3, 4), tokens), (std::vector<int32_t>{3, 4, 5, 6}));
  EXPECT_EQ(propose(options(2, 3, 1), tokens), (std::vector<int32_t>{3}));
}

TEST(NgramProposer, MatchesTheDefinitionOnRandomSequences) {
  Rng rng(31);
  for (int trial = 0; trial < 3000; ++trial) {
    // Small alphabets make matches of every length common.
    const auto alphabet = static_cast<int32_t>(2 + rng.next_u64() % 6);
    const auto size = static_cast<int64_t>(rng.next_u64() % 60);
    std::vector<int32_t> tokens(static_cast<size_t>(size));
    for (auto& t : tokens) t = static_cast<int32_t>(rng.next_u64() % alphabet);
    const auto min_n = static_cast<int32_t>(1 + rng.next_u64() % 3);
    const auto max_n = static_cast<int32_t>(min_n + rng.next_u64() % 4);
    const auto k = static_cast<int32_t>(1 + rng.next_u64() % 8);
    const NgramOptions o = options(min_n, max_n, k);
    ASSERT_EQ(propose(o, tokens), reference_propose(o, tokens))
        << "trial " << trial << " min_n " << min_n << " max_n " << max_n << " k " << k;
  }
}

TEST(NgramProposer, FastOnLongSequences) {
  // Worst case for the scan: every position matches max_n - 1 tokens of the tail and
  // none matches max_n, so nothing stops it early.
  const int64_t size = 4096;
  std::vector<int32_t> tokens(size, 1);
  tokens[size - 4] = 2;  // tail 2 1 1 1 never occurs earlier
  const NgramProposer proposer(options(1, 4, 5));
  // The most recent earlier "1 1 1" ends right before the 2, at size - 4.
  const std::span<const int32_t> out = proposer.propose(tokens);
  EXPECT_EQ(std::vector<int32_t>(out.begin(), out.end()), (std::vector<int32_t>{2, 1, 1, 1}));
  double best_us = 1e9;
  for (int rep = 0; rep < 50; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    volatile size_t sink = proposer.propose(tokens).size();
    (void)sink;
    const auto stop = std::chrono::steady_clock::now();
    best_us = std::min(best_us, std::chrono::duration<double, std::micro>(stop - start).count());
  }
  // Budget 100 us per call; a scan of 4096 positions x 4 comparisons takes a few us.
  EXPECT_LT(best_us, 100.0);
}

TEST(NgramProposer, RejectsBadOptions) {
  EXPECT_THROW(NgramProposer(options(0, 4, 3)), Error);
  EXPECT_THROW(NgramProposer(options(3, 2, 3)), Error);
  EXPECT_THROW(NgramProposer(options(1, 4, 0)), Error);
}

}  // namespace
}  // namespace dspark
