// assemble(): the one path from options to a runnable engine's parts. It reads the
// target's config and the speculator's once, derives the layers the target must capture
// for a block drafter, loads the target (its safetensors opened once), builds the
// proposer over it (a block drafter shares the target's embedding table and LM head, see
// spec/dspark_proposer.h), and picks the speculation schedule: for the adaptive one, the
// target's step-cost profile is read from the cache or measured.
//
// The speculator's compute dtype, weight quantization and slot count follow the target's
// options and the engine's max_running; the target's sequence count is max_running.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "engine/engine.h"
#include "engine/step_profile.h"
#include "model/transformer.h"
#include "spec/proposer_factory.h"
#include "tokenizer/tokenizer.h"

namespace dspark {

struct AssemblyOptions {
  std::filesystem::path model_dir;
  TransformerOptions target;        // capture_layers and max_sequences are set here
  SpeculatorOptions speculator;     // compute, quantization and max_running are set here
  EngineOptions engine;             // spec_schedule is set here, and step_cost unless given
  SpecSchedule schedule = SpecSchedule::kAdaptive;  // for a speculative engine
  bool reprofile = false;           // adaptive: measure SPS(B) again instead of reading the cache
  std::filesystem::path profile_cache;  // empty = default_cache_dir()
};

// What the adaptive schedule's profile came from, for the start-up log.
struct StepProfileReport {
  StepProfileSource source = StepProfileSource::kMeasured;
  double seconds = 0;               // spent loading or measuring it
};

struct Assembly {
  std::unique_ptr<Transformer> target;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Proposer> proposer;      // null without a speculator
  EngineOptions engine;                    // the options with the chosen schedule
  std::optional<StepProfileReport> profile;  // set when the adaptive schedule is on
};

// Throws Error naming the file and field for a missing directory, a bad config, or a
// speculator that does not fit the target.
Assembly assemble(const AssemblyOptions& options);

}  // namespace dspark
