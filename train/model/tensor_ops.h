// Small libtorch building blocks shared by the trainer's model mirror (transformer.h) and
// the block drafters (draft/drafter.h), written once so both compute attention the same way.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace dspark::train {

// A module holding one parameter named "weight" (an embedding-like table), so that the
// parameter's name matches the Hugging Face / speculators tensor name.
struct WeightHolder : torch::nn::Module {
  WeightHolder(int64_t rows, int64_t cols) { weight = register_parameter("weight", torch::zeros({rows, cols})); }
  torch::Tensor weight;  // [rows, cols]
};

// rotate_half(x) = cat(-x2, x1) on the last dimension (RoPE, non-interleaved).
torch::Tensor rotate_half(const torch::Tensor& x);

// [B, n_kv, T, D] -> [B, n_kv * n_rep, T, D], each kv head repeated n_rep times in a row.
torch::Tensor repeat_kv(const torch::Tensor& x, int64_t n_rep);

// The dtype an autocast linear would cast its input to (no-op outside autocast).
torch::Tensor to_autocast_dtype(const torch::Tensor& x);

}  // namespace dspark::train
