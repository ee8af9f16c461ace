#include "spec/confidence_offset.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace dspark {
namespace {

// c clamped away from 0 and 1, so a saturated head still has a finite logit.
double logit(float c) {
  const double p = std::clamp(static_cast<double>(c), 1e-6, 1.0 - 1e-6);
  return std::log(p / (1.0 - p));
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

ConfidenceOffset::ConfidenceOffset(double prior_precision, double max_precision)
    : precision_(prior_precision), max_precision_(max_precision) {
  DSPARK_CHECK(prior_precision > 0 && std::isfinite(prior_precision),
               "ConfidenceOffset: prior precision must be positive and finite, got {}", prior_precision);
  DSPARK_CHECK(max_precision >= prior_precision, "ConfidenceOffset: max precision {} below the prior's {}",
               max_precision, prior_precision);
}

void ConfidenceOffset::apply(std::span<const float> confidence, std::span<float> out) const {
  DSPARK_CHECK(out.size() == confidence.size(), "ConfidenceOffset: {} outputs for {} confidences", out.size(),
               confidence.size());
  for (size_t j = 0; j < confidence.size(); ++j) out[j] = static_cast<float>(sigmoid(logit(confidence[j]) + offset_));
}

void ConfidenceOffset::observe(std::span<const float> confidence, int32_t num_accepted) {
  DSPARK_CHECK(num_accepted >= 0 && num_accepted <= static_cast<int32_t>(confidence.size()),
               "ConfidenceOffset: {} accepted of {} verified drafts", num_accepted, confidence.size());
  // Positions reached: every accepted draft and the first rejected one (if any).
  const size_t reached = std::min(confidence.size(), static_cast<size_t>(num_accepted) + 1);
  double gradient = 0, curvature = 0;
  for (size_t j = 0; j < reached; ++j) {
    const double p = sigmoid(logit(confidence[j]) + offset_);
    gradient += (static_cast<int32_t>(j) < num_accepted ? 1.0 : 0.0) - p;
    curvature += p * (1.0 - p);
  }
  step(gradient, curvature);
}

void ConfidenceOffset::observe_soft(float confidence, double survival) {
  DSPARK_CHECK(survival >= 0 && survival <= 1, "ConfidenceOffset: survival probability {} outside [0, 1]", survival);
  const double p = sigmoid(logit(confidence) + offset_);
  step(survival - p, p * (1.0 - p));
}

void ConfidenceOffset::step(double gradient, double curvature) {
  precision_ = std::min(precision_ + curvature, max_precision_);
  offset_ += gradient / precision_;
}

}  // namespace dspark
