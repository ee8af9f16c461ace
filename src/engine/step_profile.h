// Step-cost profile of a target model: SPS(B), forward steps per second for a batch of B
// tokens, which the prefix scheduler trades against predicted acceptance. Measured once
// (a few seconds) and cached on disk, keyed by everything the numbers depend on: model
// configuration and weights file, compute dtype, KV cache dtype, threads, CPU model, batch
// range.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/dtype.h"
#include "model/transformer.h"
#include "spec/prefix_scheduler.h"

namespace dspark {

struct StepProfileOptions {
  int64_t max_tokens = 64;       // profile B = 1 .. max_tokens
  int64_t context_length = 256;  // KV history each profiled sequence attends over
  DType kv_dtype = DType::kF32;  // the KV cache's element type (attention reads it every step)
  int32_t repeats = 5;           // timed forwards per B (the fastest counts: noise only adds)
  int64_t tokens_per_sequence = 9;  // a verification step: anchor + 8 drafts per request
  // A cached profile whose steps are this much slower than a spot check is measured again.
  double stale_ratio = 1.5;
};

// Measures SPS(B) by running forwards of B tokens spread over ceil(B / tokens_per_sequence)
// sequences with context_length cached positions each. Exact for B <= 32, then every 8
// tokens with linear interpolation of the step time in between.
StepCostTable measure_step_cost(Transformer& model, const StepProfileOptions& options);

// The cache key: a short hex digest of what the profile depends on.
std::string step_profile_key(const std::filesystem::path& model_dir, const Transformer& model,
                             const StepProfileOptions& options);

enum class StepProfileSource {
  kCached,         // read from the cache (and confirmed by a spot check)
  kMeasured,       // no usable cache entry: measured and stored
  kMeasuredStale,  // the cached entry was much slower than a spot check: measured again
};
const char* step_profile_source_name(StepProfileSource source);

// Loads the cached profile for this key from cache_dir, or measures and stores it. A cached
// profile is spot-checked first (one-token and tokens_per_sequence-token steps timed
// again, well under a second): if its steps are over stale_ratio times slower than the
// machine is now, it was measured under load and is measured again. `source` (optional)
// tells which happened.
StepCostTable load_or_measure_step_cost(const std::filesystem::path& model_dir, Transformer& model,
                                        const StepProfileOptions& options, const std::filesystem::path& cache_dir,
                                        StepProfileSource* source = nullptr);

// $DSPARK_CACHE_DIR, else $XDG_CACHE_HOME/dspark, else ~/.cache/dspark.
std::filesystem::path default_cache_dir();

}  // namespace dspark
