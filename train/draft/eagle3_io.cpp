#include "train/draft/eagle3_io.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "train/checkpoint.h"
#include "train/draft/eagle3.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A run directory, its checkpoint, or an exported directory -> the directory holding
// config.json and model.safetensors.
fs::path eagle3_weights_dir(const fs::path& dir) {
  if (fs::exists(dir / "config.json") && fs::exists(dir / "model.safetensors")) return dir;
  const fs::path checkpoint = find_checkpoint(dir);
  DSPARK_CHECK(!checkpoint.empty(), "{} holds no EAGLE-3 drafter (no config.json + model.safetensors, no checkpoint/)",
               dir.string());
  return checkpoint;
}

torch::Tensor target_parameter(const CausalLmImpl& target, const std::string& name) {
  return target.named_parameters(/*recurse=*/true)[name];
}

// The stored name of a module parameter: the original layout keeps the layer under "midlayer.".
std::string stored_name(const Eagle3Config& config, const std::string& name) {
  const std::string speculators = "layers.0.";
  if (name.rfind(speculators, 0) == 0) return config.layer_prefix() + name.substr(speculators.size());
  return name;
}

const TensorInfo& stored_index_tensor(const WeightStore& store, const std::string& name, const std::string& tag,
                                      int64_t size) {
  const TensorInfo& info = store.find(name);
  DSPARK_CHECK(info.dtype_tag == tag && info.shape == std::vector<int64_t>{size},
               "{}: tensor '{}' is {} {}, expected {} [{}]", info.file.string(), name, info.dtype_tag,
               format_shape(info.shape), tag, size);
  return info;
}

DraftVocab read_draft_vocab(const WeightStore& store, const Eagle3Config& config) {
  const int64_t vd = config.draft_vocab_size, v = config.layer.vocab_size;
  DSPARK_CHECK(store.contains("d2t"), "EAGLE-3 drafter {} has no tensor 'd2t'", store.dir().string());
  const TensorInfo& d2t_info = stored_index_tensor(store, "d2t", "I64", vd);
  std::vector<int64_t> d2t(static_cast<size_t>(vd));
  std::memcpy(d2t.data(), d2t_info.bytes.data(), d2t_info.bytes.size());
  DraftVocab vocab = draft_vocab_from_d2t(d2t, v);
  if (store.contains("t2d")) {
    const TensorInfo& t2d_info = stored_index_tensor(store, "t2d", "BOOL", v);
    for (int64_t t = 0; t < v; ++t) {
      const bool stored = t2d_info.bytes[static_cast<size_t>(t)] != std::byte{0};
      DSPARK_CHECK(stored == (vocab.t2d[static_cast<size_t>(t)] != 0),
                   "{}: t2d[{}] is {} but d2t {} target id {}", t2d_info.file.string(), t, stored,
                   stored ? "never maps to" : "maps to", t);
    }
  }
  return vocab;
}

}  // namespace

std::vector<int32_t> default_eagle3_aux_layer_ids(int64_t num_layers) {
  DSPARK_CHECK(num_layers >= 3, "EAGLE-3 fuses 3 distinct target layers; the target has {}", num_layers);
  const auto l = static_cast<int32_t>(num_layers);
  const int32_t low = 2, mid = l / 2, high = std::max(l - 3, (7 * l + 7) / 8);
  if (low < mid && mid < high && high <= l) return {low, mid, high};
  return {1, (l + 1) / 2, l};
}

Eagle3Config make_eagle3_config(const ModelConfig& target, const Eagle3ShapeOptions& o) {
  Eagle3Config c;
  c.layer = target;
  c.layer.num_hidden_layers = 1;
  c.layer.tie_word_embeddings = false;
  c.layer.stored_weight_bits = 0;
  c.layer.sliding_window = 0;  // the drafter's one layer attends to its whole cache
  c.layer.sliding_layers.clear();
  c.layer.bos_token_id = -1;
  c.layer.eos_token_id = -1;
  c.layer.eos_token_ids.clear();
  c.layer.torch_dtype = "bfloat16";
  c.draft_vocab_size = o.draft_vocab_size;
  c.target_hidden_size = target.hidden_size;
  c.aux_hidden_state_layer_ids =
      o.aux_layer_ids.empty() ? default_eagle3_aux_layer_ids(target.num_hidden_layers) : o.aux_layer_ids;
  c.speculative_tokens = o.speculative_tokens;
  c.verifier_name_or_path = o.verifier_name_or_path;
  c.verifier_architectures = o.verifier_architectures;
  c.validate("eagle3 options");
  c.validate_for_target(target, "eagle3 options");
  return c;
}

std::vector<TensorToWrite> eagle3_tensors_to_write(const Eagle3Impl& drafter, DType dtype) {
  std::vector<TensorToWrite> out;
  for (const auto& item : drafter.named_parameters()) out.push_back(tensor_to_write(item.key(), item.value(), dtype));
  auto d2t = drafter.d2t().contiguous();
  auto t2d = drafter.t2d().to(at::kByte).contiguous();
  out.push_back(make_i64_tensor("d2t", {d2t.numel()}, {d2t.data_ptr<int64_t>(), static_cast<size_t>(d2t.numel())}));
  out.push_back(make_bool_tensor("t2d", {t2d.numel()}, {t2d.data_ptr<uint8_t>(), static_cast<size_t>(t2d.numel())}));
  return out;
}

