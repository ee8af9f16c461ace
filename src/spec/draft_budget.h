// DraftBudget: the adaptive schedule's two decisions around one engine step (DESIGN §5),
// next to the prefix scheduler it drives.
//
//   before drafting  how many drafts per request are worth making at this load: never
//                    more than the admission could take even if every draft were
//                    accepted, and none when the drafts' expected saving does not cover
//                    the drafter's own measured time (drafting for a busy machine is pure
//                    loss); an autoregressive drafter's time is measured per draft
//                    position, so fewer drafts are also cheaper to make. Now and then it drafts anyway, so that one stale or unlucky
//                    measurement cannot switch the drafter off for good.
//   after drafting   how many of each request's drafts to verify: PrefixScheduler::choose
//                    over per-request survival a_{r,i} = prod_{j<=i} c_{r,j}, with the
//                    drafter's confidences c, or for proposers without a confidence head
//                    the pass rates measured so far (optimistic, 1, until a position has
//                    been reached often enough to be measured).
//
// Both decisions read the same survival estimates: a budget that drafted positions the
// admission then never verified would pay for the drafter and never measure it. With a
// confidence head the admission reads each round's own a_{r,i}, so the budget replays the
// admission on the recent rounds' a_{r,i}: a position whose confidence keeps it from being
// verified is never measured, and counted as certain it would keep a drafter that costs
// more than the drafts it gets verified drafting every step; counted at its mean it would
// undervalue the later drafts that confident rounds do verify. Both weigh
// the drafter's live time against the profile's step times, in the profile's units
// (spec/step_time_ratio.h): the target's steps are timed as they run, too.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "spec/drafter_cost.h"
#include "spec/prefix_scheduler.h"
#include "spec/proposer.h"
#include "spec/spec_metrics.h"
#include "spec/step_time_ratio.h"

namespace dspark {

class DraftBudget {
 public:
  DraftBudget(int32_t num_speculative_tokens, int64_t max_running, std::shared_ptr<const StepCostTable> cost,
              DrafterCostShape shape = DrafterCostShape::kPerStep);

  // Drafts per request worth making this step, with num_decoding requests decoding.
  // measured: the engine's acceptance counts so far.
  int32_t drafts_to_make(int64_t num_decoding, const SpecDecodeMetrics& measured);
  // The drafter's wall time for one propose() over num_drafting requests, the longest of
  // which asked for max_drafts.
  void record_drafting(int64_t num_drafting, int32_t max_drafts, double seconds);
  // A target forward of num_tokens tokens (a decoding step: anchors and drafts) took
  // `seconds`.
  void record_target_step(int64_t num_tokens, double seconds);
  // The drafter's expected time over num_drafting requests, by drafts per request, in the
  // profile's seconds: its measured time over step_time_ratio().
  DrafterTime drafter_time(int64_t num_drafting) const;
  // The target's measured step time over the profile's (1 until measured).
  double step_time_ratio() const { return step_time_ratio_.ratio(); }

  // One decoding request's drafts, as the verification length choice sees them.
  struct Candidate {
    int32_t num_drafts = 0;
    const float* confidence = nullptr;  // [num_drafts] c_j, or null
  };
  // lengths[i]: drafts of candidates[i] to verify. num_decoding >= candidates.size(): the
  // decoding requests without drafts verify their anchor only, but count in the load.
  // Returns the expected number of accepted drafts.
  double choose_lengths(std::span<const Candidate> candidates, int64_t num_decoding, const SpecDecodeMetrics& measured,
                        std::span<int32_t> lengths);

  const StepCostTable& cost() const { return *cost_; }

 private:
  // Survival factor of a draft position for proposers without confidences: the measured
  // pass rate once the position has enough observations, 1 before.
  static double acceptance_estimate(size_t position, const SpecDecodeMetrics& measured);
  // Keeps one drafted round's a_1..a_n (the admission's survival from confidences).
  void record_round(std::span<const double> survival);
  // Drafts per request worth making over the recent rounds: the admission replayed on
  // them, each as num_decoding requests alike; 0 when that loses to plain decoding.
  int32_t replayed_plan(int64_t num_decoding, int32_t bound, const DrafterTime& drafter);

  static constexpr int64_t kRecentRounds = 32;    // drafted rounds the replay keeps
  static constexpr int64_t kMinRecentRounds = 8;  // before these, the measured pass rates

  std::shared_ptr<const StepCostTable> cost_;
  PrefixScheduler prefix_scheduler_;
  DrafterCostShape shape_;
  DrafterCost drafter_cost_;  // seconds per propose() (kPerStep) or per draft position (kPerDraft)
  StepTimeRatio step_time_ratio_;
  int64_t steps_without_drafting_ = 0;  // steps the drafter's cost alone kept it idle
  std::vector<double> expected_survival_;          // [K] the budget's estimate
  std::vector<double> recent_;                     // [kRecentRounds][K] a_i of recent rounds (a ring)
  std::vector<int32_t> recent_drafts_;             // [kRecentRounds] their drafts
  int64_t num_recent_ = 0;                         // rounds kept so far (all time)
  std::vector<double> replay_tau_;                 // [K + 1] replayed tokens by drafts per request
  std::vector<double> replay_seconds_;             // [K + 1] replayed seconds by drafts per request
  std::vector<double> replay_prefix_;              // [K + 1] one kept round's a_i summed up to i
  std::vector<std::vector<double>> survival_;      // [max_running][K] a_{r,i}
  std::vector<std::span<const double>> views_;     // [max_running]
  std::vector<int32_t> chosen_;                    // [max_running] the prefix scheduler's lengths
};

}  // namespace dspark
