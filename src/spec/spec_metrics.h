// Speculative decoding counters, defined as vLLM defines them so numbers compare (DESIGN §6).
//
// A "draft" is a verification round that had at least one draft token; rounds with zero
// draft tokens (a request the scheduler verified with its anchor only, or a drafter that
// proposed nothing) count nowhere. For a round with L draft tokens of which A leading ones
// were accepted: num_drafts += 1, num_draft_tokens += L, num_accepted_tokens += A,
// accepted_per_position[i] += 1 for i < A, drafted_per_position[i] += 1 for i < L,
// reached_per_position[i] += 1 for i < L with i <= A (position i verified after every
// earlier draft was accepted).
//
// Derived rates:
//   mean_acceptance_length = 1 + num_accepted_tokens / num_drafts (tokens per round,
//                            counting the bonus token); 1.0 when there were no drafts.
//   acceptance_rate        = num_accepted_tokens / num_draft_tokens; 0 when none drafted.
//   position_acceptance_rate(i) = accepted_per_position[i] / num_drafts (vLLM's
//                            per-position rate: chance a round gets past position i).
//   position_conditional_rate(i) = accepted_per_position[i] / drafted_per_position[i]:
//                            the same among rounds that drafted position i, which is the
//                            meaningful number when the draft length varies per round.
//   position_pass_rate(i) = accepted_per_position[i] / reached_per_position[i]: the chance
//                            that the draft at position i is accepted once every earlier
//                            one was; survival to position i is the product of these.
//
// Calibration of a confidence head (rounds whose drafter supplied confidences c_i): for
// each position i drafted in such a round, the predicted survival a_i = ∏_{k≤i} c_k is
// summed and compared with the observed survival (positions 0..i all accepted):
//   predicted_survival(i) = Σ a_i / calibration_rounds[i]
//   observed_survival(i)  = calibration_survived[i] / calibration_rounds[i]
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dspark {

struct SpecDecodeMetrics {
  int64_t num_drafts = 0;                     // rounds with >= 1 draft token
  int64_t num_draft_tokens = 0;               // sum of draft lengths
  int64_t num_accepted_tokens = 0;            // sum of accepted prefix lengths
  std::vector<int64_t> accepted_per_position;  // [max_positions]
  std::vector<int64_t> drafted_per_position;   // [max_positions]
  std::vector<int64_t> reached_per_position;   // [max_positions]
  std::vector<int64_t> calibration_rounds;     // [max_positions] rounds with confidences drafting i
  std::vector<int64_t> calibration_survived;   // [max_positions] of those, positions 0..i accepted
  std::vector<double> calibration_predicted;   // [max_positions] sum of a_i over those rounds

  // max_positions: the longest draft a round may have (num_speculative_tokens / gamma).
  explicit SpecDecodeMetrics(int32_t max_positions = 0);

  // Throws Error unless 0 <= num_accepted <= num_draft_tokens <= max_positions().
  // confidence: the drafter's c_0..c_{L-1} for this round, or empty (no confidence head).
  void record_round(int32_t num_draft_tokens, int32_t num_accepted, std::span<const float> confidence = {});
  // Adds other's counts; the per-position vectors grow to the longer of the two.
  void merge(const SpecDecodeMetrics& other);

  int32_t max_positions() const { return static_cast<int32_t>(accepted_per_position.size()); }
  double mean_acceptance_length() const;
  double acceptance_rate() const;
  double position_acceptance_rate(int32_t position) const;
  double position_conditional_rate(int32_t position) const;
  double position_pass_rate(int32_t position) const;
  bool has_calibration() const;
  double predicted_survival(int32_t position) const;  // 0 when no round counted
  double observed_survival(int32_t position) const;   // 0 when no round counted
};

}  // namespace dspark
