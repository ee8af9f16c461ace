// WeightStore: finding a checkpoint's safetensors files and serving its tensors as f32.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "loader/safetensors.h"

namespace dspark {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

json read_json(const fs::path& path) {
  std::ifstream in(path);
  DSPARK_CHECK(in, "cannot read {}", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    DSPARK_FAIL("{}: invalid JSON: {}", path.string(), e.what());
  }
}

}  // namespace

WeightStore::WeightStore(const fs::path& model_dir) : dir_(model_dir) {
  auto add_whole_file = [this](const fs::path& path) {
    files_.push_back(std::make_unique<SafetensorsFile>(path));
    for (const auto& [name, info] : files_.back()->tensors()) index_[name] = &info;
  };

  if (fs::is_regular_file(model_dir)) {
    add_whole_file(model_dir);
    return;
  }
  DSPARK_CHECK(fs::is_directory(model_dir), "model directory {} does not exist",
               model_dir.string());

  if (fs::exists(model_dir / kSingleFile)) {
    add_whole_file(model_dir / kSingleFile);
    return;
  }

  const fs::path index_path = model_dir / kIndexFile;
  if (fs::exists(index_path)) {
    const std::string index_name = index_path.string();
    const json index = read_json(index_path);
    DSPARK_CHECK(index.is_object() && index.contains("weight_map") &&
                     index["weight_map"].is_object() && !index["weight_map"].empty(),
                 "{}: expected an object with a non-empty 'weight_map' of tensor -> shard file",
                 index_name);
    std::map<std::string, const SafetensorsFile*> shards;  // each shard opened once
    for (const auto& [name, shard_value] : index["weight_map"].items()) {
      DSPARK_CHECK(shard_value.is_string(),
                   "{}: weight_map entry for tensor '{}' must be a file name, got {}", index_name,
                   name, shard_value.dump());
      const std::string shard = shard_value.get<std::string>();
      const fs::path shard_rel(shard);
      DSPARK_CHECK(!shard.empty() && shard_rel.is_relative() &&
                       std::find(shard_rel.begin(), shard_rel.end(), fs::path("..")) == shard_rel.end(),
                   "{}: shard '{}' of tensor '{}' must be a file name inside the directory",
                   index_name, shard, name);
      auto it = shards.find(shard);
      if (it == shards.end()) {
        const fs::path shard_path = model_dir / shard_rel;
        DSPARK_CHECK(fs::is_regular_file(shard_path),
                     "{}: shard '{}' (listed for tensor '{}') does not exist", index_name, shard,
                     name);
        files_.push_back(std::make_unique<SafetensorsFile>(shard_path));
        it = shards.emplace(shard, files_.back().get()).first;
      }
      const auto& tensors = it->second->tensors();
      auto tensor = tensors.find(name);
      DSPARK_CHECK(tensor != tensors.end(),
                   "{}: tensor '{}' is listed in shard '{}', but {} has no such tensor",
                   index_name, name, shard, it->second->path().string());
      index_[name] = &tensor->second;
    }
    return;
  }

  std::vector<fs::path> candidates;
  for (const fs::directory_entry& entry : fs::directory_iterator(model_dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".safetensors")
      candidates.push_back(entry.path());
  }
  std::sort(candidates.begin(), candidates.end());
  DSPARK_CHECK(!candidates.empty(),
               "{}: no weights found (looked for {}, {}, or a single *.safetensors file)",
               model_dir.string(), kSingleFile, kIndexFile);
  if (candidates.size() > 1) {
    std::string listed;
    for (const fs::path& p : candidates) listed += (listed.empty() ? "" : ", ") + p.filename().string();
    DSPARK_FAIL("{}: {} *.safetensors files ({}) but no {} to say which tensors each holds",
                model_dir.string(), candidates.size(), listed, kIndexFile);
  }
  add_whole_file(candidates.front());
}

bool WeightStore::contains(const std::string& name) const { return index_.contains(name); }

const TensorInfo& WeightStore::find(const std::string& name) const {
  auto it = index_.find(name);
  DSPARK_CHECK(it != index_.end(), "{}: no tensor '{}' in the checkpoint ({} tensors)",
               dir_.string(), name, index_.size());
  return *it->second;
}

const TensorInfo& WeightStore::get(const std::string& name) const {
  const TensorInfo& info = find(name);
  DSPARK_CHECK(info.supported,
               "{}: tensor '{}' has dtype {}, which cannot be loaded (supported: F32, BF16, F16, "
               "F8_E4M3)",
               info.file.string(), name, info.dtype_tag);
  return info;
}

void WeightStore::load_f32_into(const std::string& name, std::span<const int64_t> expected_shape,
                                std::span<float> out) const {
  const TensorInfo& info = get(name);
  DSPARK_CHECK(info.dtype != DType::kI8,
               "{}: tensor '{}' is int8 (a quantized weight): it is loaded with its scales '{}_scale'",
               info.file.string(), name, name);
  DSPARK_CHECK(std::ranges::equal(info.shape, expected_shape),
               "{}: tensor '{}' has shape {}, expected {}", info.file.string(), name,
               format_shape(info.shape), format_shape(expected_shape));
  const size_t n = static_cast<size_t>(info.num_elements());
  DSPARK_CHECK(out.size() == n, "load_f32_into('{}'): destination holds {} floats, tensor has {}",
               name, out.size(), n);
  if (n == 0) return;
  const size_t element_size = dtype_size(info.dtype);
  if (reinterpret_cast<uintptr_t>(info.bytes.data()) % element_size == 0) {
    convert_to_f32(info.bytes.data(), info.dtype, out.data(), n);
  } else {
    // Tensors sit back to back in the file, so one may start at an odd address; the
    // converters read whole elements, so give them an aligned copy.
    const std::vector<std::byte> aligned(info.bytes.begin(), info.bytes.end());
    convert_to_f32(aligned.data(), info.dtype, out.data(), n);
  }
}

std::vector<float> WeightStore::load_f32(const std::string& name,
                                         std::span<const int64_t> expected_shape) const {
  const TensorInfo& info = get(name);
  // Check the shape before allocating for it.
  DSPARK_CHECK(std::ranges::equal(info.shape, expected_shape),
               "{}: tensor '{}' has shape {}, expected {}", info.file.string(), name,
               format_shape(info.shape), format_shape(expected_shape));
  std::vector<float> values(static_cast<size_t>(info.num_elements()));
  load_f32_into(name, expected_shape, values);
  return values;
}

std::vector<int8_t> WeightStore::load_i8(const std::string& name, std::span<const int64_t> expected_shape) const {
  const TensorInfo& info = get(name);
  DSPARK_CHECK(info.dtype == DType::kI8, "{}: tensor '{}' has dtype {}, expected I8 (next to its '{}_scale')",
               info.file.string(), name, info.dtype_tag, name);
  DSPARK_CHECK(std::ranges::equal(info.shape, expected_shape),
               "{}: tensor '{}' has shape {}, expected {}", info.file.string(), name,
               format_shape(info.shape), format_shape(expected_shape));
  std::vector<int8_t> values(static_cast<size_t>(info.num_elements()));
  std::memcpy(values.data(), info.bytes.data(), values.size());
  return values;
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> result;
  result.reserve(index_.size());
  for (const auto& [name, info] : index_) result.push_back(name);
  return result;
}

}  // namespace dspark
