#include "data/token_shards.h"

#include <algorithm>
#include <bit>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark::train {
namespace {

static_assert(std::endian::native == std::endian::little, "token files are little-endian int32");

template <class T>
T field(const nlohmann::json& j, const char* name, const std::filesystem::path& file) {
  DSPARK_CHECK(j.contains(name), "{}: missing field '{}'", file.string(), name);
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    DSPARK_FAIL("{}: field '{}': {}", file.string(), name, e.what());
  }
}

std::vector<int32_t> load_tokens(const std::filesystem::path& path, int64_t expected,
                                 int64_t vocab_size) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot open token file {}", path.string());
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path));
  DSPARK_CHECK(expected >= 0, "{}: meta.json gives a negative token count {}", path.string(), expected);
  DSPARK_CHECK(size == expected * 4, "{}: {} bytes, but meta.json says {} tokens", path.string(),
               size, expected);
  std::vector<int32_t> tokens(static_cast<size_t>(expected));
  in.read(reinterpret_cast<char*>(tokens.data()), size);
  DSPARK_CHECK(in.gcount() == size, "{}: short read", path.string());
  for (size_t i = 0; i < tokens.size(); ++i)
    DSPARK_CHECK(tokens[i] >= 0 && tokens[i] < vocab_size, "{}: token {} at index {} outside [0, {})",
                 path.string(), tokens[i], i, vocab_size);
  return tokens;
}

}  // namespace

TokenShards::TokenShards(const std::filesystem::path& dir, ShardErrors errors) : dir_(dir) {
  const auto meta_path = dir / "meta.json";
  std::ifstream in(meta_path);
  DSPARK_CHECK(in.good(), "cannot open {} (is {} made by `dspark-train prepare`?)",
               meta_path.string(), dir.string());
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    DSPARK_FAIL("{} is not valid JSON: {}", meta_path.string(), e.what());
  }
  tokenizer_dir_ = field<std::string>(meta, "tokenizer_dir", meta_path);
  vocab_size_ = field<int64_t>(meta, "vocab_size", meta_path);
  eos_id_ = field<int32_t>(meta, "eos_id", meta_path);
  pad_id_ = field<int32_t>(meta, "pad_id", meta_path);
  mask_id_ = field<int32_t>(meta, "mask_id", meta_path);
  DSPARK_CHECK(vocab_size_ > 0 && eos_id_ >= 0 && eos_id_ < vocab_size_,
               "{}: eos_id {} outside vocab_size {}", meta_path.string(), eos_id_, vocab_size_);
  const auto sources = field<nlohmann::json>(meta, "sources", meta_path);
  DSPARK_CHECK(sources.is_array() && !sources.empty(), "{}: 'sources' is not a non-empty list",
               meta_path.string());
  for (const auto& s : sources) {
    ShardSource src;
    src.name = field<std::string>(s, "name", meta_path);
    src.documents = field<int64_t>(s, "documents", meta_path);
    src.train_tokens = field<int64_t>(s, "train_tokens", meta_path);
    src.val_tokens = field<int64_t>(s, "val_tokens", meta_path);
    const auto train_file = dir / field<std::string>(s, "train_file", meta_path);
    const auto val_file = dir / field<std::string>(s, "val_file", meta_path);
    std::vector<int32_t> train, val;
    try {
      train = load_tokens(train_file, src.train_tokens, vocab_size_);
      val = load_tokens(val_file, src.val_tokens, vocab_size_);
    } catch (const Error& e) {
      if (errors == ShardErrors::kThrow) throw;
      skipped_.push_back({src.name, e.what()});
      continue;
    }
    train_.push_back(std::move(train));
    val_.push_back(std::move(val));
    sources_.push_back(std::move(src));
  }
}

size_t TokenShards::index_of(std::string_view name) const {
  std::string known;
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i].name == name) return i;
    known += (known.empty() ? "" : ", ") + sources_[i].name;
  }
  DSPARK_FAIL("{}: no source '{}' (have: {})", dir_.string(), name, known);
}

bool TokenShards::was_skipped(std::string_view name) const {
  return std::any_of(skipped_.begin(), skipped_.end(), [&](const SkippedShardSource& s) { return s.name == name; });
}

const std::vector<int32_t>& TokenShards::train(size_t i) const {
  DSPARK_CHECK(i < train_.size(), "source index {} out of {}", i, train_.size());
  return train_[i];
}

const std::vector<int32_t>& TokenShards::val(size_t i) const {
  DSPARK_CHECK(i < val_.size(), "source index {} out of {}", i, val_.size());
  return val_[i];
}

}  // namespace dspark::train
