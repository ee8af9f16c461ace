// The block-drafter bound on hand-made continuation samples whose leave-one-out means and
// total variations are worked out by hand.
#include "spec/block_bound.h"

#include <array>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

// S samples, K positions, 2 tokens: probs[s][j] = {p(0), p(1)}, tokens[s][j].
ContinuationSamples two_token_samples(const std::vector<std::vector<std::array<float, 2>>>& probs,
                                      const std::vector<std::vector<int32_t>>& tokens) {
  ContinuationSamples c;
  c.num_samples = static_cast<int64_t>(probs.size());
  c.block = static_cast<int64_t>(probs[0].size());
  c.vocab = 2;
  for (size_t s = 0; s < probs.size(); ++s)
    for (size_t j = 0; j < probs[s].size(); ++j) {
      c.probs.insert(c.probs.end(), probs[s][j].begin(), probs[s][j].end());
      c.tokens.push_back(tokens[s][j]);
    }
  return c;
}

TEST(BlockBound, ContinuationsThatAgreeAreAlwaysAccepted) {
  // Every sample has the same distribution at every position (greedy-like): q = p.
  const auto c = two_token_samples({{{0.3f, 0.7f}, {0.9f, 0.1f}, {0.5f, 0.5f}}, {{0.3f, 0.7f}, {0.9f, 0.1f}, {0.5f, 0.5f}},
                                    {{0.3f, 0.7f}, {0.9f, 0.1f}, {0.5f, 0.5f}}},
                                   {{0, 1, 0}, {1, 0, 1}, {1, 1, 0}});
  const BlockBound b = block_drafter_bound(c);
  for (double v : b.marginal_survival) EXPECT_NEAR(v, 1.0, 1e-6);
  for (double v : b.first_order_survival) EXPECT_NEAR(v, 1.0, 1e-6);
  EXPECT_NEAR(b.marginal_tau(), 4.0, 1e-6);
  EXPECT_NEAR(b.first_order_tau(), 4.0, 1e-6);
}

TEST(BlockBound, ThePreviousDraftTellsTheFirstOrderBoundWhatTheMarginalMisses) {
  // Position 1 depends on the token drawn at position 0: two samples drew 0 and continue
  // with 0, two drew 1 and continue with 1. The marginal for sample 0 is the mean of the
  // other three, (1/3, 2/3): TV 2/3. The first order knows the draft before: TV 0.
  const auto c = two_token_samples({{{0.5f, 0.5f}, {1, 0}}, {{0.5f, 0.5f}, {1, 0}}, {{0.5f, 0.5f}, {0, 1}},
                                    {{0.5f, 0.5f}, {0, 1}}},
                                   {{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  const BlockBound b = block_drafter_bound(c);
  EXPECT_NEAR(b.marginal_survival[0], 1.0, 1e-6);
  EXPECT_NEAR(b.marginal_survival[1], 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(b.first_order_survival[1], 1.0, 1e-6);
  EXPECT_NEAR(b.marginal_tau(), 1.0 + 1.0 + 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(b.first_order_tau(), 3.0, 1e-6);
}

TEST(BlockBound, APreviousDraftNoOtherSampleDrewFallsBackToTheMarginal) {
  // At position 2, samples 0 and 1 drew 0 at position 1 (then p = (1, 0)); sample 2 alone
  // drew 1 (then (0, 1)). Marginal: samples 0 and 1 against the mean of the others, (1/2,
  // 1/2): TV 1/2; sample 2 against (1, 0): TV 1. First order: samples 0 and 1 see each
  // other (TV 0), sample 2 the marginal. Positions 0 and 1 agree everywhere.
  const auto c = two_token_samples({{{0.5f, 0.5f}, {0.5f, 0.5f}, {1, 0}},
                                    {{0.5f, 0.5f}, {0.5f, 0.5f}, {1, 0}},
                                    {{0.5f, 0.5f}, {0.5f, 0.5f}, {0, 1}}},
                                   {{1, 0, 0}, {0, 0, 1}, {1, 1, 0}});
  const BlockBound b = block_drafter_bound(c);
  EXPECT_NEAR(b.marginal_survival[2], (0.5 + 0.5 + 0.0) / 3.0, 1e-6);
  EXPECT_NEAR(b.first_order_survival[2], (1.0 + 1.0 + 0.0) / 3.0, 1e-6);
}

TEST(BlockBound, TheSecondPositionIsExactForTheFirstOrder) {
  // Every sample continues one prefix, so p at the second position depends on the first
  // draft alone: a first-order drafter has it exactly, even for a first draft no other
  // sample drew. The marginal for sample 0 is the mean of (0, 1) and (0, 1): TV 1.
  const auto c = two_token_samples({{{0.5f, 0.5f}, {1, 0}}, {{0.5f, 0.5f}, {0, 1}}, {{0.5f, 0.5f}, {0, 1}}},
                                   {{0, 0}, {1, 1}, {1, 1}});
  const BlockBound b = block_drafter_bound(c);
  EXPECT_NEAR(b.first_order_survival[1], 1.0, 1e-6);
  EXPECT_NEAR(b.marginal_survival[1], (0.0 + 0.5 + 0.5) / 3.0, 1e-6);
}

TEST(BlockBound, SurvivalIsTheProductAlongEachSample) {
  // Position 0: samples differ (TV 1 against each other): nothing survives, so nothing
  // after it does either, however well position 1 agrees.
  const auto c = two_token_samples({{{1, 0}, {0.5f, 0.5f}}, {{0, 1}, {0.5f, 0.5f}}}, {{0, 0}, {1, 0}});
  const BlockBound b = block_drafter_bound(c);
  EXPECT_NEAR(b.marginal_survival[0], 0.0, 1e-6);
  EXPECT_NEAR(b.marginal_survival[1], 0.0, 1e-6);
  EXPECT_NEAR(b.marginal_tau(), 1.0, 1e-6);
}

TEST(BlockBound, RefusesShapesThatDoNotMatch) {
  ContinuationSamples c = two_token_samples({{{1, 0}}, {{1, 0}}}, {{0}, {0}});
  c.tokens.pop_back();
  EXPECT_THROW(block_drafter_bound(c), Error);
  c = two_token_samples({{{1, 0}}}, {{0}});  // one sample: nothing to leave out
  EXPECT_THROW(block_drafter_bound(c), Error);
}

}  // namespace
}  // namespace dspark
