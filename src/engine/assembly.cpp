#include "engine/assembly.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "core/check.h"
#include "core/clock.h"
#include "core/threads.h"
#include "loader/safetensors.h"

namespace dspark {
namespace {

// Loads (or measures and caches) the target's step-cost profile for the adaptive
// schedule, sized to the engine's batches.
std::shared_ptr<const StepCostTable> load_step_cost(const std::filesystem::path& model_dir, Transformer& target,
                                                    const EngineOptions& engine, bool reprofile,
                                                    const std::filesystem::path& cache_dir, StepProfileReport& report) {
  StepProfileOptions profile;
  profile.max_tokens = std::min<int64_t>(engine.max_batch_tokens, target.options().max_batch_tokens);
  profile.kv_dtype = engine.kv_dtype;
  profile.tokens_per_sequence = std::max<int64_t>(
      9, (profile.max_tokens + target.options().max_sequences - 1) / target.options().max_sequences);
  if (reprofile) std::filesystem::remove(cache_dir / "step_profile" / (step_profile_key(model_dir, target, profile) + ".json"));
  const double t0 = now_seconds();
  // Measured on a thread of its own that ends here: the OpenMP worker team a thread builds
  // outlives its parallel regions, and a serving process whose main thread had built one
  // (measuring for 10+ s) ran ~2.5x slower on its engine thread afterwards.
  std::optional<StepCostTable> table;
  std::exception_ptr error;
  std::thread([&, threads = num_threads()] {
    set_num_threads(threads);
    try {
      table = load_or_measure_step_cost(model_dir, target, profile, cache_dir, &report.source);
    } catch (...) {
      error = std::current_exception();
    }
  }).join();
  if (error) std::rethrow_exception(error);
  report.seconds = now_seconds() - t0;
  return std::make_shared<const StepCostTable>(std::move(*table));
}

}  // namespace

Assembly assemble(const AssemblyOptions& o) {
  DSPARK_CHECK(std::filesystem::is_directory(o.model_dir), "model directory '{}' does not exist",
               o.model_dir.string());
  ModelConfig config = ModelConfig::from_file(o.model_dir / "config.json");

  SpeculatorOptions speculator = o.speculator;
  speculator.compute = o.target.compute;
  speculator.max_running = o.engine.max_running;
  const SpeculatorPlan plan(std::move(speculator), config);

  TransformerOptions target = o.target;
  target.capture_layers = plan.capture_layers();
  target.max_sequences = o.engine.max_running;
  Assembly a;
  {
    const WeightStore weights(o.model_dir);
    a.target = std::make_unique<Transformer>(std::move(config), weights, target);
  }
  a.proposer = plan.build(*a.target);
  a.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_dir(o.model_dir));

  a.engine = o.engine;
  a.engine.spec_schedule = a.proposer ? o.schedule : SpecSchedule::kFixed;
  if (a.engine.spec_schedule == SpecSchedule::kAdaptive && !a.engine.step_cost) {
    StepProfileReport report;
    a.engine.step_cost = load_step_cost(o.model_dir, *a.target, a.engine, o.reprofile,
                                        o.profile_cache.empty() ? default_cache_dir() : o.profile_cache, report);
    a.profile = report;
  }
  return a;
}

}  // namespace dspark
