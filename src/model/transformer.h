// Transformer: the target model's forward pass over a flat batch of tokens.
//
// Loads a Hugging Face Llama / Mistral / Qwen2 / Qwen3 checkpoint, converts and pre-packs
// its weights once for the compute dtype, and sizes every activation buffer for the
// largest batch up front: forward() does not allocate.
//
// forward() writes each token's K/V into the given KvPool (at the slots its sequence's
// block table names), attends causally within each sequence (only within the window of
// layers that have a sliding window), and returns
//   - logits for the requested rows only (the LM head is the costliest matmul at decode);
//   - the hidden states (residual stream after decoder layer l, before the final norm) of
//     every layer listed in options.capture_layers, for every token of the batch — the
//     context features block drafters consume.
// Results are views into internal buffers, valid until the next forward.
//
// Batch invariance (tested): a token's logits and hidden states are bit-identical whether
// its sequence runs alone or batched with others, and whatever the prefill chunking.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/linear.h"
#include "kernels/rope.h"
#include "loader/config.h"
#include "model/decoder_layer.h"
#include "model/embedding_table.h"
#include "model/forward_batch.h"
#include "model/kv_pool.h"
#include "loader/safetensors.h"

namespace dspark {

struct TransformerOptions {
  DType compute = DType::kBF16;         // matmul dtype: kBF16 or kF32
  WeightQuantization quantization = WeightQuantization::kNone;  // kInt8: matmul weights int8 (at load)
  int64_t max_batch_tokens = 256;       // most tokens in one forward (prefill chunk included)
  int64_t max_sequences = 64;           // most sequences in one forward
  int64_t max_model_len = 0;            // longest sequence; 0 = max_position_embeddings
  std::vector<int32_t> capture_layers;  // decoder layers whose outputs forward returns

  void validate(const ModelConfig& config) const;
};

struct ForwardResult {
  const float* logits = nullptr;    // [num_logit_rows, vocab]
  const float* hidden = nullptr;    // capture c at hidden + c * hidden_stride: [num_tokens, hidden]
  int64_t hidden_stride = 0;        // floats between two captured layers
  int64_t num_tokens = 0;

  // [num_tokens, hidden]: output of decoder layer options.capture_layers[c].
  const float* hidden_layer(size_t c) const { return hidden + c * hidden_stride; }
};

class Transformer {
 public:
  Transformer(ModelConfig config, const WeightStore& weights, const TransformerOptions& options);
  // Reads DIR/config.json and DIR's safetensors.
  static std::unique_ptr<Transformer> load(const std::filesystem::path& model_dir,
                                           const TransformerOptions& options);

  ForwardResult forward(const ForwardBatch& batch, KvPool& kv);

  const ModelConfig& config() const { return config_; }
  const TransformerOptions& options() const { return options_; }
  int64_t max_model_len() const { return max_model_len_; }
  // Bytes of weights one decode step streams from memory (packed matmul weights + norms +
  // one embedding row), for roofline reports.
  size_t weight_bytes() const;
  // The matmul kernel the weights run on (e.g. "fma512", "amx", "vnni512", "onednn").
  std::string matmul_kernel() const { return lm_head_.kernel_name(); }

  // What a block drafter shares instead of copying: the embedding table (held by both)
  // and the LM head (a drafter multiplies through lm_head().shared_view(rows)).
  const std::shared_ptr<const EmbeddingTable>& embedding() const { return embedding_; }
  const Linear& lm_head() const { return lm_head_; }

 private:
  void validate_batch(const ForwardBatch& batch, const KvPool& kv) const;

  ModelConfig config_;
  TransformerOptions options_;
  int64_t max_model_len_;
  std::shared_ptr<const EmbeddingTable> embedding_;  // [vocab, hidden] in the compute dtype
  std::vector<DecoderLayer> layers_;
  std::vector<float> final_norm_;     // [hidden]
  Linear lm_head_;                    // [vocab, hidden]
  RopeTable rope_;

  // Per-step buffers, sized at construction.
  LayerWorkspace workspace_;
  std::vector<float> residual_;       // [max_batch_tokens, hidden]
  std::vector<float> hidden_out_;     // [capture_layers, max_batch_tokens, hidden]
  std::vector<float> final_rows_;     // [max_batch_tokens, hidden]
  std::vector<float> logits_;         // [max_batch_tokens, vocab]
  std::vector<int32_t> positions_;    // [max_batch_tokens]
  std::vector<int32_t> seq_of_token_; // [max_batch_tokens]
  std::vector<int32_t> num_keys_;     // [max_batch_tokens]
  std::vector<int64_t> slots_;        // [max_batch_tokens]
  std::vector<const int32_t*> block_tables_;  // [max_sequences]
};

}  // namespace dspark
