// Writes small randomly initialised Hugging Face model directories (config.json +
// model.safetensors, optionally tokenizer.json) for tests: every supported model_type and
// its options.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace dspark::testing {

struct TinyModelSpec {
  std::string model_type = "llama";  // llama, mistral, qwen2, qwen3
  int64_t vocab_size = 97;
  int64_t hidden_size = 64;
  int64_t num_layers = 2;
  int64_t num_heads = 4;
  int64_t num_kv_heads = 2;
  int64_t head_dim = 16;
  int64_t intermediate_size = 96;
  int64_t max_position_embeddings = 256;
  bool tie_word_embeddings = false;
  bool attention_bias = false;       // llama: q/k/v/o bias; qwen2 always has q/k/v bias
  bool llama3_rope_scaling = false;
  // "linear", "dynamic" or "yarn" rope_scaling with factor rope_factor and
  // original_max_position_embeddings 64; empty = none.
  std::string rope_scaling;
  double rope_factor = 4.0;
  // > 0: mistral: sliding_window on every layer; qwen2/qwen3: use_sliding_window with
  // max_window_layers (layers from it on slide) or the explicit layer_types.
  int64_t sliding_window = 0;
  int64_t max_window_layers = 0;
  std::vector<std::string> layer_types;  // written when not empty ("full_attention", ...)
  DType file_dtype = DType::kF32;    // how tensors are stored
  uint64_t seed = 1;
};

// Named presets.
// The shape of models/tiny-target (the embedded default target): llama, 8 layers, hidden
// 512, 8 heads of 64 (4 KV heads), MLP 1536, vocabulary 8192, context 1024, tied
// embeddings, bf16 file; random weights. For benchmarks whose cost should be the real
// model's without depending on its trained files.
TinyModelSpec tiny_target_shape();

// Creates dir (and parents) and writes the model. Returns dir.
std::filesystem::path write_tiny_model(const TinyModelSpec& spec, const std::filesystem::path& dir);

// Writes dir/tokenizer.json: a byte-level BPE tokenizer with no merges and vocab_size
// tokens, enough to decode whatever a tiny random model emits. Token i is the character
// first + i while that is printable ASCII ('~' at most), then U+0100, U+0101, ... (the byte
// alphabet's characters of bytes 0, 1, ...). Returns dir.
std::filesystem::path write_tiny_tokenizer(const std::filesystem::path& dir, int64_t vocab_size, char first = '!');

// write_tiny_model into a fresh temp dir `name`, with write_tiny_tokenizer of the spec's
// vocabulary starting at `first`. Returns the directory.
std::filesystem::path write_tiny_model_with_tokenizer(const TinyModelSpec& spec, const std::string& name,
                                                      char first = '!');

// A fresh empty directory under the system temp dir, unique per call.
std::filesystem::path make_temp_dir(const std::string& name);

}  // namespace dspark::testing
