#include "spec/drafter_cost.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

DrafterCost::DrafterCost(int64_t max_requests) : seconds_(max_requests + 1, 0.0), samples_(max_requests + 1, 0) {}

void DrafterCost::record(int64_t num_requests, double seconds) {
  DSPARK_CHECK(num_requests >= 1 && num_requests < static_cast<int64_t>(seconds_.size()),
               "drafter cost recorded for {} requests, outside 1..{}", num_requests, seconds_.size() - 1);
  if (!warmed_up_) {
    warmed_up_ = true;
    return;
  }
  // Plain mean over the first samples, then a moving average that follows load changes
  // (the machine's other work, longer contexts).
  constexpr double kMinWeight = 0.05;
  const int64_t n = ++samples_[num_requests];
  const double weight = std::max(1.0 / static_cast<double>(n), kMinWeight);
  seconds_[num_requests] += weight * (seconds - seconds_[num_requests]);
}

double DrafterCost::seconds(int64_t num_requests) const {
  if (num_requests <= 0) return 0;
  const int64_t size = static_cast<int64_t>(seconds_.size());
  for (int64_t d = 0; d < size; ++d) {  // nearest measured R, the smaller one on ties
    for (const int64_t r : {num_requests - d, num_requests + d}) {
      if (r >= 1 && r < size && samples_[r] > 0) {
        return seconds_[r] * static_cast<double>(num_requests) / static_cast<double>(r);
      }
    }
  }
  return 0;
}

}  // namespace dspark
