#include "spec/eagle3_fixtures.h"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "loader/safetensors.h"

namespace dspark::testing {

Eagle3Config make_eagle3_config(const ModelConfig& target, std::vector<int32_t> aux_layer_ids, int64_t draft_vocab,
                                const std::string& layer_type) {
  nlohmann::json layer = {{"model_type", layer_type},
                          {"vocab_size", target.vocab_size},
                          {"hidden_size", target.hidden_size},
                          {"intermediate_size", target.hidden_size * 3 / 2},
                          {"num_hidden_layers", 1},
                          {"num_attention_heads", 4},
                          {"num_key_value_heads", 2},
                          {"head_dim", 16},
                          {"max_position_embeddings", target.max_position_embeddings},
                          {"rms_norm_eps", 1e-6},
                          {"rope_theta", 10000.0}};
  Eagle3Config c;
  c.layer = ModelConfig::from_json(layer, "test eagle3 layer config");
  c.draft_vocab_size = draft_vocab > 0 ? draft_vocab : target.vocab_size;
  c.target_hidden_size = target.hidden_size;
  c.aux_hidden_state_layer_ids = std::move(aux_layer_ids);
  c.speculative_tokens = 4;
  c.verifier_name_or_path = "test-target";
  c.verifier_architectures = {"LlamaForCausalLM"};
  return c;
}

std::vector<int32_t> default_draft_ids(const Eagle3Config& config) {
  // Every id when the vocabularies are equal; else spread evenly over the vocabulary.
  std::vector<int32_t> ids;
  const int64_t vocab = config.layer.vocab_size, draft = config.draft_vocab_size;
  for (int64_t d = 0; d < draft; ++d) ids.push_back(static_cast<int32_t>(d * vocab / draft));
  return ids;
}

std::filesystem::path write_random_eagle3(const Eagle3Config& config, const std::filesystem::path& dir,
                                          const Eagle3WeightsSpec& spec) {
  std::filesystem::create_directories(dir);
  nlohmann::json json;
  if (config.layout == Eagle3Config::Layout::kSpeculators) {
    json = config.to_json();
  } else {  // the original layout: the layer's own config plus the EAGLE-3 fields
    json = config.layer.to_json();
    json["architectures"] = nlohmann::json::array({"LlamaForCausalLMEagle3"});
    json["draft_vocab_size"] = config.draft_vocab_size;
    if (!config.aux_hidden_state_layer_ids.empty())
      json["eagle_config"] = {{"eagle_aux_hidden_state_layer_ids", config.aux_hidden_state_layer_ids},
                              {"use_aux_hidden_state", true}};
  }
  if (spec.edit_config) spec.edit_config(json);
  std::ofstream(dir / "config.json") << json.dump(2);

  Rng rng(spec.seed);
  std::vector<TensorToWrite> tensors;
  for (const Eagle3Tensor& t : eagle3_tensors(config)) {
    if (t.optional) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<float> v(n);
    const bool is_norm = t.shape.size() == 1 && t.name.ends_with("norm.weight");
    const float scale = t.shape.size() == 2 ? 1.5f / std::sqrt(static_cast<float>(t.shape[1])) : 0.1f;
    for (float& x : v) {
      const float u = static_cast<float>(rng.uniform() * 2 - 1);
      x = is_norm ? 1.0f + 0.2f * u : u * scale;
    }
    if (spec.edit) spec.edit(t.name, v);
    tensors.push_back(make_f32_tensor(t.name, t.shape, v));
  }
  const std::vector<int32_t> ids = spec.draft_ids.empty() ? default_draft_ids(config) : spec.draft_ids;
  std::vector<int64_t> d2t(ids.size());
  std::vector<uint8_t> t2d(config.layer.vocab_size, 0);
  for (size_t d = 0; d < ids.size(); ++d) {
    d2t[d] = ids[d] - static_cast<int64_t>(d);
    t2d[ids[d]] = 1;
  }
  if (spec.edit_d2t) spec.edit_d2t(d2t);
  tensors.push_back(make_i64_tensor("d2t", {static_cast<int64_t>(d2t.size())}, d2t));
  if (spec.write_t2d) tensors.push_back(make_bool_tensor("t2d", {config.layer.vocab_size}, t2d));
  write_safetensors(dir / "model.safetensors", tensors);
  return dir;
}

}  // namespace dspark::testing
