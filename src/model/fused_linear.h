// Fused projections: several weights that read the same input (q/k/v, gate/up) stacked
// along the output dimension into one Linear, so one matmul replaces several (at ~1 ms per
// decode step, per-call overhead matters). Output columns come in the order of `names`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/linear.h"
#include "model/safetensors.h"

namespace dspark {

// Loads names[i] + ".weight" ([rows[i], cols]) and, with with_bias, names[i] + ".bias"
// ([rows[i]]) from store; returns one Linear of [sum rows, cols].
Linear load_fused_linear(const WeightStore& store, const std::vector<std::string>& names,
                         const std::vector<int64_t>& rows, int64_t cols, bool with_bias,
                         const LinearOptions& options);

// A [n] vector tensor (norm weights) as f32.
std::vector<float> load_vector(const WeightStore& store, const std::string& name, int64_t n);

}  // namespace dspark
