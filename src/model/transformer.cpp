#include "model/transformer.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/norm.h"
#include "model/fused_linear.h"
#include "model/rope_frequencies.h"

namespace dspark {
namespace {

int64_t resolve_max_model_len(const ModelConfig& config, const TransformerOptions& options) {
  return options.max_model_len > 0 ? options.max_model_len : config.max_position_embeddings;
}

std::vector<float> load_embedding(const WeightStore& store, const ModelConfig& c) {
  const int64_t shape[2] = {c.vocab_size, c.hidden_size};
  return store.load_f32("model.embed_tokens.weight", shape);
}

Linear make_lm_head(const WeightStore& store, const ModelConfig& c, const std::vector<float>& embedding,
                    const LinearOptions& options) {
  if (c.tie_word_embeddings && !store.contains("lm_head.weight")) {
    return Linear(embedding, c.vocab_size, c.hidden_size, {}, options);
  }
  if (is_quantized(store, "lm_head")) return Linear(load_int8_weights(store, "lm_head", c.vocab_size, c.hidden_size), {}, options);
  const int64_t shape[2] = {c.vocab_size, c.hidden_size};
  const std::vector<float> w = store.load_f32("lm_head.weight", shape);
  return Linear(w, c.vocab_size, c.hidden_size, {}, options);
}

}  // namespace

void TransformerOptions::validate(const ModelConfig& config) const {
  DSPARK_CHECK(compute == DType::kBF16 || compute == DType::kF32, "compute dtype must be bf16 or f32, got {}",
               dtype_name(compute));
  DSPARK_CHECK(max_batch_tokens >= 1, "max_batch_tokens must be >= 1, got {}", max_batch_tokens);
  DSPARK_CHECK(max_sequences >= 1, "max_sequences must be >= 1, got {}", max_sequences);
  DSPARK_CHECK(max_model_len >= 0 && max_model_len <= config.max_position_embeddings,
               "max_model_len {} must be within the model's max_position_embeddings {}", max_model_len,
               config.max_position_embeddings);
  for (int32_t l : capture_layers) {
    DSPARK_CHECK(l >= 0 && l < config.num_hidden_layers, "capture layer {} out of range: the model has {} layers", l,
                 config.num_hidden_layers);
  }
}

Transformer::Transformer(ModelConfig config, const WeightStore& store, const TransformerOptions& options)
    : config_(std::move(config)),
      options_((options.validate(config_), options)),
      max_model_len_(resolve_max_model_len(config_, options_)),
      lm_head_([&] {
        const std::vector<float> embedding = load_embedding(store, config_);
        const LinearOptions lo{options_.compute, options_.max_batch_tokens, LinearBackend::kAuto, options_.quantization};
        embedding_ = std::make_shared<const EmbeddingTable>(embedding, config_.vocab_size, config_.hidden_size,
                                                            options_.compute);
        return make_lm_head(store, config_, embedding, lo);
      }()),
      rope_(rope_inverse_frequencies(config_), max_model_len_, rope_attention_factor(config_)),
      workspace_(config_, options_.max_batch_tokens),
      residual_(options_.max_batch_tokens * config_.hidden_size),
      hidden_out_(options_.capture_layers.size() * options_.max_batch_tokens * config_.hidden_size),
      final_rows_(options_.max_batch_tokens * config_.hidden_size),
      logits_(options_.max_batch_tokens * config_.vocab_size),
      positions_(options_.max_batch_tokens),
      seq_of_token_(options_.max_batch_tokens),
      num_keys_(options_.max_batch_tokens),
      slots_(options_.max_batch_tokens),
      block_tables_(options_.max_sequences) {
  const LinearOptions lo{options_.compute, options_.max_batch_tokens, LinearBackend::kAuto, options_.quantization};
  layers_.reserve(config_.num_hidden_layers);
  for (int64_t l = 0; l < config_.num_hidden_layers; ++l) layers_.emplace_back(config_, store, l, lo);
  const int64_t norm_shape[1] = {config_.hidden_size};
  final_norm_ = store.load_f32("model.norm.weight", norm_shape);
}

std::unique_ptr<Transformer> Transformer::load(const std::filesystem::path& model_dir,
                                               const TransformerOptions& options) {
  DSPARK_CHECK(std::filesystem::is_directory(model_dir), "model directory {} does not exist", model_dir.string());
  ModelConfig config = ModelConfig::from_file(model_dir / "config.json");
  WeightStore weights(model_dir);
  return std::make_unique<Transformer>(std::move(config), weights, options);
}

void Transformer::validate_batch(const ForwardBatch& batch, const KvPool& kv) const {
  const int64_t n = static_cast<int64_t>(batch.token_ids.size());
  DSPARK_CHECK(n >= 1 && n <= options_.max_batch_tokens, "batch has {} tokens; allowed 1..{}", n,
               options_.max_batch_tokens);
  DSPARK_CHECK(!batch.sequences.empty() && static_cast<int64_t>(batch.sequences.size()) <= options_.max_sequences,
               "batch has {} sequences; allowed 1..{}", batch.sequences.size(), options_.max_sequences);
  DSPARK_CHECK(kv.num_layers() == config_.num_hidden_layers, "KV pool has {} layers, model has {}", kv.num_layers(),
               config_.num_hidden_layers);
  int64_t total = 0;
  for (const SequenceSlice& s : batch.sequences) {
    DSPARK_CHECK(s.num_tokens >= 1 && s.start_position >= 0 && s.block_table != nullptr,
                 "invalid sequence slice (num_tokens {}, start_position {})", s.num_tokens, s.start_position);
    DSPARK_CHECK(s.start_position + s.num_tokens <= max_model_len_,
                 "sequence would reach {} tokens, beyond the maximum model length {}", s.start_position + s.num_tokens,
                 max_model_len_);
    total += s.num_tokens;
  }
  DSPARK_CHECK(total == n, "sequence slices cover {} tokens but the batch has {}", total, n);
  for (int32_t id : batch.token_ids) {
    DSPARK_CHECK(id >= 0 && id < config_.vocab_size, "token id {} outside the vocabulary [0, {})", id,
                 config_.vocab_size);
  }
  DSPARK_CHECK(static_cast<int64_t>(batch.logit_rows.size()) <= options_.max_batch_tokens,
               "{} logit rows requested; at most {}", batch.logit_rows.size(), options_.max_batch_tokens);
  for (int32_t r : batch.logit_rows) DSPARK_CHECK(r >= 0 && r < n, "logit row {} outside the batch of {} tokens", r, n);
}

ForwardResult Transformer::forward(const ForwardBatch& batch, KvPool& kv) {
  validate_batch(batch, kv);
  const int64_t n = static_cast<int64_t>(batch.token_ids.size());
  const int64_t h = config_.hidden_size;
  const int64_t block_size = kv.block_size();

  // Per-token metadata: position, owning sequence, visible keys (causal) and KV slot.
  int64_t t = 0;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceSlice& seq = batch.sequences[s];
    block_tables_[s] = seq.block_table;
    for (int32_t i = 0; i < seq.num_tokens; ++i, ++t) {
      const int32_t pos = seq.start_position + i;
      positions_[t] = pos;
      seq_of_token_[t] = static_cast<int32_t>(s);
      num_keys_[t] = pos + 1;
      const int32_t block = seq.block_table[pos / block_size];
      DSPARK_CHECK(block >= 0 && block < kv.num_blocks(), "block table entry {} outside the KV pool of {} blocks",
                   block, kv.num_blocks());
      slots_[t] = static_cast<int64_t>(block) * block_size + pos % block_size;
    }
  }

