// Test fixtures for EAGLE-3 drafters: a small Eagle3Config for a target and randomly
// initialised drafter directories (config.json + model.safetensors with d2t / t2d), in the
// speculators layout or the original one, written from the tensor list the loader checks
// (spec/eagle3_config.h: eagle3_tensors).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loader/config.h"
#include "spec/eagle3_config.h"

namespace dspark::testing {

// A one-layer llama (or qwen3) draft layer with the target's width and vocabulary;
// draft_vocab rows of lm_head (0 = the whole vocabulary).
Eagle3Config make_eagle3_config(const ModelConfig& target, std::vector<int32_t> aux_layer_ids,
                                int64_t draft_vocab = 0, const std::string& layer_type = "llama");

struct Eagle3WeightsSpec {
  uint64_t seed = 11;
  bool write_t2d = true;
  // Target ids of the draft vocabulary (sorted); empty = default_draft_ids().
  std::vector<int32_t> draft_ids;
  // Edits config.json before it is written (a bad-config test).
  std::function<void(nlohmann::json&)> edit_config;
  // Edits one tensor's values after random init (name, values).
  std::function<void(const std::string& name, std::vector<float>& values)> edit;
  // Edits d2t after it is computed.
  std::function<void(std::vector<int64_t>& d2t)> edit_d2t;
};

// Creates dir and writes config.json and model.safetensors in the config's layout. Returns dir.
std::filesystem::path write_random_eagle3(const Eagle3Config& config, const std::filesystem::path& dir,
                                          const Eagle3WeightsSpec& spec = {});

// The draft vocabulary the fixture writes for `config` when spec.draft_ids is empty.
std::vector<int32_t> default_draft_ids(const Eagle3Config& config);

}  // namespace dspark::testing
