#include "train/step_loop.h"

#include <cmath>

#include <fmt/format.h>

#include "core/check.h"
#include "core/clock.h"
#include "train/pretrain/schedule.h"
#include "train/stop_signals.h"

namespace dspark::train {

RunPosition RunPosition::resumed(const nlohmann::json& state, const std::filesystem::path& checkpoint, uint64_t seed) {
  RunPosition p;
  p.step = state.at("step").get<int64_t>();
  p.tokens_seen = state.value("tokens_seen", int64_t{0});
  p.elapsed_seconds = state.value("elapsed_seconds", 0.0);
  const uint64_t trained_with = state.value("seed", seed);
  DSPARK_CHECK(trained_with == seed, "{}: checkpoint was trained with --seed {}, now {}; batches would differ",
               checkpoint.string(), trained_with, seed);
  return p;
}

nlohmann::json RunPosition::state(uint64_t seed) const {
  return {{"step", step}, {"seed", seed}, {"tokens_seen", tokens_seen}, {"elapsed_seconds", elapsed_seconds}};
}

std::string ProgressReport::tail() const {
  return fmt::format("lr {:.2e} gnorm {:.3f} tok/s {:.0f} elapsed {} eta {}", lr, grad_norm, tokens_per_second,
                     format_duration(at.elapsed_seconds), format_duration(eta_seconds));
}

nlohmann::json ProgressReport::metrics() const {
  return {{"type", "train"},         {"step", at.step},
          {"lr", lr},                {"grad_norm", grad_norm},
          {"tokens_per_second", tokens_per_second}, {"tokens_seen", at.tokens_seen},
          {"elapsed_seconds", at.elapsed_seconds}};
}

StepLoopResult run_step_loop(const StepLoopOptions& o, RunPosition& position, bool resumed, AdamW& optimizer,
                             RunLog& log, StepLoopHooks& hooks) {
  StopSignals signals;
  const CosineSchedule schedule{o.lr, o.min_lr, o.warmup, o.steps};
  const double run_start = now_seconds();
  StepLoopResult result;
  result.first_step = position.step + 1;
  result.last_step = position.step;
  ProgressInterval interval;
  int64_t steps_here = 0, tokens_here = 0, last_saved = position.step;
  double train_seconds = 0;  // this invocation's
  while (position.step < o.steps) {
    if (signals.should_stop(position.step, steps_here, o.stop_after, log)) {
      result.interrupted = true;
      break;
    }
    const double t0 = now_seconds();
    const int64_t this_step = position.step + 1;
    int64_t tokens = 0;
    const double loss = hooks.train_step(this_step, tokens);
    const double grad_norm = optimizer.clip_grad_norm(o.grad_clip);
    const double lr = schedule.lr_at(this_step);
    optimizer.step(lr);
    optimizer.zero_grad();
    position.step = this_step;
    ++steps_here;
    position.tokens_seen += tokens;
    tokens_here += tokens;
    DSPARK_CHECK(std::isfinite(loss), "step {}: loss is {}; stopping (last checkpoint at step {})", position.step,
                 loss, last_saved);
    result.losses.push_back(loss);
    result.last_step = position.step;
    const double dt = now_seconds() - t0;
    train_seconds += dt;
    position.elapsed_seconds += dt;
    interval.add(tokens, dt);
    if (position.step % o.log_every == 0 || position.step == o.steps) {
      hooks.log_progress(ProgressReport{position, o.steps, interval.steps, lr, grad_norm,
                                        interval.tokens_per_second(), interval.eta_seconds(o.steps - position.step)});
      interval.reset();
    }
    if (o.eval_every > 0 && position.step % o.eval_every == 0 && position.step < o.steps) hooks.evaluate(position);
    if (o.save_every > 0 && position.step % o.save_every == 0 && position.step < o.steps) {
      hooks.save(position);
      last_saved = position.step;
    }
  }
  if (position.step >= o.steps && steps_here > 0) hooks.evaluate(position);
  if (steps_here > 0 || !resumed) hooks.save(position);
  if (position.step >= o.steps && o.export_at_end) hooks.export_model();
  result.tokens_per_second = train_seconds > 0 ? static_cast<double>(tokens_here) / train_seconds : 0.0;
  log.print("done: step {}/{} in {} ({:.0f} tok/s this run, {} total)", position.step, o.steps,
            format_duration(now_seconds() - run_start), result.tokens_per_second,
            format_duration(position.elapsed_seconds));
  return result;
}

}  // namespace dspark::train
