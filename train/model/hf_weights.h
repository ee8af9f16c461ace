// Moving CausalLm weights between libtorch and Hugging Face safetensors directories.
//
// - model_tensors(): every parameter under its Hugging Face name, converted to f32 or bf16
//   (round to nearest even) for write_safetensors.
// - load_hf_weights(): strict by name and shape: every parameter of the model must be in the
//   store; tensors the model does not have are an error, except rotary inv_freq buffers and
//   a stored lm_head.weight of a tied model (both carry no information here).
// - load_hf_model() / hf_logits(): the one-call path a parity test uses: read config.json and
//   the weights of a directory, run the f32 forward on one token sequence.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/dtype.h"
#include "loader/safetensors.h"
#include "train/model/transformer.h"

namespace dspark::train {

// One CPU tensor as a safetensors entry (f32 or bf16).
TensorToWrite tensor_to_write(const std::string& name, const torch::Tensor& tensor, DType dtype);
// A stored tensor as an f32 torch tensor (any stored dtype), shape-checked when `expected`
// is non-empty.
torch::Tensor tensor_from_store(const WeightStore& store, const std::string& name,
                                std::span<const int64_t> expected = {});

std::vector<TensorToWrite> model_tensors(const CausalLmImpl& model, DType dtype);
void load_hf_weights(CausalLmImpl& model, const WeightStore& store);

std::shared_ptr<CausalLmImpl> load_hf_model(const std::filesystem::path& dir);
// Logits of every position of `tokens` (f32 forward, positions 0..T-1). [T, vocab]
torch::Tensor hf_logits(const CausalLmImpl& model, std::span<const int32_t> tokens);
torch::Tensor hf_logits(const std::filesystem::path& dir, std::span<const int32_t> tokens);

}  // namespace dspark::train
