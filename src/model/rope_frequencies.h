// Inverse RoPE frequencies of a model, with its rope_scaling applied, computed in f32
// exactly as Hugging Face transformers does so that positions rotate identically: tensor
// operations in f32 with one rounding each, scalar arithmetic (Python floats) in double.
//
// Kinds: linear (inv_freq / factor), dynamic NTK (see below), yarn (inv_freq blended
// between interpolation and extrapolation along a linear ramp, plus a cos/sin scale),
// llama3 (long wavelengths divided by factor, smooth blend in between).
//
// Dynamic NTK: transformers recomputes the base on every forward from the current
// sequence length once it exceeds max_position_embeddings. That makes a token's keys
// depend on how long its sequence later grows (cached keys would go stale) and a row's
// output depend on the other rows of a batch. dspark follows vLLM instead: the base is
// fixed once, for max_position = original_max_position_embeddings * factor:
//   base' = base * ((factor * max_position / original) - (factor - 1)) ^ (dim / (dim - 2)).
// Within the original context this differs from transformers (which leaves it unscaled).
#pragma once

#include <vector>

#include "loader/config.h"

namespace dspark {

// Returns inv_freq: [head_dim / 2].
std::vector<float> rope_inverse_frequencies(const ModelConfig& config);

// The factor that multiplies cos and sin (transformers' attention_scaling): yarn's
// attention_factor, 1 for every other kind.
float rope_attention_factor(const ModelConfig& config);

}  // namespace dspark
