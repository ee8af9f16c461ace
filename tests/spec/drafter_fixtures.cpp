#include "spec/drafter_fixtures.h"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "loader/safetensors.h"
#include "spec/drafter_tensors.h"

namespace dspark::testing {

DrafterConfig make_drafter_config(const ModelConfig& target, DrafterKind kind, std::vector<int32_t> aux_layer_ids,
                                  int32_t block_size, int64_t num_layers, int64_t markov_rank,
                                  const std::string& layer_type) {
  nlohmann::json layer = {{"model_type", layer_type},
                          {"vocab_size", target.vocab_size},
                          {"hidden_size", target.hidden_size},
                          {"intermediate_size", target.hidden_size * 3 / 2},
                          {"num_hidden_layers", num_layers},
                          {"num_attention_heads", 4},
                          {"num_key_value_heads", 2},
                          {"head_dim", 16},
                          {"max_position_embeddings", target.max_position_embeddings},
                          {"rms_norm_eps", 1e-6},
                          {"rope_theta", 1000000.0}};
  DrafterConfig c;
  c.kind = kind;
  c.architecture = kind == DrafterKind::kDSpark ? "DSparkDraftModel" : "DFlashDraftModel";
  c.layer = ModelConfig::from_json(layer, "test layer config");
  c.block_size = block_size;
  c.aux_hidden_state_layer_ids = std::move(aux_layer_ids);
  c.mask_token_id = static_cast<int32_t>(target.vocab_size - 1);
  c.target_hidden_size = target.hidden_size;
  c.draft_vocab_size = target.vocab_size;
  c.sample_from_anchor = kind == DrafterKind::kDSpark;
  c.markov_rank = kind == DrafterKind::kDSpark ? markov_rank : 0;
  c.enable_confidence_head = kind == DrafterKind::kDSpark;
  c.confidence_head_with_markov = kind == DrafterKind::kDSpark && markov_rank > 0;
  c.speculative_tokens = c.num_drafts();
  c.verifier_name_or_path = "test-target";
  c.verifier_architectures = {"LlamaForCausalLM"};
  return c;
}

std::filesystem::path write_random_drafter(const DrafterConfig& config, const std::filesystem::path& dir,
                                           const DrafterWeightsSpec& spec) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.to_json().dump(2);
  Rng rng(spec.seed);
  std::vector<TensorToWrite> tensors;
  for (const DrafterTensor& t : drafter_tensors(config)) {
    if (t.optional && !spec.own_embeddings) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<float> v(n);
    const bool is_norm = t.shape.size() == 1 && t.name.ends_with("norm.weight");
    const bool is_markov = t.name.starts_with("markov_head.markov_");
    // Uniform entries scaled by 1/sqrt(fan-in) keep activations O(1); norms near one.
    const float scale = is_markov ? spec.markov_scale
                        : t.shape.size() == 2 ? 1.5f / std::sqrt(static_cast<float>(t.shape[1]))
                                              : 0.1f;
    for (float& x : v) {
      const float u = static_cast<float>(rng.uniform() * 2 - 1);
      x = is_norm ? 1.0f + 0.2f * u : u * scale;
    }
    if (spec.edit) spec.edit(t.name, v);
    tensors.push_back(spec.file_dtype == DType::kBF16 ? make_bf16_tensor(t.name, t.shape, v)
                                                      : make_f32_tensor(t.name, t.shape, v));
  }
  write_safetensors(dir / "model.safetensors", tensors);
  return dir;
}

}  // namespace dspark::testing
