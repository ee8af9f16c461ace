#include "spec/spec_metrics.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

SpecDecodeMetrics::SpecDecodeMetrics(int32_t max_positions) {
  DSPARK_CHECK(max_positions >= 0, "SpecDecodeMetrics: max_positions must be >= 0, got {}",
               max_positions);
  accepted_per_position.assign(static_cast<size_t>(max_positions), 0);
  drafted_per_position.assign(static_cast<size_t>(max_positions), 0);
  reached_per_position.assign(static_cast<size_t>(max_positions), 0);
  calibration_rounds.assign(static_cast<size_t>(max_positions), 0);
  calibration_survived.assign(static_cast<size_t>(max_positions), 0);
  calibration_predicted.assign(static_cast<size_t>(max_positions), 0.0);
}

void SpecDecodeMetrics::record_round(int32_t num_draft_tokens_in_round, int32_t num_accepted,
                                     std::span<const float> confidence) {
  DSPARK_CHECK(num_draft_tokens_in_round >= 0 && num_draft_tokens_in_round <= max_positions(),
               "SpecDecodeMetrics: a round of {} draft tokens, expected 0..{}",
               num_draft_tokens_in_round, max_positions());
  DSPARK_CHECK(num_accepted >= 0 && num_accepted <= num_draft_tokens_in_round,
               "SpecDecodeMetrics: {} accepted out of {} draft tokens", num_accepted,
               num_draft_tokens_in_round);
  if (num_draft_tokens_in_round == 0) return;
  num_drafts += 1;
  num_draft_tokens += num_draft_tokens_in_round;
  num_accepted_tokens += num_accepted;
  for (int32_t i = 0; i < num_accepted; ++i) accepted_per_position[static_cast<size_t>(i)] += 1;
  for (int32_t i = 0; i < num_draft_tokens_in_round; ++i) drafted_per_position[static_cast<size_t>(i)] += 1;
  for (int32_t i = 0; i < num_draft_tokens_in_round && i <= num_accepted; ++i) {
    reached_per_position[static_cast<size_t>(i)] += 1;
  }
  if (confidence.empty()) return;
  DSPARK_CHECK(static_cast<int32_t>(confidence.size()) == num_draft_tokens_in_round,
               "SpecDecodeMetrics: {} confidences for {} draft tokens", confidence.size(), num_draft_tokens_in_round);
  double survival = 1.0;
  for (int32_t i = 0; i < num_draft_tokens_in_round; ++i) {
    const auto at = static_cast<size_t>(i);
    survival *= std::clamp(static_cast<double>(confidence[at]), 0.0, 1.0);
    calibration_rounds[at] += 1;
    calibration_predicted[at] += survival;
    if (i < num_accepted) calibration_survived[at] += 1;
  }
}

void SpecDecodeMetrics::merge(const SpecDecodeMetrics& other) {
  num_drafts += other.num_drafts;
  num_draft_tokens += other.num_draft_tokens;
  num_accepted_tokens += other.num_accepted_tokens;
  const size_t size = std::max(accepted_per_position.size(), other.accepted_per_position.size());
  accepted_per_position.resize(size, 0);
  drafted_per_position.resize(size, 0);
  reached_per_position.resize(size, 0);
  calibration_rounds.resize(size, 0);
  calibration_survived.resize(size, 0);
  calibration_predicted.resize(size, 0.0);
  for (size_t i = 0; i < other.accepted_per_position.size(); ++i) {
    accepted_per_position[i] += other.accepted_per_position[i];
    drafted_per_position[i] += other.drafted_per_position[i];
    reached_per_position[i] += other.reached_per_position[i];
    calibration_rounds[i] += other.calibration_rounds[i];
    calibration_survived[i] += other.calibration_survived[i];
    calibration_predicted[i] += other.calibration_predicted[i];
  }
}

double SpecDecodeMetrics::mean_acceptance_length() const {
  if (num_drafts == 0) return 1.0;
  return 1.0 + static_cast<double>(num_accepted_tokens) / static_cast<double>(num_drafts);
}

double SpecDecodeMetrics::acceptance_rate() const {
  if (num_draft_tokens == 0) return 0.0;
  return static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens);
}

double SpecDecodeMetrics::position_acceptance_rate(int32_t position) const {
  DSPARK_CHECK(position >= 0 && position < max_positions(),
               "SpecDecodeMetrics: position {} outside 0..{}", position, max_positions() - 1);
  if (num_drafts == 0) return 0.0;
  return static_cast<double>(accepted_per_position[static_cast<size_t>(position)]) /
         static_cast<double>(num_drafts);
}

double SpecDecodeMetrics::position_conditional_rate(int32_t position) const {
  DSPARK_CHECK(position >= 0 && position < max_positions(),
               "SpecDecodeMetrics: position {} outside 0..{}", position, max_positions() - 1);
  const int64_t drafted = drafted_per_position[static_cast<size_t>(position)];
  if (drafted == 0) return 0.0;
  return static_cast<double>(accepted_per_position[static_cast<size_t>(position)]) /
         static_cast<double>(drafted);
}

double SpecDecodeMetrics::position_pass_rate(int32_t position) const {
  DSPARK_CHECK(position >= 0 && position < max_positions(),
               "SpecDecodeMetrics: position {} outside 0..{}", position, max_positions() - 1);
  const int64_t reached = reached_per_position[static_cast<size_t>(position)];
  if (reached == 0) return 0.0;
  return static_cast<double>(accepted_per_position[static_cast<size_t>(position)]) / static_cast<double>(reached);
}

bool SpecDecodeMetrics::has_calibration() const {
  return std::any_of(calibration_rounds.begin(), calibration_rounds.end(), [](int64_t n) { return n > 0; });
}

double SpecDecodeMetrics::predicted_survival(int32_t position) const {
  DSPARK_CHECK(position >= 0 && position < max_positions(), "SpecDecodeMetrics: position {} outside 0..{}", position,
               max_positions() - 1);
  const auto at = static_cast<size_t>(position);
  return calibration_rounds[at] > 0 ? calibration_predicted[at] / static_cast<double>(calibration_rounds[at]) : 0.0;
}

double SpecDecodeMetrics::observed_survival(int32_t position) const {
  DSPARK_CHECK(position >= 0 && position < max_positions(), "SpecDecodeMetrics: position {} outside 0..{}", position,
               max_positions() - 1);
  const auto at = static_cast<size_t>(position);
  return calibration_rounds[at] > 0
             ? static_cast<double>(calibration_survived[at]) / static_cast<double>(calibration_rounds[at])
             : 0.0;
}

}  // namespace dspark
