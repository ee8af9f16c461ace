// Training checkpoints: everything needed to continue a run bit for bit.
//
// Layout of RUN/checkpoint/: config.json (ModelConfig::to_json, so the directory also reads
// as a Hugging Face model with f32 weights), model.safetensors (f32 parameters, Hugging Face
// names), optimizer.safetensors (f32 AdamW moments "exp_avg.<param>", "exp_avg_sq.<param>")
// and state.json (step, optimizer step count, sampler seed, options, counters).
//
// Writes are atomic: a complete RUN/checkpoint.tmp/ is renamed into place; the previous
// checkpoint is kept as RUN/checkpoint.old/ until the rename has happened, and
// find_checkpoint() falls back to it if a crash hit between the two renames.
#pragma once

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "loader/config.h"
#include "loader/safetensors.h"

namespace dspark::train {

class CausalLmImpl;
class AdamW;

void save_checkpoint(const std::filesystem::path& run_dir, const CausalLmImpl& model, const AdamW& optimizer,
                     const nlohmann::json& state);
// The same layout for any model: config.json is `config`, model.safetensors the given
// (f32) tensors. Other trainers (drafters) use this directly.
void save_checkpoint_files(const std::filesystem::path& run_dir, const nlohmann::json& config,
                           const std::vector<TensorToWrite>& tensors, const AdamW& optimizer,
                           const nlohmann::json& state);

// Accepts a run directory (uses RUN/checkpoint, or RUN/checkpoint.old) or a checkpoint
// directory itself; returns an empty path when there is none.
std::filesystem::path find_checkpoint(const std::filesystem::path& dir);

// Writes PATH.tmp, then renames it over PATH, so a reader never sees half a file.
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j);

nlohmann::json read_checkpoint_state(const std::filesystem::path& checkpoint_dir);
ModelConfig read_checkpoint_config(const std::filesystem::path& checkpoint_dir);
// Restores parameters and, when optimizer is not null, the optimizer moments and step count.
void load_checkpoint(const std::filesystem::path& checkpoint_dir, CausalLmImpl& model, AdamW* optimizer);
// Restores only the optimizer moments and step count.
void load_optimizer_checkpoint(const std::filesystem::path& checkpoint_dir, AdamW& optimizer);

}  // namespace dspark::train
