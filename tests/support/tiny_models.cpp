#include "support/tiny_models.h"

#include <atomic>
#include <cmath>
#include <fstream>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "loader/safetensors.h"

namespace dspark::testing {
namespace {

class TensorWriter {
 public:
  TensorWriter(DType dtype, uint64_t seed) : dtype_(dtype), rng_(seed) {}

  // Uniform(-scale, scale) * (1 / sqrt(fan_in)) keeps activations O(1) through layers.
  void random(const std::string& name, std::vector<int64_t> shape, float scale) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>((rng_.uniform() * 2 - 1) * scale);
    add(name, std::move(shape), v);
  }
  // 1 + small noise: norm weights.
  void near_one(const std::string& name, int64_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = static_cast<float>(1.0 + (rng_.uniform() * 2 - 1) * 0.2);
    add(name, {n}, v);
  }
  std::vector<TensorToWrite>& tensors() { return tensors_; }

 private:
  void add(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
    if (dtype_ == DType::kBF16) tensors_.push_back(make_bf16_tensor(name, std::move(shape), v));
    else tensors_.push_back(make_f32_tensor(name, std::move(shape), v));
  }
  DType dtype_;
  Rng rng_;
  std::vector<TensorToWrite> tensors_;
};

}  // namespace

std::filesystem::path make_temp_dir(const std::string& name) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("dspark-test-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::filesystem::path write_tiny_model(const TinyModelSpec& s, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const bool qwen2 = s.model_type == "qwen2";
  const bool qwen3 = s.model_type == "qwen3";
  nlohmann::json config = {
      {"model_type", s.model_type},
      {"vocab_size", s.vocab_size},
      {"hidden_size", s.hidden_size},
      {"intermediate_size", s.intermediate_size},
      {"num_hidden_layers", s.num_layers},
      {"num_attention_heads", s.num_heads},
      {"num_key_value_heads", s.num_kv_heads},
      {"head_dim", s.head_dim},
      {"max_position_embeddings", s.max_position_embeddings},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", qwen3 ? 1000000.0 : 10000.0},
      {"tie_word_embeddings", s.tie_word_embeddings},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
  };
  if (!qwen2) config["attention_bias"] = s.attention_bias;
  if (s.llama3_rope_scaling) {
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 8.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 64}};
  }
  if (!s.rope_scaling.empty()) {
    config["rope_scaling"] = {{"rope_type", s.rope_scaling},
                              {"factor", s.rope_factor},
                              {"original_max_position_embeddings", 64}};
  }
  if (s.sliding_window > 0) {
    config["sliding_window"] = s.sliding_window;
    if (qwen2 || qwen3) {
      config["use_sliding_window"] = true;
      config["max_window_layers"] = s.max_window_layers;
    }
  }
  if (!s.layer_types.empty()) config["layer_types"] = s.layer_types;
  std::ofstream(dir / "config.json") << config.dump(2);

  TensorWriter w(s.file_dtype, s.seed);
  const int64_t h = s.hidden_size, q = s.num_heads * s.head_dim, kv = s.num_kv_heads * s.head_dim;
  const float in_h = 1.0f / std::sqrt(static_cast<float>(h));
  w.random("model.embed_tokens.weight", {s.vocab_size, h}, 1.0f);
  for (int64_t l = 0; l < s.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    w.near_one(p + "input_layernorm.weight", h);
    w.near_one(p + "post_attention_layernorm.weight", h);
    w.random(p + "self_attn.q_proj.weight", {q, h}, in_h * 1.5f);
    w.random(p + "self_attn.k_proj.weight", {kv, h}, in_h * 1.5f);
    w.random(p + "self_attn.v_proj.weight", {kv, h}, in_h);
    w.random(p + "self_attn.o_proj.weight", {h, q}, 1.0f / std::sqrt(static_cast<float>(q)));
    const bool qkv_bias = qwen2 || (s.attention_bias && !qwen3);
    if (qkv_bias || (qwen3 && s.attention_bias)) {
      w.random(p + "self_attn.q_proj.bias", {q}, 0.1f);
      w.random(p + "self_attn.k_proj.bias", {kv}, 0.1f);
      w.random(p + "self_attn.v_proj.bias", {kv}, 0.1f);
    }
    if (s.attention_bias && !qwen2) w.random(p + "self_attn.o_proj.bias", {h}, 0.1f);
    if (qwen3) {
      w.near_one(p + "self_attn.q_norm.weight", s.head_dim);
      w.near_one(p + "self_attn.k_norm.weight", s.head_dim);
    }
    w.random(p + "mlp.gate_proj.weight", {s.intermediate_size, h}, in_h);
    w.random(p + "mlp.up_proj.weight", {s.intermediate_size, h}, in_h);
    w.random(p + "mlp.down_proj.weight", {h, s.intermediate_size}, 1.0f / std::sqrt(static_cast<float>(s.intermediate_size)));
  }
  w.near_one("model.norm.weight", h);
  if (!s.tie_word_embeddings) w.random("lm_head.weight", {s.vocab_size, h}, in_h * 4);
  write_safetensors(dir / "model.safetensors", w.tensors());
  return dir;
}

TinyModelSpec tiny_target_shape() {
  TinyModelSpec spec;
  spec.model_type = "llama";
  spec.vocab_size = 8192;
  spec.hidden_size = 512;
  spec.num_layers = 8;
  spec.num_heads = 8;
  spec.num_kv_heads = 4;
  spec.head_dim = 64;
  spec.intermediate_size = 1536;
  spec.max_position_embeddings = 1024;
  spec.tie_word_embeddings = true;
  spec.file_dtype = DType::kBF16;
  return spec;
}

std::filesystem::path write_tiny_model_with_tokenizer(const TinyModelSpec& spec, const std::string& name, char first) {
  return write_tiny_tokenizer(write_tiny_model(spec, make_temp_dir(name)), spec.vocab_size, first);
}

std::filesystem::path write_tiny_tokenizer(const std::filesystem::path& dir, int64_t vocab_size, char first) {
  nlohmann::json vocab = nlohmann::json::object();
  int32_t next_byte = 0;  // bytes 0, 1, ... are shown as U+0100, U+0101, ...
  for (int32_t id = 0; id < vocab_size; ++id) {
    const int32_t c = first + id;
    std::string token;
    if (c <= '~') {
      token = std::string(1, static_cast<char>(c));
    } else {
      const int32_t cp = 0x100 + next_byte++;  // two-byte UTF-8
      token = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    vocab[token] = id;
  }
  const nlohmann::json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  const nlohmann::json tokenizer = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << tokenizer.dump();
  return dir;
}

}  // namespace dspark::testing
