// dspark profile: measure (or show the cached) step-cost profile of a target model, the
// SPS(B) table the adaptive speculation schedule plans with.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/clock.h"
#include "core/threads.h"
#include "engine/step_profile.h"

namespace dspark::cli {
namespace {

struct ProfileArgs {
  ModelArgs model;
  int64_t context_length = 256;
  int64_t max_sequences = 32;
};

void run_profile(const ProfileArgs& args) {
  Assembly loaded = assemble(args.model, SpeculatorOptions{}, args.max_sequences);
  StepProfileOptions o;
  o.max_tokens = args.model.max_batch_tokens;
  o.context_length = args.context_length;
  o.kv_dtype = parse_dtype(args.model.kv_dtype);
  o.tokens_per_sequence = std::max<int64_t>(9, (o.max_tokens + args.max_sequences - 1) / args.max_sequences);
  const auto cache = default_cache_dir();
  const auto key = step_profile_key(args.model.model_dir, *loaded.target, o);
  if (args.model.reprofile) std::filesystem::remove(cache / "step_profile" / (key + ".json"));
  StepProfileSource source = StepProfileSource::kMeasured;
  const double t0 = now_seconds();
  const StepCostTable table = load_or_measure_step_cost(args.model.model_dir, *loaded.target, o, cache, &source);
  std::printf("# step-cost profile of %s (%s weights, %s KV, %d threads, context %lld): %s in %.1f s; cache "
              "%s/step_profile/%s.json\n",
              args.model.model_dir.c_str(),
              args.model.quantization != "none" ? args.model.quantization.c_str() : args.model.dtype.c_str(),
              args.model.kv_dtype.c_str(), num_threads(),
              static_cast<long long>(o.context_length), step_profile_source_name(source), now_seconds() - t0,
              cache.c_str(), key.c_str());
  std::printf("%8s %12s %10s %12s\n", "tokens", "steps/s", "ms/step", "tokens/s");
  for (int64_t b = 1; b <= table.max_tokens(); b += (b < 16 ? 1 : (b < 64 ? 8 : 32))) {
    const double sps = table.sps(b);
    std::printf("%8lld %12.1f %10.3f %12.0f\n", static_cast<long long>(b), sps, 1e3 / sps, sps * static_cast<double>(b));
  }
}

}  // namespace

void register_profile(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand("profile", "Measure the target's step cost SPS(B) used by the adaptive schedule");
  add_model_options(cmd, args->model);
  cmd->add_option("--context-length", args->context_length, "Cached positions per profiled sequence")
      ->capture_default_str();
  cmd->add_option("--max-sequences", args->max_sequences, "Sequences the profiled batches are spread over")
      ->capture_default_str();
  cmd->callback([args] { run_profile(*args); });
}

}  // namespace dspark::cli
