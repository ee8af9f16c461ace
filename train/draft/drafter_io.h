// Drafter configs, weights, checkpoints and the speculators-layout export (DESIGN §5).
//
// - make_drafter_config(): a DrafterConfig for a target from shape options; the draft
//   layers copy the target's layer config (model type, widths, norms, RoPE) with
//   num_hidden_layers = draft layers, since the drafter shares the target's embedding and
//   LM head. aux_hidden_state_layer_ids use the speculators convention of
//   spec/drafter_config.h (id k = output of decoder layer k−1); the default spreads k ids
//   like the reference drafters (DFlash's build_target_layer_ids, plus one).
// - Checkpoints: RUN/checkpoint/ as for pretraining (train/checkpoint.h) with config.json =
//   DrafterConfig::to_json() and model.safetensors = the drafter's f32 parameters (no
//   embedding / LM head), so a checkpoint directory is itself a loadable drafter.
// - export_drafter(): OUT/config.json (verifier name and architectures filled in) and
//   OUT/model.safetensors (bf16 or f32), written atomically, config.json last.
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
#include "spec/drafter_config.h"

namespace dspark::train {

class CausalLmImpl;
class DrafterImpl;
class AdamW;

struct DrafterShapeOptions {
  DrafterKind kind = DrafterKind::kDSpark;
  int32_t block_size = 8;                  // γ
  int64_t layers = 1;                      // draft decoder layers
  std::vector<int32_t> aux_layer_ids;      // speculators convention; empty: default spread
  int64_t num_aux_layers = 3;              // for the default spread
  int32_t mask_token_id = -1;              // required (the tokenizer's reserved mask id)
  int64_t markov_rank = 64;                // DSpark only; 0 disables
  int64_t markov_context_size = 0;         // > 0: a contextual Markov head this wide (DSpark only)
  bool confidence_head = true;             // DSpark only
  bool confidence_with_markov = true;      // confidence sees W₁[x_{j−1}] (needs the Markov head)
  std::string verifier_name_or_path;       // recorded in speculators_config.verifier
  std::vector<std::string> verifier_architectures;
};

// Default aux ids (speculators convention) for a target with num_layers decoder layers.
std::vector<int32_t> default_aux_layer_ids(int64_t num_layers, int64_t count);

DrafterConfig make_drafter_config(const ModelConfig& target, const DrafterShapeOptions& options);

// Every parameter under its speculators name, in dtype (f32 or bf16).
std::vector<TensorToWrite> drafter_tensors_to_write(const DrafterImpl& drafter, DType dtype);
// Strict by name and shape: every parameter must be stored; stored tensors the module does
// not have (own embed_tokens / lm_head included) are an error naming the directory.
void load_drafter_weights(DrafterImpl& drafter, const WeightStore& store);
// A drafter directory (checkpoint or export) on top of a loaded target: the config is checked
// against the target, the shared tables taken from it.
std::shared_ptr<DrafterImpl> load_drafter(const std::filesystem::path& dir, const CausalLmImpl& target);
// A fresh drafter for a target (init_weights applied).
std::shared_ptr<DrafterImpl> make_drafter(const DrafterConfig& config, const CausalLmImpl& target, double init_std,
                                          uint64_t seed);

void save_drafter_checkpoint(const std::filesystem::path& run_dir, const DrafterImpl& drafter,
                             const AdamW& optimizer, const nlohmann::json& state);

struct DrafterExportOptions {
  DType dtype = DType::kBF16;                // tensor dtype in model.safetensors
  std::string verifier_name_or_path;         // overrides the config's when non-empty
};
// checkpoint: a drafter run directory, its checkpoint directory, or an exported directory.
void export_drafter(const std::filesystem::path& checkpoint, const std::filesystem::path& out_dir,
                    const DrafterExportOptions& options);
void export_drafter(const DrafterImpl& drafter, const std::filesystem::path& out_dir,
                    const DrafterExportOptions& options);

// Rewrites DIR/config.json with a new confidence calibration (atomically): temperatures for
// greedy and for sampling requests (an empty `sampled` leaves sampling requests on the
// greedy ones) and greedy requests' repeat shifts (empty: none).
void write_confidence_calibration(const std::filesystem::path& dir, const std::vector<float>& greedy,
                                  const std::vector<float>& sampled = {}, const std::vector<float>& repeat_shifts = {});

// True when a run/checkpoint/export directory holds a drafter (speculators config).
bool is_drafter_checkpoint(const std::filesystem::path& dir);

}  // namespace dspark::train
