// StopSignals: while alive, SIGINT/SIGTERM set a flag the training loops poll, so a run
// stops at a step boundary and writes its checkpoint; a second signal ends the process the
// default way. Previous handlers are restored on destruction. One per process at a time.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>

#include "train/pretrain/run_log.h"

namespace dspark::train {

class StopSignals {
 public:
  StopSignals() {
    flag().store(0);
    prev_int_ = std::signal(SIGINT, on_signal);
    prev_term_ = std::signal(SIGTERM, on_signal);
  }
  ~StopSignals() {
    std::signal(SIGINT, prev_int_);
    std::signal(SIGTERM, prev_term_);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received, or 0.
  int requested() const { return flag().load(); }

  // The training loops' stop test at a step boundary: a signal arrived (logged), or this
  // invocation has run its --stop-after steps (0: no limit).
  bool should_stop(int64_t step, int64_t steps_here, int64_t stop_after, RunLog& log) const {
    if (requested()) {
      log.print("signal {} received: stopping at step {}", requested(), step);
      return true;
    }
    return stop_after > 0 && steps_here >= stop_after;
  }

 private:
  static std::atomic<int>& flag() {
    static std::atomic<int> signal{0};
    return signal;
  }
  static void on_signal(int sig) {
    flag().store(sig);
    std::signal(sig, SIG_DFL);
  }
  void (*prev_int_)(int) = SIG_DFL;
  void (*prev_term_)(int) = SIG_DFL;
};

}  // namespace dspark::train
