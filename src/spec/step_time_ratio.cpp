#include "spec/step_time_ratio.h"

#include <algorithm>
#include <cmath>

namespace dspark {

void StepTimeRatio::record(int64_t num_tokens, double seconds, const StepCostTable& cost) {
  if (num_tokens <= 0 || !(seconds > 0)) return;
  // The first step pays one-time costs (first touch of the KV cache and scratch buffers).
  if (!warmed_up_) {
    warmed_up_ = true;
    return;
  }
  // One sample moves the average by at most a factor of 4 (a step preempted for a
  // time slice is not the machine's speed).
  constexpr double kMaxLogRatio = 1.3862943611198906;  // log 4
  const double log_ratio = std::clamp(std::log(seconds * cost.sps(num_tokens)), -kMaxLogRatio, kMaxLogRatio);
  // Plain mean over the first samples, then a moving average over about the last 20
  // steps, as DrafterCost averages the drafter's time (spec/drafter_cost.h).
  constexpr double kMinWeight = 0.05;
  const double weight = std::max(1.0 / static_cast<double>(++samples_), kMinWeight);
  log_ratio_ += weight * (log_ratio - log_ratio_);
}

double StepTimeRatio::ratio() const { return std::exp(log_ratio_); }

}  // namespace dspark
