// Inverse RoPE frequencies of a model, with its rope_scaling applied, computed in f32
// exactly as Hugging Face transformers does so that positions rotate identically.
#pragma once

#include <vector>

#include "model/config.h"

namespace dspark {

// Returns inv_freq: [head_dim / 2].
std::vector<float> rope_inverse_frequencies(const ModelConfig& config);

}  // namespace dspark
