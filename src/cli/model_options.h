// Options every model-running subcommand shares (model directory, dtypes, threads,
// context, sampling, speculator), registered once and turned into loaded objects once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/assembly.h"
#include "engine/engine.h"
#include "engine/generation.h"
#include "tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "spec/proposer_factory.h"

namespace dspark::cli {

struct ModelArgs {
  std::string model_dir;
  std::string dtype = "auto";      // matmul compute dtype; auto resolves after parsing (auto_compute_dtype)
  std::string kv_dtype = "auto";   // KV cache storage; auto resolves to the compute dtype after parsing
  std::string isa = "auto";        // kernel ISA cap (auto = the best this CPU has, or DSPARK_ISA)
  // matmul weights: none (the compute dtype) or int8; auto (the model config's
  // "quantization", else none) until the command line is read
  std::string quantization = "auto";
  int threads = 0;                 // 0 = OpenMP default
  int64_t max_model_len = 0;       // 0 = the model's
  int64_t max_batch_tokens = 256;  // tokens per forward (prefill chunk)
  std::string spec_schedule = "adaptive";  // fixed | adaptive (prefix scheduler)
  bool reprofile = false;          // measure SPS(B) again instead of using the cached profile
  bool no_prefix_caching = false;  // --no-prefix-caching: every prompt computed in full
  bool no_confidence_adaptation = false;  // --no-confidence-adaptation: the drafter's confidences as they are
};

void add_model_options(CLI::App* cmd, ModelArgs& args);
void add_generation_options(CLI::App* cmd, GenerationOptions& options);
// --regex / --choice / --grammar / --json-schema / --json-object (part of add_generation_options).
void add_output_format_options(CLI::App* cmd, GenerationOptions& options);
void add_speculator_options(CLI::App* cmd, SpeculatorOptions& options);

// Applies the ISA cap (--isa); load_model prints which kernels run (one line, once).
// --dtype auto: f32 for a float32 checkpoint (config.json torch_dtype, or no dtype named),
// bf16 for everything else (bfloat16, and float16, which has no kernels here).
std::string auto_compute_dtype(const std::filesystem::path& model_dir);
void apply_isa(const ModelArgs& args);

EngineOptions engine_options(const ModelArgs& args, int64_t max_running);
// Applies the thread count and the ISA cap, then builds target, tokenizer, speculator and
// schedule through the one assembly path (engine/assembly.h) for an engine of max_running
// requests. Prints which kernels run (one line, once per process) and, for a speculative
// engine under --spec-schedule adaptive, where the step-cost profile came from.
Assembly assemble(const ModelArgs& args, const SpeculatorOptions& speculator, int64_t max_running);

// Runs a short greedy request so that first-use costs (page faults on weights and KV,
// lazily created kernels) do not land in a measurement.
void warm_up(Engine& engine, const std::vector<int32_t>& prompt);

// "0.61 0.40 0.22 ...": per-position acceptance rates as vLLM defines them (accepted at
// position i / rounds with drafts).
std::string format_position_rates(const SpecDecodeMetrics& metrics);

}  // namespace dspark::cli
