#include "train/draft/drafter_io.h"

#include <cmath>
#include <fstream>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "spec/drafter_tensors.h"
#include "train/checkpoint.h"
#include "train/draft/drafter.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A run directory, its checkpoint, or an exported directory -> the directory holding
// config.json and model.safetensors.
fs::path drafter_weights_dir(const fs::path& dir) {
  if (fs::exists(dir / "config.json") && fs::exists(dir / "model.safetensors")) return dir;
  const fs::path checkpoint = find_checkpoint(dir);
  DSPARK_CHECK(!checkpoint.empty(), "{} holds no drafter (no config.json + model.safetensors, no checkpoint/)",
               dir.string());
  return checkpoint;
}

torch::Tensor target_embedding(const CausalLmImpl& target) {
  return target.named_parameters(/*recurse=*/true)["model.embed_tokens.weight"];
}

}  // namespace

std::vector<int32_t> default_aux_layer_ids(int64_t num_layers, int64_t count) {
  DSPARK_CHECK(num_layers >= 1 && count >= 1, "aux layers: {} of {} target layers", count, num_layers);
  std::vector<int32_t> ids;
  if (count == 1 || num_layers < 4) {
    ids.push_back(static_cast<int32_t>(num_layers / 2) + 1);
    return ids;
  }
  // Output-of-layer ids spread over [1, L−3] (the reference drafters' choice), then +1.
  const double start = 1, end = static_cast<double>(num_layers - 3);
  for (int64_t i = 0; i < count; ++i) {
    const int32_t layer = static_cast<int32_t>(std::lround(start + static_cast<double>(i) * (end - start) /
                                                                       static_cast<double>(count - 1)));
    const int32_t id = capture_layer_to_aux_layer_id(layer);
    if (ids.empty() || ids.back() != id) ids.push_back(id);
  }
  return ids;
}

DrafterConfig make_drafter_config(const ModelConfig& target, const DrafterShapeOptions& o) {
  DSPARK_CHECK(o.mask_token_id >= 0 && o.mask_token_id < target.vocab_size,
               "drafter: mask token id {} is outside the target's vocabulary (0..{})", o.mask_token_id,
               target.vocab_size - 1);
  DSPARK_CHECK(o.layers >= 1, "drafter: --layers must be >= 1, got {}", o.layers);
  DrafterConfig c;
  c.kind = o.kind;
  const bool dspark = o.kind == DrafterKind::kDSpark;
  c.architecture = dspark ? "DSparkDraftModel" : "DFlashDraftModel";
  c.layer = target;
  c.layer.num_hidden_layers = o.layers;
  c.layer.tie_word_embeddings = false;
  c.layer.bos_token_id = -1;
  c.layer.eos_token_id = -1;
  c.layer.eos_token_ids.clear();
  c.layer.torch_dtype = "bfloat16";
  c.block_size = o.block_size;
  c.aux_hidden_state_layer_ids =
      o.aux_layer_ids.empty() ? default_aux_layer_ids(target.num_hidden_layers, o.num_aux_layers) : o.aux_layer_ids;
  c.mask_token_id = o.mask_token_id;
  c.target_hidden_size = target.hidden_size;
  c.draft_vocab_size = target.vocab_size;
  c.sample_from_anchor = dspark;
  c.markov_rank = dspark ? o.markov_rank : 0;
  c.markov_context_size = c.markov_rank > 0 ? o.markov_context_size : 0;
  c.markov_head_type = c.markov_context_size > 0 ? "contextual" : "vanilla";
  c.enable_confidence_head = dspark && o.confidence_head;
  c.confidence_head_with_markov = c.enable_confidence_head && o.confidence_with_markov && c.markov_rank > 0;
  c.speculative_tokens = c.num_drafts();
  c.verifier_name_or_path = o.verifier_name_or_path;
  c.verifier_architectures = o.verifier_architectures;
  c.validate("drafter options");
  c.validate_for_target(target, "drafter options");
  return c;
}

std::vector<TensorToWrite> drafter_tensors_to_write(const DrafterImpl& drafter, DType dtype) {
  std::vector<TensorToWrite> out;
  for (const auto& item : drafter.named_parameters()) out.push_back(tensor_to_write(item.key(), item.value(), dtype));
  return out;
}

void load_drafter_weights(DrafterImpl& drafter, const WeightStore& store) {
  at::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& item : drafter.named_parameters()) {
    auto& p = item.value();
    std::vector<int64_t> shape(p.sizes().begin(), p.sizes().end());
    DSPARK_CHECK(store.contains(item.key()), "drafter {} has no tensor '{}'", store.dir().string(), item.key());
    p.copy_(tensor_from_store(store, item.key(), shape));
    used.insert(item.key());
  }
  for (const auto& name : store.names()) {
    if (name.starts_with("greedy_vocab.")) continue;  // dropped by load_drafter
    DSPARK_CHECK(used.count(name), "drafter {}: tensor '{}' has no place in this drafter{}", store.dir().string(),
                 name,
                 name == "embed_tokens.weight" || name == "lm_head.weight"
                     ? " (own embeddings / LM head are not trained here; they are shared with the target)"
                     : "");
  }
}

