#include "spec/draft_vocab.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "kernels/sampling.h"
#include "loader/config.h"
#include "spec/drafter_config.h"

namespace dspark {

std::vector<int32_t> read_draft_to_target(const WeightStore& store, std::string_view prefix, int64_t draft_vocab_size,
                                          int64_t vocab, std::string_view kind) {
  const std::string dir = store.dir().string();
  const std::string d2t_name = std::string(prefix) + "d2t", t2d_name = std::string(prefix) + "t2d";
  DSPARK_CHECK(store.contains(d2t_name),
               "{} drafter {} has no tensor '{}' ([{}] int64: draft id d is target token d + {}[d])", kind, dir,
               d2t_name, draft_vocab_size, d2t_name);
  const TensorInfo& d2t = store.find(d2t_name);
  DSPARK_CHECK(d2t.shape == std::vector<int64_t>{draft_vocab_size},
               "{} drafter {}: tensor '{}' has shape {} but its vocabulary has {} tokens", kind, dir, d2t_name,
               format_shape(d2t.shape), draft_vocab_size);
  DSPARK_CHECK(d2t.dtype_tag == "I64" || d2t.dtype_tag == "I32",
               "{} drafter {}: tensor '{}' has dtype {}; it must be I64 (or I32)", kind, dir, d2t_name, d2t.dtype_tag);
  std::vector<int32_t> target(draft_vocab_size);
  std::vector<bool> taken(vocab, false);
  for (int64_t d = 0; d < draft_vocab_size; ++d) {
    int64_t offset;
    if (d2t.dtype_tag == "I64") {
      std::memcpy(&offset, d2t.bytes.data() + d * 8, 8);
    } else {
      int32_t v;
      std::memcpy(&v, d2t.bytes.data() + d * 4, 4);
      offset = v;
    }
    const int64_t t = d + offset;
    DSPARK_CHECK(t >= 0 && t < vocab,
                 "{} drafter {}: {} maps draft id {} to token {}, outside the target's vocabulary 0..{}", kind, dir,
                 d2t_name, d, t, vocab - 1);
    DSPARK_CHECK(!taken[t], "{} drafter {}: {} maps two draft ids to token {}", kind, dir, d2t_name, t);
    taken[t] = true;
    target[d] = static_cast<int32_t>(t);
  }
  if (store.contains(t2d_name)) {
    const TensorInfo& t2d = store.find(t2d_name);
    DSPARK_CHECK(t2d.shape == std::vector<int64_t>{vocab} && t2d.dtype_tag == "BOOL",
                 "{} drafter {}: tensor '{}' must be BOOL [{}], got {} {}", kind, dir, t2d_name, vocab, t2d.dtype_tag,
                 format_shape(t2d.shape));
    for (int64_t t = 0; t < vocab; ++t) {
      const bool marked = t2d.bytes[t] != std::byte{0};
      DSPARK_CHECK(marked == taken[t], "{} drafter {}: {} and {} disagree about token {}", kind, dir, t2d_name,
                   d2t_name, t);
    }
  }
  return target;
}

namespace {

// Rows target_ids of a stored [V, C] tensor, byte for byte (any dtype): [V_d, C].
TensorToWrite gather_rows(const TensorInfo& t, const std::string& name, std::span<const int32_t> target_ids,
                          int64_t vocab) {
  DSPARK_CHECK(t.shape.size() == 2 && t.shape[0] == vocab, "{}: tensor '{}' has shape {}; expected [{}, *]",
               t.file.string(), t.name, format_shape(t.shape), vocab);
  const size_t row_bytes = static_cast<size_t>(t.shape[1]) * safetensors_tag_size(t.dtype_tag);
  const auto rows = static_cast<int64_t>(target_ids.size());
  TensorToWrite out{name, t.dtype, {rows, t.shape[1]}, {}, t.supported ? "" : t.dtype_tag};
  out.bytes.resize(static_cast<size_t>(rows) * row_bytes);
  for (int64_t d = 0; d < rows; ++d) {
    std::memcpy(out.bytes.data() + d * row_bytes, t.bytes.data() + target_ids[d] * row_bytes, row_bytes);
  }
  return out;
}

TensorToWrite copy_tensor(const TensorInfo& t) {
  TensorToWrite out{t.name, t.dtype, t.shape, {}, t.supported ? "" : t.dtype_tag};
  out.bytes.assign(t.bytes.begin(), t.bytes.end());
  return out;
}

// The target's LM head as stored: lm_head.weight, or the tied embedding table.
const TensorInfo& target_lm_head(const WeightStore& target, const ModelConfig& config) {
  if (target.contains("lm_head.weight")) return target.find("lm_head.weight");
  DSPARK_CHECK(config.tie_word_embeddings && target.contains("model.embed_tokens.weight"),
               "target {} has no lm_head.weight (and no tied model.embed_tokens.weight) to take the draft "
               "vocabulary's LM-head rows from",
               target.dir().string());
  return target.find("model.embed_tokens.weight");
}

}  // namespace

void write_draft_vocab(const std::filesystem::path& drafter_dir, const std::filesystem::path& target_dir,
                       std::span<const int32_t> target_ids, DraftVocabUse use, const std::filesystem::path& out_dir) {
  DrafterConfig config = DrafterConfig::from_file(drafter_dir);
  const int64_t vocab = config.layer.vocab_size;
  const auto size = static_cast<int64_t>(target_ids.size());
  DSPARK_CHECK(!config.reduces_vocab() && config.greedy_draft_vocab_size == 0,
               "drafter {} already has a draft vocabulary (draft_vocab_size {}, greedy_draft_vocab_size {} of {} "
               "tokens); reduce the drafter with its whole vocabulary",
               drafter_dir.string(), config.draft_vocab_size, config.greedy_draft_vocab_size, vocab);
  DSPARK_CHECK(size >= 1 && size < vocab, "a draft vocabulary of {} tokens is not a part of the drafter's {}", size,
               vocab);
  std::vector<int64_t> d2t(size);
  std::vector<uint8_t> t2d(vocab, 0);
  for (int64_t d = 0; d < size; ++d) {
    const int32_t t = target_ids[d];
    DSPARK_CHECK(t >= 0 && t < vocab, "draft vocabulary: token {} is outside 0..{}", t, vocab - 1);
    DSPARK_CHECK(!t2d[t], "draft vocabulary: token {} is listed twice", t);
    t2d[t] = 1;
    d2t[d] = t - d;
  }
  const bool greedy = use == DraftVocabUse::kGreedyRequests;
  const std::string prefix = greedy ? "greedy_vocab." : "";
  const WeightStore drafter(drafter_dir);
  std::vector<TensorToWrite> tensors;
  for (const std::string& name : drafter.names()) {
    const TensorInfo& t = drafter.find(name);
    const bool per_draft_token = name == "markov_head.markov_w2.weight" || name == "lm_head.weight";
    if (per_draft_token) {
      const std::string head_name = name == "lm_head.weight" ? name : "markov_w2.weight";
      tensors.push_back(gather_rows(t, greedy ? prefix + head_name : name, target_ids, vocab));
    }
    if (greedy || !per_draft_token) tensors.push_back(copy_tensor(t));
  }
  if (!drafter.contains("lm_head.weight")) {
    const ModelConfig target_config = ModelConfig::from_file(target_dir);
    DSPARK_CHECK(target_config.vocab_size == vocab, "target {} has vocab_size {} but the drafter {} has {}",
                 target_dir.string(), target_config.vocab_size, drafter_dir.string(), vocab);
    const WeightStore target(target_dir);
    tensors.push_back(gather_rows(target_lm_head(target, target_config), prefix + "lm_head.weight", target_ids, vocab));
  }
  tensors.push_back(make_i64_tensor(prefix + "d2t", {size}, d2t));
  tensors.push_back(make_bool_tensor(prefix + "t2d", {vocab}, t2d));
  (greedy ? config.greedy_draft_vocab_size : config.draft_vocab_size) = size;
  config.validate((out_dir / "config.json").string());
  std::filesystem::create_directories(out_dir);
  write_safetensors(out_dir / "model.safetensors", tensors, {{"format", "pt"}});
  std::ofstream config_file(out_dir / "config.json");
  config_file << config.to_json().dump(2) << "\n";
  DSPARK_CHECK(config_file.good(), "cannot write {}", (out_dir / "config.json").string());
}

void scatter_draft_logits(std::span<const int32_t> to_target, const float* draft_row, float* target_row) {
  for (size_t d = 0; d < to_target.size(); ++d) target_row[to_target[d]] = draft_row[d];
}

int32_t greedy_draft_token(const float* draft_row, int64_t size, std::span<const int32_t> to_target, bool ascending) {
  const int32_t first = argmax(draft_row, size);  // NaNs skipped
  const float top = draft_row[first];
  if (!(top > -std::numeric_limits<float>::infinity())) return -1;
  if (to_target.empty()) return first;
  if (ascending) return to_target[static_cast<size_t>(first)];
  int32_t best = to_target[static_cast<size_t>(first)];
  for (int64_t d = first + 1; d < size; ++d)
    if (draft_row[d] == top) best = std::min(best, to_target[static_cast<size_t>(d)]);
  return best;
}

}  // namespace dspark
