// ModelConfig: the architecture of a Hugging Face decoder-only checkpoint, parsed from its
// config.json and validated once. Supported model_type values: llama, mistral, qwen2, qwen3.
// Anything the engine cannot run faithfully (unknown model_type, rope_scaling types other
// than linear, dynamic, yarn and llama3, inconsistent head sizes, non-positive sizes) is
// rejected with an Error that names the file and the offending field. Fields follow the Hugging Face modeling code of
// each type, so the engine never guesses:
//   - biases: qwen2 has q/k/v bias and no o bias whatever the file says; llama and qwen3 read
//     attention_bias (true = bias on q, k, v and o); mistral has none. mlp_bias is llama-only.
//   - qwen3 always applies per-head RMSNorm to q and k (qk_norm).
//   - head_dim may differ from hidden_size / num_attention_heads (Qwen3, Mistral-Nemo).
//   - sliding-window attention as Hugging Face applies it: mistral uses `sliding_window` on
//     every layer; qwen2/qwen3 only with use_sliding_window, on the layers named
//     "sliding_attention" in layer_types (default: layers >= max_window_layers); llama never.
//     A window >= max_position_embeddings changes nothing and is stored as none.
//   - hidden_act must be silu.
//   - rope_theta / rope_scaling are also read from "rope_parameters" (newer transformers).
// JSON types are strict: an integer field given as "512" or 12.5 is an Error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dspark {

enum class ModelType { kLlama, kMistral, kQwen2, kQwen3 };

// rope_scaling of config.json. Fields a kind does not use keep their defaults, so two
// configs of the same scaling compare equal. Numbers the Hugging Face code combines in
// Python (double) are kept as double; rope_frequencies.cpp rounds them where torch would.
struct RopeScaling {
  enum class Kind { kNone, kLinear, kDynamic, kYarn, kLlama3 };
  Kind kind = Kind::kNone;
  double factor = 1.0;                          // linear, dynamic, yarn; llama3: low-frequency scale
  float low_freq_factor = 1.0f;                 // llama3
  float high_freq_factor = 4.0f;                // llama3
  // llama3 (required); dynamic, yarn: 0 = absent, the config's max_position_embeddings.
  int64_t original_max_position_embeddings = 8192;
  double beta_fast = 32.0;                      // yarn: rotations where extrapolation ends
  double beta_slow = 1.0;                       // yarn: rotations where interpolation starts
  double mscale = 0.0;                          // yarn: 0 = absent (DeepSeek-style mscale pair)
  double mscale_all_dim = 0.0;                  // yarn: 0 = absent
  double attention_factor = 0.0;                // yarn: cos/sin scale; 0 = absent (derived)
  bool truncate = true;                         // yarn: floor/ceil the correction range

  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  ModelType model_type = ModelType::kLlama;
  std::string model_type_name;        // as written in config.json
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;    // defaults to num_attention_heads
  int64_t head_dim = 0;               // defaults to hidden_size / num_attention_heads
  int64_t max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  // Sliding-window attention: a layer with a window W lets position p see positions
  // (p - W, p] (the last W, itself included). 0 = no layer has a window.
  int64_t sliding_window = 0;
  std::vector<bool> sliding_layers;   // [num_hidden_layers] when sliding_window > 0: layer uses it
  bool tie_word_embeddings = false;   // lm_head shares model.embed_tokens.weight
  int stored_weight_bits = 0;         // quantization_config: 8 (dspark_int8), 4 (dspark_int4), 0: not quantized
  bool attention_bias = false;        // bias on q/k/v projections (qwen2: always true)
  bool attention_output_bias = false; // bias on o_proj (llama with attention_bias=true)
  bool mlp_bias = false;              // bias on gate/up/down (llama mlp_bias)
  bool qk_norm = false;               // per-head RMSNorm on q and k before RoPE (qwen3)
  int64_t bos_token_id = -1;          // -1 when absent
  int64_t eos_token_id = -1;          // first of eos_token_id when it is a list; -1 when absent
  std::vector<int64_t> eos_token_ids; // every id of eos_token_id (instruct models list several)
  std::string torch_dtype = "float32";  // storage dtype named by the checkpoint ("bfloat16", ...)

  int64_t q_size() const { return num_attention_heads * head_dim; }    // width of q_proj output
  int64_t kv_size() const { return num_key_value_heads * head_dim; }   // width of k/v_proj output
  // Attention window of decoder layer `layer`; 0 = full causal attention.
  int64_t attention_window(int64_t layer) const {
    return sliding_window > 0 && sliding_layers[static_cast<size_t>(layer)] ? sliding_window : 0;
  }

  // Parses and validates; `source` names the file in error messages.
  static ModelConfig from_json(const nlohmann::json& json, const std::string& source);
  // Reads DIR/config.json (or the file itself when given a file).
  static ModelConfig from_file(const std::filesystem::path& path);
  // Writes a config.json (Hugging Face field names) that from_json reads back identically.
  // Throws when the flags cannot be expressed for this model_type (e.g. qk_norm on llama).
  nlohmann::json to_json() const;

  bool operator==(const ModelConfig&) const = default;
};

// "llama", "mistral", "qwen2", "qwen3".
std::string_view model_type_to_string(ModelType type);

}  // namespace dspark
