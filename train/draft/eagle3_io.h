// EAGLE-3 drafter configs, weights, checkpoints and the speculators-layout export
// (spec/eagle3_config.h), the EAGLE-3 counterpart of drafter_io.h.
//
// - make_eagle3_config(): the draft layer copies the target's layer config (model type,
//   widths, norms, RoPE) with one layer, since the drafter shares the target's embedding;
//   aux ids are written explicitly (the engine then never falls back to vLLM's default).
// - Checkpoints: RUN/checkpoint/ as for the other drafters (train/checkpoint.h) with
//   config.json = Eagle3Config::to_json() and model.safetensors = the f32 parameters plus
//   d2t (I64) and t2d (BOOL), so a checkpoint directory is itself a loadable drafter.
// - export_eagle3(): OUT/config.json and OUT/model.safetensors (parameters in bf16 or f32,
//   d2t I64, t2d BOOL), config.json written last.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"
#include "loader/config.h"
#include "loader/safetensors.h"
#include "spec/eagle3_config.h"
#include "train/draft/drafter_io.h"
#include "train/draft/draft_vocab_choice.h"

namespace dspark::train {

class CausalLmImpl;
class Eagle3Impl;
class AdamW;

struct Eagle3ShapeOptions {
  std::vector<int32_t> aux_layer_ids;  // speculators convention; empty: default_eagle3_aux_layer_ids
  int64_t draft_vocab_size = 4096;     // V_d
  int32_t speculative_tokens = 3;      // the engine's default drafts per round
  std::string verifier_name_or_path;
  std::vector<std::string> verifier_architectures;
};

// vLLM's (2, L/2, L−3), except that the deepest id is at least ⌈7L/8⌉: at the depths
// EAGLE-3 was designed for L−3 is ~0.9·L, and a shallow target (8 layers: [2, 4, 7], not
// [2, 4, 5]) should keep a late layer too. Targets too shallow for three distinct ids that
// way get {1, ⌈L/2⌉, L}.
std::vector<int32_t> default_eagle3_aux_layer_ids(int64_t num_layers);

Eagle3Config make_eagle3_config(const ModelConfig& target, const Eagle3ShapeOptions& options);

// Every parameter under its speculators name in dtype (f32 or bf16), then d2t (I64) and t2d (BOOL).
std::vector<TensorToWrite> eagle3_tensors_to_write(const Eagle3Impl& drafter, DType dtype);
// Strict by name and shape; reads either layout's tensor names ("layers.0." or "midlayer.");
// t2d, when stored, must agree with d2t.
void load_eagle3_weights(Eagle3Impl& drafter, const WeightStore& store);

// A fresh drafter for a target: init_weights, the vocabulary, the head from the target's.
std::shared_ptr<Eagle3Impl> make_eagle3(const Eagle3Config& config, const CausalLmImpl& target,
                                        const DraftVocab& vocab, double init_std, uint64_t seed);
// A drafter directory (run, checkpoint or export) on top of a loaded target.
std::shared_ptr<Eagle3Impl> load_eagle3(const std::filesystem::path& dir, const CausalLmImpl& target);

void save_eagle3_checkpoint(const std::filesystem::path& run_dir, const Eagle3Impl& drafter, const AdamW& optimizer,
                            const nlohmann::json& state);

// checkpoint: an EAGLE-3 run directory, its checkpoint directory, or an exported directory.
// Needs no target: the shared embedding is not part of the files.
void export_eagle3(const std::filesystem::path& checkpoint, const std::filesystem::path& out_dir,
                   const DrafterExportOptions& options);
void export_eagle3(const Eagle3Impl& drafter, const std::filesystem::path& out_dir,
                   const DrafterExportOptions& options);

// True when a run/checkpoint/export directory holds an EAGLE-3 drafter.
bool is_eagle3_checkpoint(const std::filesystem::path& dir);

}  // namespace dspark::train
