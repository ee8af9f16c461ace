// Test fixtures for block drafters: small DrafterConfigs and randomly initialised drafter
// directories (config.json + model.safetensors in the speculators layout), written from the
// same tensor list the loader checks (spec/drafter_tensors.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "loader/config.h"
#include "spec/drafter_config.h"

namespace dspark::testing {

// A DSpark (or DFlash) drafter config for a target: layer config of `layer_type` with the
// target's hidden size and vocabulary, `num_layers` draft layers, the given aux ids.
DrafterConfig make_drafter_config(const ModelConfig& target, DrafterKind kind, std::vector<int32_t> aux_layer_ids,
                                  int32_t block_size, int64_t num_layers = 1, int64_t markov_rank = 8,
                                  const std::string& layer_type = "qwen3");

struct DrafterWeightsSpec {
  uint64_t seed = 7;
  DType file_dtype = DType::kF32;
  float markov_scale = 1.0f;        // scale of W₁ and W₂ entries (a contextual head's MLP: by fan-in)
  bool own_embeddings = false;      // also write embed_tokens.weight / lm_head.weight
  // Optional override of one tensor's values after random init (name, values).
  std::function<void(const std::string& name, std::vector<float>& values)> edit;
};

// Creates dir, writes config.json (config.to_json()) and model.safetensors. Returns dir.
std::filesystem::path write_random_drafter(const DrafterConfig& config, const std::filesystem::path& dir,
                                           const DrafterWeightsSpec& spec = {});

}  // namespace dspark::testing