std::shared_ptr<DrafterImpl> make_drafter(const DrafterConfig& config, const CausalLmImpl& target, double init_std,
                                          uint64_t seed) {
  config.validate_for_target(target.config(), "drafter");
  auto drafter = std::make_shared<DrafterImpl>(config, target_embedding(target), target.lm_head_weight());
  drafter->init_weights(init_std, seed);
  return drafter;
}

std::shared_ptr<DrafterImpl> load_drafter(const fs::path& dir, const CausalLmImpl& target) {
  const fs::path weights_dir = drafter_weights_dir(dir);
  DrafterConfig config = DrafterConfig::from_file(weights_dir / "config.json");
  config.validate_for_target(target.config(), (weights_dir / "config.json").string());
  DSPARK_CHECK(!config.reduces_vocab(),
               "drafter {} has a reduced draft vocabulary ({} of {} tokens); the trainer works on drafters with the "
               "whole vocabulary (reduce one after training: dspark-train draft-vocab)",
               weights_dir.string(), config.draft_vocab_size, config.layer.vocab_size);
  // A greedy vocabulary is rows copied from the LM head and W₂ (dspark-train draft-vocab
  // --greedy): training would leave them stale, so the trainer drops it.
  config.greedy_draft_vocab_size = 0;
  auto drafter = std::make_shared<DrafterImpl>(config, target_embedding(target), target.lm_head_weight());
  load_drafter_weights(*drafter, WeightStore(weights_dir));
  return drafter;
}

void save_drafter_checkpoint(const fs::path& run_dir, const DrafterImpl& drafter, const AdamW& optimizer,
                             const json& state) {
  DrafterConfig config = drafter.config();
  config.confidence_temperatures.clear();  // a training checkpoint is uncalibrated
  config.confidence_temperatures_sampled.clear();
  config.confidence_repeat_shifts.clear();
  config.layer.torch_dtype = "float32";
  save_checkpoint_files(run_dir, config.to_json(), drafter_tensors_to_write(drafter, DType::kF32), optimizer, state);
}

void export_drafter(const fs::path& checkpoint, const fs::path& out_dir, const DrafterExportOptions& o) {
  const fs::path dir = drafter_weights_dir(checkpoint);
  DrafterConfig config = DrafterConfig::from_file(dir / "config.json");
  const WeightStore store(dir);
  std::vector<TensorToWrite> tensors;
  for (const DrafterTensor& t : drafter_tensors(config)) {
    if (!store.contains(t.name)) {
      DSPARK_CHECK(t.optional, "drafter {} has no tensor '{}'", dir.string(), t.name);
      continue;
    }
    tensors.push_back(tensor_to_write(t.name, tensor_from_store(store, t.name, t.shape), o.dtype));
  }
  for (const auto& name : store.names()) {
    bool known = false;
    for (const auto& t : tensors) known = known || t.name == name;
    DSPARK_CHECK(known, "drafter {}: tensor '{}' is not part of the config's layout", dir.string(), name);
  }
  if (!o.verifier_name_or_path.empty()) config.verifier_name_or_path = o.verifier_name_or_path;
  config.layer.torch_dtype = o.dtype == DType::kBF16 ? "bfloat16" : "float32";
  fs::create_directories(out_dir);
  write_safetensors(out_dir / "model.safetensors", tensors, {{"format", "pt"}});
  write_json_atomic(out_dir / "config.json", config.to_json());
}

void export_drafter(const DrafterImpl& drafter, const fs::path& out_dir, const DrafterExportOptions& o) {
  DrafterConfig config = drafter.config();
  if (!o.verifier_name_or_path.empty()) config.verifier_name_or_path = o.verifier_name_or_path;
  config.layer.torch_dtype = o.dtype == DType::kBF16 ? "bfloat16" : "float32";
  fs::create_directories(out_dir);
  write_safetensors(out_dir / "model.safetensors", drafter_tensors_to_write(drafter, o.dtype), {{"format", "pt"}});
  write_json_atomic(out_dir / "config.json", config.to_json());
}

void write_confidence_calibration(const fs::path& dir, const std::vector<float>& greedy,
                                  const std::vector<float>& sampled, const std::vector<float>& repeat_shifts) {
  const fs::path file = drafter_weights_dir(dir) / "config.json";
  DrafterConfig config = DrafterConfig::from_file(file);
  config.confidence_temperatures = greedy;
  config.confidence_temperatures_sampled = sampled;
  config.confidence_repeat_shifts = repeat_shifts;
  config.validate(file.string());
  write_json_atomic(file, config.to_json());
}

bool is_drafter_checkpoint(const fs::path& dir) {
  if (is_drafter_directory(dir)) return true;
  const fs::path checkpoint = find_checkpoint(dir);
  return !checkpoint.empty() && is_drafter_directory(checkpoint);
}

}  // namespace dspark::train
