// TokenShards: reads a shard directory written by prepare_corpus (see prepare.h for the
// format) fully into memory. Construction checks meta.json, that every file's size equals
// its token count and that every id is below vocab_size; errors name the file and field.
// A broken meta.json is always an error. A broken token file is one too by default
// (pretraining's mixture needs every source); with ShardErrors::kSkipSource its source is
// left out and listed in skipped(), for readers that can do without it (regen prompts).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dspark::train {

struct ShardSource {
  std::string name;
  int64_t documents = 0;
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
};

enum class ShardErrors { kThrow, kSkipSource };

struct SkippedShardSource {
  std::string name;
  std::string reason;  // the load error, naming the file
};

class TokenShards {
 public:
  explicit TokenShards(const std::filesystem::path& dir, ShardErrors errors = ShardErrors::kThrow);

  const std::vector<ShardSource>& sources() const { return sources_; }
  size_t num_sources() const { return sources_.size(); }
  // Index of the source called name; throws listing the available names.
  size_t index_of(std::string_view name) const;
  const std::vector<int32_t>& train(size_t i) const;  // [train_tokens]
  const std::vector<int32_t>& val(size_t i) const;    // [val_tokens]

  // The sources left out (ShardErrors::kSkipSource).
  const std::vector<SkippedShardSource>& skipped() const { return skipped_; }
  bool was_skipped(std::string_view name) const;

  const std::filesystem::path& tokenizer_dir() const { return tokenizer_dir_; }
  int64_t vocab_size() const { return vocab_size_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t pad_id() const { return pad_id_; }
  int32_t mask_id() const { return mask_id_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path tokenizer_dir_;
  int64_t vocab_size_ = 0;
  int32_t eos_id_ = -1;
  int32_t pad_id_ = -1;
  int32_t mask_id_ = -1;
  std::vector<ShardSource> sources_;
  std::vector<SkippedShardSource> skipped_;
  std::vector<std::vector<int32_t>> train_;  // [num_sources][train_tokens]
  std::vector<std::vector<int32_t>> val_;    // [num_sources][val_tokens]
};

}  // namespace dspark::train
