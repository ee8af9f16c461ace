// A model's own choice of matmul weights at load: config.json's "quantization" key, "none",
// "int8" or "int4", the same values as --quantization. It is what --quantization (the target)
// and --draft-quantization (a DSpark / DFlash drafter, EAGLE-3 head or draft model) mean by
// auto, so a drafter can ship quantized at load while its file keeps the bf16 weights
// that training resumes from. (A checkpoint saved quantized by `dspark quantize` says so
// in quantization_config instead and always loads int8.)
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "kernels/linear.h"
#include "loader/config.h"

namespace dspark {

// model_dir/config.json's "quantization", or nullopt when the key (or the file: the
// loader reports that) is absent. Throws Error, naming the file, for a value that is not
// "none", "int8" or "int4", or a config.json that is not a JSON object.
std::optional<WeightQuantization> configured_quantization(const std::filesystem::path& model_dir);

// Throws Error naming `source` unless `value` is empty (unset), "none", "int8" or "int4": the check
// of every config that carries the key.
void check_configured_quantization(const std::string& value, const std::string& source);

// How a model's weights were saved by `dspark quantize` (its quantization_config): kInt8,
// kInt4, or nullopt for weights saved unquantized.
std::optional<WeightQuantization> stored_quantization(const ModelConfig& config);

}  // namespace dspark