void load_eagle3_weights(Eagle3Impl& drafter, const WeightStore& store) {
  at::NoGradGuard no_grad;
  const Eagle3Config& config = drafter.config();
  std::set<std::string> used{"d2t", "t2d"};
  for (auto& item : drafter.named_parameters()) {
    auto& p = item.value();
    const std::string name = stored_name(config, item.key());
    std::vector<int64_t> shape(p.sizes().begin(), p.sizes().end());
    DSPARK_CHECK(store.contains(name), "EAGLE-3 drafter {} has no tensor '{}'", store.dir().string(), name);
    p.copy_(tensor_from_store(store, name, shape));
    used.insert(name);
  }
  drafter.set_draft_vocab(read_draft_vocab(store, config));
  for (const auto& name : store.names()) {
    DSPARK_CHECK(used.count(name), "EAGLE-3 drafter {}: tensor '{}' has no place in this drafter{}",
                 store.dir().string(), name,
                 name == "embed_tokens.weight" ? " (the trainer shares the target's embedding; a drafter with its own "
                                                 "cannot be trained here)"
                                               : "");
  }
}

std::shared_ptr<Eagle3Impl> make_eagle3(const Eagle3Config& config, const CausalLmImpl& target,
                                        const DraftVocab& vocab, double init_std, uint64_t seed) {
  config.validate_for_target(target.config(), "eagle3 drafter");
  auto drafter = std::make_shared<Eagle3Impl>(config, target_parameter(target, "model.embed_tokens.weight"));
  drafter->init_weights(init_std, seed);
  drafter->set_draft_vocab(vocab);
  drafter->init_head_from_target(target.lm_head_weight(), target_parameter(target, "model.norm.weight"));
  return drafter;
}

std::shared_ptr<Eagle3Impl> load_eagle3(const fs::path& dir, const CausalLmImpl& target) {
  const fs::path weights_dir = eagle3_weights_dir(dir);
  const fs::path file = weights_dir / "config.json";
  Eagle3Config config = Eagle3Config::from_file(file);
  config.validate_for_target(target.config(), file.string());
  // The module always carries explicit ids: absent ones are vLLM's default for this target.
  config.aux_hidden_state_layer_ids = config.aux_layer_ids(target.config().num_hidden_layers);
  auto drafter = std::make_shared<Eagle3Impl>(config, target_parameter(target, "model.embed_tokens.weight"));
  load_eagle3_weights(*drafter, WeightStore(weights_dir));
  return drafter;
}

void save_eagle3_checkpoint(const fs::path& run_dir, const Eagle3Impl& drafter, const AdamW& optimizer,
                            const json& state) {
  Eagle3Config config = drafter.config();
  config.layer.torch_dtype = "float32";
  save_checkpoint_files(run_dir, config.to_json(), eagle3_tensors_to_write(drafter, DType::kF32), optimizer, state);
}

void export_eagle3(const fs::path& checkpoint, const fs::path& out_dir, const DrafterExportOptions& o) {
  const fs::path dir = eagle3_weights_dir(checkpoint);
  const fs::path file = dir / "config.json";
  const Eagle3Config config = Eagle3Config::from_file(file);
  DSPARK_CHECK(config.aux_hidden_state_layer_ids.size() == 3,
               "{}: no eagle_aux_hidden_state_layer_ids; export needs them explicit", file.string());
  // The shared embedding is not exported: a stride-0 placeholder of the right shape lets the
  // module check and convert the stored tensors without the target (and without memory).
  const auto placeholder = at::zeros({1, 1}).expand({config.layer.vocab_size, config.layer.hidden_size});
  Eagle3Impl drafter(config, placeholder);
  load_eagle3_weights(drafter, WeightStore(dir));
  export_eagle3(drafter, out_dir, o);
}

void export_eagle3(const Eagle3Impl& drafter, const fs::path& out_dir, const DrafterExportOptions& o) {
  Eagle3Config config = drafter.config();
  if (!o.verifier_name_or_path.empty()) config.verifier_name_or_path = o.verifier_name_or_path;
  config.layer.torch_dtype = o.dtype == DType::kBF16 ? "bfloat16" : "float32";
  fs::create_directories(out_dir);
  write_safetensors(out_dir / "model.safetensors", eagle3_tensors_to_write(drafter, o.dtype), {{"format", "pt"}});
  write_json_atomic(out_dir / "config.json", config.to_json());
}

bool is_eagle3_checkpoint(const fs::path& dir) {
  if (is_eagle3_directory(dir)) return true;
  const fs::path checkpoint = find_checkpoint(dir);
  return !checkpoint.empty() && is_eagle3_directory(checkpoint);
}

}  // namespace dspark::train
