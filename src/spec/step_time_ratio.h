// StepTimeRatio: how the target's forward steps take now against what the step-cost
// profile (spec/prefix_scheduler.h's StepCostTable) says, measured online.
//
// The profile is measured once and cached; the drafter's time is measured live. The
// adaptive schedule weighs one against the other (the drafter's time is a step's overhead
// t_o), so when the machine's speed moves away from the profile's (a cached profile from
// an idler hour, other work on the machine, a slower CPU state) the two stop being in the
// same units: a machine 1.6x slower than its profile makes the drafter look 1.6x dearer
// than it is and the schedule drafts too little. The ratio converts live seconds into the
// profile's seconds.
#pragma once

#include <cstdint>

#include "spec/prefix_scheduler.h"

namespace dspark {

class StepTimeRatio {
 public:
  // A target forward of num_tokens tokens took `seconds`; the profile predicts
  // 1 / cost.sps(num_tokens).
  void record(int64_t num_tokens, double seconds, const StepCostTable& cost);
  // Measured over profiled step time (1 before anything is measured): a moving average of
  // its logarithm, so that one step slowed by a page fault or a preemption moves it little.
  double ratio() const;

 private:
  double log_ratio_ = 0;  // moving average of log(measured / profiled)
  int64_t samples_ = 0;
  bool warmed_up_ = false;
};

}  // namespace dspark
