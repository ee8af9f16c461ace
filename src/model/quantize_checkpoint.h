// Saving a model with int8 weights, so that it is quantized once rather than at every
// load: every matmul weight of the decoder layers and the LM head (for tied embeddings an
// lm_head.weight is added; the embedding stays as it was) becomes an I8 tensor `X.weight`
// with f32 scales `X.weight_scale` [rows, ceil(cols / 32)], exactly as
// quantize_int8_weights makes them; every other tensor is copied as it is. config.json gets
// "quantization_config": {"quant_method": "dspark_int8", "group_size": 32}; the other
// files of the directory (tokenizer, generation config) are copied.
//
// Loading the result gives the same bits as loading the original with quantization int8.
#pragma once

#include <filesystem>

namespace dspark {

// The value of quantization_config.quant_method in a checkpoint saved this way.
inline constexpr const char* kInt8QuantMethod = "dspark_int8";

// Writes the quantized copy of model_dir into out_dir (created; must not be model_dir).
// Throws for a checkpoint that is already quantized or a directory that cannot be written.
void quantize_checkpoint(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir);

}  // namespace dspark
