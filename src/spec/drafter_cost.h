// DrafterCost: the drafter's measured wall time per step, which the adaptive schedule
// (spec/prefix_scheduler.h) takes as a step's overhead t_o.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark {

// The drafter's time as a function of the drafts per request n: a block drafter (DSpark,
// DFlash) drafts every position in one pass, so its time is fixed; an autoregressive one
// (EAGLE-3, a draft model) runs one pass per draft, so its time is per_draft · n.
struct DrafterTime {
  double fixed = 0;      // seconds whatever n (n >= 1)
  double per_draft = 0;  // seconds per draft position
  DrafterTime() = default;
  DrafterTime(double fixed_seconds) : fixed(fixed_seconds) {}  // NOLINT: a plain overhead converts
  static DrafterTime per_draft_seconds(double seconds) {
    DrafterTime t;
    t.per_draft = seconds;
    return t;
  }
  double at(int32_t num_drafts) const { return num_drafts <= 0 ? 0.0 : fixed + per_draft * num_drafts; }
};

// The drafter's wall time per step as a function of the number of drafting requests R,
// measured online (an exponential moving average per R). The drafter runs before the
// scheduler and its time is not in SPS(B): the drafter budget and the admission take it
// as the step's overhead t_o.
// An R never measured is estimated from the nearest measured one, scaled linearly in R;
// before any measurement the cost is taken as zero (so the drafter runs and gets measured).
// The very first call is not recorded: it pays one-time costs (first touch of buffers,
// kernel set-up) that would otherwise stop drafting for good.
class DrafterCost {
 public:
  explicit DrafterCost(int64_t max_requests = 0);
  void record(int64_t num_requests, double seconds);
  double seconds(int64_t num_requests) const;

 private:
  std::vector<double> seconds_;   // [max_requests + 1] moving average at R
  std::vector<int64_t> samples_;  // [max_requests + 1]
  bool warmed_up_ = false;
};

}  // namespace dspark
