#include "spec/confidence_calibrator.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

std::string_view confidence_source_name(ConfidenceSource source) {
  switch (source) {
    case ConfidenceSource::kHead: return "head";
    case ConfidenceSource::kLookup: return "lookup";
    case ConfidenceSource::kLookupWrapping: return "lookup wrapping";
    case ConfidenceSource::kLookupFullTail: return "lookup full tail";
    case ConfidenceSource::kLookupFullTailWrapping: return "lookup full tail wrapping";
  }
  return "?";
}

void ConfidenceCalibrator::calibrate(ConfidenceSource source, bool greedy, std::span<const float> confidence,
                                     std::span<float> out) const {
  DSPARK_CHECK(out.size() == confidence.size(), "ConfidenceCalibrator: {} outputs for {} confidences", out.size(),
               confidence.size());
  const std::vector<ConfidenceOffset>& g = offsets(source, greedy);
  for (size_t j = 0; j < confidence.size(); ++j) {
    if (j < g.size()) g[j].apply(confidence.subspan(j, 1), out.subspan(j, 1));
    else out[j] = confidence[j];
  }
}

void ConfidenceCalibrator::observe(ConfidenceSource source, bool greedy, std::span<const float> confidence,
                                   int32_t num_accepted) {
  DSPARK_CHECK(num_accepted >= 0 && num_accepted <= static_cast<int32_t>(confidence.size()),
               "ConfidenceCalibrator: {} accepted of {} verified drafts", num_accepted, confidence.size());
  // Positions reached: every accepted draft and the first rejected one (if any), each one
  // observation of its own position's offset.
  const size_t reached = std::min(confidence.size(), static_cast<size_t>(num_accepted) + 1);
  std::vector<ConfidenceOffset>& g = offsets_for(source, greedy, reached);
  for (size_t j = 0; j < reached; ++j) {
    g[j].observe(confidence.subspan(j, 1), static_cast<int32_t>(j) < num_accepted ? 1 : 0);
  }
}

void ConfidenceCalibrator::observe_cut(ConfidenceSource source, bool greedy, int32_t position, float confidence,
                                       double survival) {
  DSPARK_CHECK(position >= 0, "ConfidenceCalibrator: cut draft at position {}", position);
  offsets_for(source, greedy, static_cast<size_t>(position) + 1)[static_cast<size_t>(position)].observe_soft(
      confidence, survival);
}

std::vector<ConfidenceOffset>& ConfidenceCalibrator::offsets_for(ConfidenceSource source, bool greedy,
                                                                 size_t positions) {
  std::vector<ConfidenceOffset>& g = offsets_[static_cast<size_t>(source)][greedy ? 1 : 0];
  while (g.size() < positions) g.emplace_back(kPriorPrecision, kMaxPrecision);
  return g;
}

double ConfidenceCalibrator::offset(ConfidenceSource source, bool greedy, int32_t position) const {
  const std::vector<ConfidenceOffset>& g = offsets(source, greedy);
  return position >= 0 && static_cast<size_t>(position) < g.size() ? g[static_cast<size_t>(position)].offset() : 0.0;
}

std::span<const float> RequestConfidence::correct(const ConfidenceCalibrator& calibrator, ConfidenceSource source,
                                                  bool greedy, std::span<const float> proposed) {
  active_ = true;
  source_ = source;
  greedy_ = greedy;
  proposed_.assign(proposed.begin(), proposed.end());
  calibrated_.resize(proposed.size());
  calibrator.calibrate(source, greedy, proposed_, calibrated_);
  if (source == ConfidenceSource::kHead) return calibrated_;
  corrected_.resize(proposed.size());
  lookup_offset_.apply(calibrated_, corrected_);
  return corrected_;
}

void RequestConfidence::observe(ConfidenceCalibrator& calibrator, int32_t num_verified, int32_t num_accepted,
                                std::optional<double> cut_survival) {
  if (!active_) return;
  active_ = false;
  const size_t cut = cut_survival ? 1 : 0;
  DSPARK_CHECK(num_verified >= 0 && static_cast<size_t>(num_verified) + cut <= proposed_.size(),
               "RequestConfidence: {} drafts verified{} of {} corrected", num_verified, cut ? " and one cut" : "",
               proposed_.size());
  DSPARK_CHECK(!cut_survival || num_accepted == num_verified,
               "RequestConfidence: a cut draft observed after {} of {} drafts were accepted", num_accepted,
               num_verified);
  const auto n = static_cast<size_t>(num_verified);
  calibrator.observe(source_, greedy_, std::span<const float>(proposed_).first(n), num_accepted);
  if (cut_survival) calibrator.observe_cut(source_, greedy_, num_verified, proposed_[n], *cut_survival);
  if (source_ == ConfidenceSource::kHead) return;
  lookup_offset_.observe(std::span<const float>(calibrated_).first(n), num_accepted);
  if (cut_survival) lookup_offset_.observe_soft(calibrated_[n], *cut_survival);
}

}  // namespace dspark
