#include "spec/confidence_calibrator.h"

#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"

namespace dspark {
namespace {

constexpr int kDrafts = 4;

// How many of a round's drafts survive when draft j survives with probability survival[j]
// given its predecessors did.
int32_t accepted_in(const std::vector<double>& survival, Rng& rng) {
  int32_t accepted = 0;
  while (accepted < static_cast<int32_t>(survival.size()) && rng.uniform() < survival[static_cast<size_t>(accepted)])
    ++accepted;
  return accepted;
}

// `rounds` rounds of one source whose proposer says `proposed` at every position while the
// drafts survive as `survival` says, each from a request of its own.
void serve(ConfidenceCalibrator& calibrator, ConfidenceSource source, bool greedy, float proposed,
           const std::vector<double>& survival, int rounds, uint64_t seed = 3) {
  Rng rng(seed);
  const std::vector<float> c(kDrafts, proposed);
  for (int r = 0; r < rounds; ++r) {
    RequestConfidence request;
    request.correct(calibrator, source, greedy, c);
    request.observe(calibrator, kDrafts, accepted_in(survival, rng));
  }
}

std::vector<float> calibrated(const ConfidenceCalibrator& calibrator, ConfidenceSource source, bool greedy,
                              float proposed) {
  const std::vector<float> c(kDrafts, proposed);
  std::vector<float> out(kDrafts);
  calibrator.calibrate(source, greedy, c, out);
  return out;
}

TEST(ConfidenceCalibrator, StartsAsTheIdentity) {
  const ConfidenceCalibrator calibrator;
  const std::vector<float> c = {0.9f, 0.6f, 0.3f, 0.98f};
  std::vector<float> out(c.size());
  calibrator.calibrate(ConfidenceSource::kHead, true, c, out);
  for (size_t j = 0; j < c.size(); ++j) EXPECT_NEAR(out[j], c[j], 1e-6) << j;
  EXPECT_EQ(calibrator.offset(ConfidenceSource::kHead, true, 0), 0.0);
}

TEST(ConfidenceCalibrator, LearnsEachPositionsSurvivalFromAllRequests) {
  // One round per request, so only the engine's calibrator can learn anything; the head says
  // 0.6 everywhere while draft j survives with 0.9, 0.8, 0.6, 0.4.
  ConfidenceCalibrator calibrator;
  const std::vector<double> survival = {0.9, 0.8, 0.6, 0.4};
  serve(calibrator, ConfidenceSource::kHead, true, 0.6f, survival, 4000);
  const std::vector<float> c = calibrated(calibrator, ConfidenceSource::kHead, true, 0.6f);
  for (int j = 0; j < kDrafts; ++j) EXPECT_NEAR(c[static_cast<size_t>(j)], survival[static_cast<size_t>(j)], 0.06) << j;
}

TEST(ConfidenceCalibrator, KeepsSourcesAndGreedyAndSampledApart) {
  ConfidenceCalibrator calibrator;
  // Lookups of one kind that always fail at once; greedy head drafts that always survive.
  serve(calibrator, ConfidenceSource::kLookupFullTail, true, 0.98f, {0.0, 0.0, 0.0, 0.0}, 300);
  serve(calibrator, ConfidenceSource::kHead, true, 0.5f, {1.0, 1.0, 1.0, 1.0}, 300);
  EXPECT_LT(calibrated(calibrator, ConfidenceSource::kLookupFullTail, true, 0.98f)[0], 0.2f);
  EXPECT_GT(calibrated(calibrator, ConfidenceSource::kHead, true, 0.5f)[0], 0.9f);
  // Nothing was learned for the other lookup kinds or for sampled requests.
  EXPECT_NEAR(calibrated(calibrator, ConfidenceSource::kLookupFullTailWrapping, true, 0.98f)[0], 0.98f, 1e-6);
  EXPECT_NEAR(calibrated(calibrator, ConfidenceSource::kHead, false, 0.5f)[0], 0.5f, 1e-6);
  // Drafts never reached (the head's always were) leave their positions' offsets at 0.
  EXPECT_EQ(calibrator.offset(ConfidenceSource::kLookupFullTail, true, 1), 0.0);
}

TEST(ConfidenceCalibrator, FollowsTrafficThatChanges) {
  ConfidenceCalibrator calibrator;
  serve(calibrator, ConfidenceSource::kHead, true, 0.7f, {0.9, 0.9, 0.9, 0.9}, 4000, 5);
  EXPECT_NEAR(calibrated(calibrator, ConfidenceSource::kHead, true, 0.7f)[0], 0.9, 0.05);
  // The same head on other prompts, where its drafts survive half as often: the capped
  // precision lets the 4,000 earlier rounds go.
  serve(calibrator, ConfidenceSource::kHead, true, 0.7f, {0.45, 0.45, 0.45, 0.45}, 2000, 6);
  EXPECT_NEAR(calibrated(calibrator, ConfidenceSource::kHead, true, 0.7f)[0], 0.45, 0.06);
}

TEST(RequestConfidence, ALookupRequestCorrectsItselfTheHeadDoesNot) {
  const ConfidenceCalibrator untouched;  // learns nothing: each request's own offset alone
  ConfidenceCalibrator scratch;
  auto first_after = [&](ConfidenceSource source, int rounds) {
    RequestConfidence request;
    const std::vector<float> c(kDrafts, 0.9f);
    for (int r = 0; r < rounds; ++r) {
      request.correct(untouched, source, true, c);
      request.observe(scratch, kDrafts, 0);  // every first draft rejected
    }
    return request.correct(untouched, source, true, c)[0];
  };
  EXPECT_LT(first_after(ConfidenceSource::kLookupWrapping, 10), 0.5f);
  EXPECT_NEAR(first_after(ConfidenceSource::kHead, 10), 0.9f, 1e-6);
}

TEST(RequestConfidence, ObservesOnlyARoundItCorrected) {
  ConfidenceCalibrator calibrator;
  RequestConfidence request;
  request.observe(calibrator, 0, 0);  // nothing corrected yet: nothing to learn
  const std::vector<float> c(kDrafts, 0.5f);
  request.correct(calibrator, ConfidenceSource::kHead, true, c);
  request.forget_round();  // the round's drafts were dropped before verification
  request.observe(calibrator, kDrafts, kDrafts);
  EXPECT_EQ(calibrator.offset(ConfidenceSource::kHead, true, 0), 0.0);
  request.correct(calibrator, ConfidenceSource::kHead, true, c);
  request.observe(calibrator, 2, 2);  // the schedule verified 2 of 4, both accepted
  EXPECT_GT(calibrator.offset(ConfidenceSource::kHead, true, 1), 0.0);
  EXPECT_EQ(calibrator.offset(ConfidenceSource::kHead, true, 2), 0.0);
}

TEST(RequestConfidence, TheFirstCutDraftCountsWithTheProbabilityItWouldHaveSurvived) {
  // Rounds verify 2 of 4 drafts, both accepted, and the third (cut) would have survived with
  // probability 0.8 where the head says 0.5: the offset at position 3 learns that
  // probability (soft observations), while position 4, never reached, stays unlearned.
  ConfidenceCalibrator calibrator;
  const std::vector<float> c(kDrafts, 0.5f);
  for (int r = 0; r < 400; ++r) {
    RequestConfidence request;
    request.correct(calibrator, ConfidenceSource::kHead, false, c);
    request.observe(calibrator, 2, 2, 0.8);
  }
  EXPECT_EQ(calibrator.num_positions(ConfidenceSource::kHead, false), 3);
  EXPECT_NEAR(calibrated(calibrator, ConfidenceSource::kHead, false, 0.5f)[2], 0.8f, 0.03f);
  EXPECT_EQ(calibrator.num_positions(ConfidenceSource::kHead, true), 0);  // greedy apart
  // A survival probability equal to the prediction moves nothing.
  ConfidenceOffset offset;
  offset.observe_soft(0.5f, 0.5);
  EXPECT_EQ(offset.offset(), 0.0);
}

TEST(ConfidenceCalibrator, RejectsBadInput) {
  ConfidenceCalibrator calibrator;
  const std::vector<float> c(2, 0.5f);
  std::vector<float> out(3);
  EXPECT_THROW(calibrator.calibrate(ConfidenceSource::kHead, true, c, out), Error);
  EXPECT_THROW(calibrator.observe(ConfidenceSource::kHead, true, c, 3), Error);
  EXPECT_THROW(calibrator.observe(ConfidenceSource::kHead, true, c, -1), Error);
  RequestConfidence request;
  request.correct(calibrator, ConfidenceSource::kHead, true, c);
  EXPECT_THROW(request.observe(calibrator, 3, 0), Error);
  request.correct(calibrator, ConfidenceSource::kHead, true, c);
  EXPECT_THROW(request.observe(calibrator, 2, 2, 1.0), Error);  // no cut draft past all of them
  request.correct(calibrator, ConfidenceSource::kHead, true, c);
  EXPECT_THROW(request.observe(calibrator, 1, 0, 1.0), Error);  // a cut draft not reached
  EXPECT_THROW(calibrator.observe_cut(ConfidenceSource::kHead, true, 1, 0.5f, 1.5), Error);
  EXPECT_THROW(calibrator.observe_cut(ConfidenceSource::kHead, true, -1, 0.5f, 0.5), Error);
}

}  // namespace
}  // namespace dspark
