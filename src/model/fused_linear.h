// Fused projections: several weights that read the same input (q/k/v, gate/up) stacked
// along the output dimension into one Linear, so one matmul replaces several (at ~1 ms per
// decode step, per-call overhead matters). Output columns come in the order of `names`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/linear.h"
#include "loader/safetensors.h"

namespace dspark {

// Loads names[i] + ".weight" ([rows[i], cols]) and, with with_bias, names[i] + ".bias"
// ([rows[i]]) from store; returns one Linear of [sum rows, cols]. A checkpoint saved
// quantized (`dspark quantize`) has I8 weights with f32 names[i] + ".weight_scale"
// ([rows[i], ceil(cols / 32)]): those load as they are, into an int8 (or 4-bit) Linear.
Linear load_fused_linear(const WeightStore& store, const std::vector<std::string>& names,
                         const std::vector<int64_t>& rows, int64_t cols, bool with_bias,
                         const LinearOptions& options);

// True when name + ".weight_scale" exists: the weight was saved quantized.
bool is_quantized(const WeightStore& store, const std::string& name);
// name + ".weight" (I8, [rows, cols]; or 4-bit, two to a byte, [rows, ceil(cols / 2)]:
// model/quantize_checkpoint.h) and its scales; refuses -128 (a nibble of 0), negative or
// non-finite scales and wrong shapes, naming the tensor.
Int8Weights load_int8_weights(const WeightStore& store, const std::string& name, int64_t rows, int64_t cols);

// A [n] vector tensor (norm weights) as f32.
std::vector<float> load_vector(const WeightStore& store, const std::string& name, int64_t n);

}  // namespace dspark
