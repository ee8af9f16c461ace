// The optimizer-step loop every trainer shares (`dspark-train pretrain`, `draft`, `eagle3`,
// `draft-lm`). What differs between them (one step's batch, forward and loss; the progress
// line's statistics; validation; the checkpoint's state; the export) comes in as
// StepLoopHooks. The loop owns the rest: SIGINT / SIGTERM and --stop-after, the cosine
// schedule, gradient clipping and the AdamW step, stopping on a non-finite loss, the
// progress / validation / checkpoint periods, then at the end the last validation,
// checkpoint and export and the closing line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/pretrain/adamw.h"
#include "train/pretrain/run_log.h"

namespace dspark::train {

struct StepLoopOptions {
  int64_t steps = 0;       // the run's last step
  int64_t stop_after = 0;  // stop with a checkpoint after this many steps here; 0: never
  double lr = 0;           // cosine schedule: peak, final, warm-up steps
  double min_lr = 0;
  int64_t warmup = 0;
  double grad_clip = 0;    // 0: off
  int64_t log_every = 1;
  int64_t eval_every = 0;  // 0: only at the end
  int64_t save_every = 0;  // 0: only at exit
  bool export_at_end = true;
};

// The loop's options from a trainer's options (every trainer names these fields alike).
template <typename TrainerOptions>
StepLoopOptions step_loop_options(const TrainerOptions& o) {
  return {o.steps, o.stop_after, o.lr, o.min_lr, o.warmup, o.grad_clip, o.log_every, o.eval_every, o.save_every,
          o.export_at_end};
}

// Where a run stands; a checkpoint's state.json keeps it (step, tokens_seen, elapsed_seconds).
struct RunPosition {
  int64_t step = 0;             // optimizer steps done
  int64_t tokens_seen = 0;      // training tokens over every invocation
  double elapsed_seconds = 0;   // training time over every invocation (no validation or checkpoints)

  // The position a checkpoint's state records; refuses a checkpoint trained with another
  // seed (its batches would differ), naming `checkpoint`.
  static RunPosition resumed(const nlohmann::json& state, const std::filesystem::path& checkpoint, uint64_t seed);
  // {step, seed, tokens_seen, elapsed_seconds}: what resumed() reads back; a trainer's
  // checkpoint state adds its own keys.
  nlohmann::json state(uint64_t seed) const;
};

// The steps since the last progress line, for the trainer's line and metrics.
struct ProgressReport {
  RunPosition at;
  int64_t steps = 0;            // the run's last step
  int64_t interval_steps = 0;   // steps since the last line (>= 1)
  double lr = 0;
  double grad_norm = 0;
  double tokens_per_second = 0;
  double eta_seconds = 0;

  // "lr … gnorm … tok/s … elapsed … eta …", the end of every trainer's progress line.
  std::string tail() const;
  // {"type": "train", step, lr, grad_norm, tokens_per_second, tokens_seen, elapsed_seconds},
  // to which the trainer adds its statistics.
  nlohmann::json metrics() const;
};

class StepLoopHooks {
 public:
  virtual ~StepLoopHooks() = default;
  // One step's batch, forward, loss and backward (gradients left on the parameters); returns
  // the loss, sets the tokens the batch trained on. Statistics for the progress line are the
  // trainer's to keep.
  virtual double train_step(int64_t step, int64_t& tokens) = 0;
  virtual void log_progress(const ProgressReport& report) = 0;
  virtual void evaluate(const RunPosition& at) = 0;
  virtual void save(const RunPosition& at) = 0;
  virtual void export_model() = 0;
};

struct StepLoopResult {
  int64_t first_step = 0;
  int64_t last_step = 0;
  std::vector<double> losses;  // per step run here
  bool interrupted = false;    // stopped by a signal or --stop-after before the last step
  double tokens_per_second = 0;
};

// Runs steps position.step + 1 .. options.steps (or until stopped), advancing `position`.
// `resumed`: the run started from a checkpoint (a run that did no step then writes none).
StepLoopResult run_step_loop(const StepLoopOptions& options, RunPosition& position, bool resumed, AdamW& optimizer,
                             RunLog& log, StepLoopHooks& hooks);

}  // namespace dspark::train
