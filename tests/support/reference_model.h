// A deliberately plain, scalar implementation of the Llama / Mistral / Qwen2 / Qwen3
// forward pass, written from the Hugging Face definitions and sharing no kernel code with
// the engine: the independent reference for parity tests. Recomputes the whole sequence
// each call (no cache), with causal attention (limited to the sliding window of layers
// that have one) and the config's RoPE scaling (frequencies worked out in double).
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "loader/config.h"
#include "support/reference_ops.h"

namespace dspark::testing {

class ReferenceModel {
 public:
  // round_to_bf16: round matmul inputs and weights to bf16 (mirrors the engine's bf16
  // compute: bf16 operands, f32 accumulation); everything else stays f32.
  ReferenceModel(const std::filesystem::path& dir, bool round_to_bf16);

  // Logits for every position: [tokens.size(), vocab]. Optionally the output of every
  // decoder layer: hidden_per_layer[l] is [tokens.size(), hidden].
  std::vector<float> forward(const std::vector<int32_t>& tokens,
                             std::vector<std::vector<float>>* hidden_per_layer = nullptr) const;

  const ModelConfig& config() const { return config_; }

 private:
  ModelConfig config_;
  bool bf16_;
  std::vector<float> embed_, final_norm_, lm_head_;
  std::vector<ref::LayerWeights> layers_;
};

}  // namespace dspark::testing
