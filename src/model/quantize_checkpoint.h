// Saving a model with int8 (or 4-bit) weights, so that it is quantized once rather than at
// every load: every matmul weight of the decoder layers and the LM head (for tied embeddings
// an lm_head.weight is added; the embedding stays as it was) becomes an I8 tensor `X.weight`
// with f32 scales `X.weight_scale` [rows, ceil(cols / 32)], exactly as
// quantize_int8_weights makes them; every other tensor is copied as it is. 8 bits: X.weight
// is [rows, cols]; 4 bits: [rows, ceil(cols / 2)], byte j of a row holding q + 8 of column
// 2j in its low nibble and of column 2j + 1 in its high one (a last odd column pairs with 8),
// and the scales F16 (the quantizer makes them f16 values).
// config.json gets "quantization_config": {"quant_method": "dspark_int8" (or
// "dspark_int4"), "group_size": 32}; the other files of the directory (tokenizer,
// generation config) are copied.
//
// Loading the result gives the same bits as loading the original with quantization int8
// (int4).
#pragma once

#include <filesystem>

namespace dspark {

// The value of quantization_config.quant_method in a checkpoint saved this way.
inline constexpr const char* kInt8QuantMethod = "dspark_int8";
inline constexpr const char* kInt4QuantMethod = "dspark_int4";

// Writes the quantized copy of model_dir into out_dir (created; must not be model_dir), with
// weights of `bits` bits (8 or 4). Throws for a checkpoint that is already quantized or a
// directory that cannot be written.
void quantize_checkpoint(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir, int bits = 8);

}  // namespace dspark
