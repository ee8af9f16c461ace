#include "train/checkpoint.h"

#include <fstream>
#include <map>

#include <ATen/ATen.h>

#include "core/check.h"
#include "train/model/hf_weights.h"
#include "loader/safetensors.h"
#include "train/model/transformer.h"
#include "train/pretrain/adamw.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write_json(const fs::path& path, const json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  out.close();
  DSPARK_CHECK(out.good(), "cannot write {}", path.string());
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  DSPARK_CHECK(in.good(), "cannot open {}", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    DSPARK_FAIL("{}: invalid JSON: {}", path.string(), e.what());
  }
}

}  // namespace

void save_checkpoint(const fs::path& run_dir, const CausalLmImpl& model, const AdamW& optimizer, const json& state) {
  ModelConfig config = model.config();
  config.torch_dtype = "float32";
  save_checkpoint_files(run_dir, config.to_json(), model_tensors(model, DType::kF32), optimizer, state);
}

void save_checkpoint_files(const fs::path& run_dir, const json& config, const std::vector<TensorToWrite>& tensors,
                           const AdamW& optimizer, const json& state) {
  const fs::path final_dir = run_dir / "checkpoint";
  const fs::path tmp_dir = run_dir / "checkpoint.tmp";
  const fs::path old_dir = run_dir / "checkpoint.old";
  fs::remove_all(tmp_dir);
  fs::create_directories(tmp_dir);

  write_json(tmp_dir / "config.json", config);
  write_safetensors(tmp_dir / "model.safetensors", tensors);
  std::vector<TensorToWrite> moments;
  for (const auto& [name, t] : optimizer.state()) moments.push_back(tensor_to_write(name, t, DType::kF32));
  write_safetensors(tmp_dir / "optimizer.safetensors", moments);
  json s = state;
  s["optimizer_steps"] = optimizer.num_steps();
  write_json(tmp_dir / "state.json", s);

  // Keep the previous checkpoint until the new one is in place.
  if (fs::exists(final_dir)) {
    fs::remove_all(old_dir);
    fs::rename(final_dir, old_dir);
  }
  fs::rename(tmp_dir, final_dir);
  fs::remove_all(old_dir);
}

void write_json_atomic(const fs::path& path, const nlohmann::json& j) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
    out.close();
    DSPARK_CHECK(out.good(), "cannot write {}", tmp.string());
  }
  fs::rename(tmp, path);
}

fs::path find_checkpoint(const fs::path& dir) {
  if (fs::exists(dir / "state.json") && fs::exists(dir / "model.safetensors")) return dir;
  if (fs::exists(dir / "checkpoint" / "state.json")) return dir / "checkpoint";
  if (fs::exists(dir / "checkpoint.old" / "state.json")) return dir / "checkpoint.old";
  return {};
}

json read_checkpoint_state(const fs::path& checkpoint_dir) { return read_json(checkpoint_dir / "state.json"); }

ModelConfig read_checkpoint_config(const fs::path& checkpoint_dir) {
  return ModelConfig::from_file(checkpoint_dir / "config.json");
}

void load_checkpoint(const fs::path& checkpoint_dir, CausalLmImpl& model, AdamW* optimizer) {
  load_hf_weights(model, WeightStore(checkpoint_dir));
  if (optimizer) load_optimizer_checkpoint(checkpoint_dir, *optimizer);
}

void load_optimizer_checkpoint(const fs::path& checkpoint_dir, AdamW& optimizer) {
  const json state = read_checkpoint_state(checkpoint_dir);
  const fs::path opt_file = checkpoint_dir / "optimizer.safetensors";
  SafetensorsFile file(opt_file);
  std::map<std::string, torch::Tensor> moments;
  for (const auto& [name, info] : file.tensors()) {
    DSPARK_CHECK(info.dtype == DType::kF32, "{}: tensor {} is {}, expected f32", opt_file.string(), name,
                 dtype_name(info.dtype));
    auto t = torch::empty(info.shape, at::kFloat);
    std::memcpy(t.data_ptr<float>(), info.bytes.data(), info.bytes.size());
    moments.emplace(name, t);
  }
  DSPARK_CHECK(state.contains("optimizer_steps"), "{}: missing optimizer_steps",
               (checkpoint_dir / "state.json").string());
  optimizer.load_state(moments, state["optimizer_steps"].get<int64_t>());
}

}  // namespace dspark::train