  LayerStepContext ctx;
  ctx.num_tokens = n;
  ctx.positions = positions_.data();
  ctx.seq_of_token = seq_of_token_.data();
  ctx.num_keys = num_keys_.data();
  ctx.slots = slots_.data();
  ctx.block_tables = block_tables_.data();
  ctx.rope = &rope_;

  float* x = residual_.data();  // [n, hidden]
  embedding_->lookup(batch.token_ids.data(), n, x);
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].forward(x, ctx, kv.layer(static_cast<int64_t>(l)), workspace_);
    const auto& capture = options_.capture_layers;
    for (size_t c = 0; c < capture.size(); ++c) {
      if (capture[c] == static_cast<int32_t>(l)) {
        std::memcpy(hidden_out_.data() + c * options_.max_batch_tokens * h, x, n * h * sizeof(float));
      }
    }
  }

  const int64_t num_rows = static_cast<int64_t>(batch.logit_rows.size());
  for (int64_t r = 0; r < num_rows; ++r) {
    std::memcpy(final_rows_.data() + r * h, x + static_cast<int64_t>(batch.logit_rows[r]) * h, h * sizeof(float));
  }
  ForwardResult result;
  result.num_tokens = n;
  if (num_rows > 0) {
    rms_norm(final_rows_.data(), final_norm_.data(), final_rows_.data(), num_rows, h, config_.rms_norm_eps);
    lm_head_.forward(final_rows_.data(), logits_.data(), num_rows);
    result.logits = logits_.data();
  }
  if (!options_.capture_layers.empty()) {
    result.hidden = hidden_out_.data();
    result.hidden_stride = options_.max_batch_tokens * h;
  }
  return result;
}

size_t Transformer::weight_bytes() const {
  size_t total = lm_head_.weight_bytes() + final_norm_.size() * sizeof(float) +
                 config_.hidden_size * dtype_size(embedding_->storage());
  for (const auto& layer : layers_) total += layer.weight_bytes();
  return total;
}

}  // namespace dspark
