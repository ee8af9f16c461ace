// The engine's online calibration of draft confidences: what verification has taught.
//
// The confidence head is calibrated offline (STS on held-out training answers) and repeat
// lookup's drafts start from one fixed estimate; on real prompts both are off, in ways every
// verified round shows. Greedy, fixed K = 8, every prompt of the four eval sets and four
// held-out ones: the head is under-confident at every position in all eight (logit offsets
// of +0.2 to +0.6 match its survival; its STS fit saw the long loops that repeat lookup now
// drafts instead), and the lookups' 8th draft survives 51% of the time on GSM8K and 93% on
// MBPP. Two layers correct them:
//
//  - ConfidenceCalibrator, one per engine: for each confidence source (the head, and each
//    kind of repeat lookup; Draft::confidence_source), greedy and sampled requests apart, and
//    each draft position j, one logit offset g learned from every request's rounds:
//    c_j -> σ(logit c_j + g_{source, j}). Each verified position is one Bernoulli observation
//    (it survived or not, given its predecessors did) of a ConfidenceOffset, whose precision
//    is capped so that g follows traffic that changes. So is the first draft the schedule
//    cut, when a round accepted every verified one: the target's row for its position is
//    computed, so the probability that it would have survived is known (observe_cut: 1 or
//    0 for greedy requests, whose bonus token is the argmax it had to match; min(1, p/q)
//    for sampled ones). Without it a position would be observed only in the rounds
//    confident enough to verify it, which survive less often than predicted (the 5 eval
//    domains, adaptive: the head's 4th-position offset greedy -0.19 against -0.01 with the
//    cut drafts seen, and +0.22 at fixed K = 4, which cuts none).
//  - RequestConfidence, one per request: for repeat lookup, the request's own offset on top
//    (spec/confidence_offset.h): a loop either holds in a request or it does not. The head's
//    drafts get none: replaying the eval and held-out sets' rounds, a per-request offset on
//    top of the engine's made the pooled survival worse on 9 of 12 measures, better only on
//    the two 30-problem AIME sets (its noise pulls confident predictions down);
//    docs/results.md.
//
// Lossless: every correction depends only on verdicts of rounds already verified, fixed
// before this round's drafts exist, so the prefix scheduler still admits each draft from its
// predecessors alone (DESIGN §4).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "spec/confidence_offset.h"
#include "spec/proposer.h"

namespace dspark {

// "head", "lookup", "lookup wrapping", "lookup full tail", "lookup full tail wrapping".
std::string_view confidence_source_name(ConfidenceSource source);

class ConfidenceCalibrator {
 public:
  // A weak prior: a few observations move g (each adds about c (1 - c) to the precision).
  static constexpr double kPriorPrecision = 1.0;
  // About 400-2,000 observations at c = 0.5-0.95 (each adds c (1 - c)): the memory of g,
  // long enough to average over many requests, short enough to follow a change of traffic.
  static constexpr double kMaxPrecision = 100.0;

  // out[j] = σ(logit confidence[j] + g_{source, greedy, j}); out may alias confidence.
  void calibrate(ConfidenceSource source, bool greedy, std::span<const float> confidence, std::span<float> out) const;
  // One verified round: `confidence` = the proposer's c_j of its verified drafts (before
  // calibrate), of which the first num_accepted were accepted.
  void observe(ConfidenceSource source, bool greedy, std::span<const float> confidence, int32_t num_accepted);
  // The first draft a round cut, at `position` (0-based), reached (every verified draft
  // survived): c its proposer's confidence, survival the probability it would have survived
  // (0 or 1 where the round's test is exact).
  void observe_cut(ConfidenceSource source, bool greedy, int32_t position, float confidence, double survival);

  // g_{source, greedy, j} (0 for a position never verified).
  double offset(ConfidenceSource source, bool greedy, int32_t position) const;
  // Positions j with an offset learned (verified at least once): 0..n-1.
  int32_t num_positions(ConfidenceSource source, bool greedy) const {
    return static_cast<int32_t>(offsets(source, greedy).size());
  }

 private:
  const std::vector<ConfidenceOffset>& offsets(ConfidenceSource source, bool greedy) const {
    return offsets_[static_cast<size_t>(source)][greedy ? 1 : 0];
  }
  // The same, grown to at least `positions` offsets (new ones at the prior).
  std::vector<ConfidenceOffset>& offsets_for(ConfidenceSource source, bool greedy, size_t positions);
  // [source][sampled, greedy][position]
  std::array<std::array<std::vector<ConfidenceOffset>, 2>, kNumConfidenceSources> offsets_;
};

// A request's confidences for the round being drafted, and its own repeat-lookup offset.
class RequestConfidence {
 public:
  // The confidences the schedule and the metrics see for this round's drafts: the
  // proposer's, calibrated by the engine, then (repeat lookup) by the request's own offset.
  // Valid until the next correct() or forget_round().
  std::span<const float> correct(const ConfidenceCalibrator& calibrator, ConfidenceSource source, bool greedy,
                                 std::span<const float> proposed);
  // The round's verdict, for the engine's calibrator and the request's offset: of its
  // num_verified drafts the first num_accepted were accepted, and where every one was and
  // the round cut the next, cut_survival is the probability that one would have survived.
  // Nothing when this round's confidences were not corrected.
  void observe(ConfidenceCalibrator& calibrator, int32_t num_verified, int32_t num_accepted,
               std::optional<double> cut_survival = std::nullopt);
  // This round has no corrected confidences (no drafts, or none from a confidence source).
  void forget_round() { active_ = false; }

 private:
  bool active_ = false;
  ConfidenceSource source_ = ConfidenceSource::kHead;
  bool greedy_ = true;
  std::vector<float> proposed_;    // [drafts] the proposer's c_j
  std::vector<float> calibrated_;  // [drafts] after the engine's calibrator
  std::vector<float> corrected_;   // [drafts] after the request's offset
  ConfidenceOffset lookup_offset_;
};

}  // namespace dspark
