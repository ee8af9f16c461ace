// EmbeddingTable: a token embedding matrix stored in a model's compute dtype (f32, or
// bf16 at half the memory), read one row per token. Immutable once built, so one table
// serves every reader: the target, and a block drafter that shares the target's
// embeddings holds the same table through a shared_ptr instead of a copy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"

namespace dspark {

class EmbeddingTable {
 public:
  // values: [vocab, hidden] f32, stored as `storage` (kF32 or kBF16, rounded once here).
  EmbeddingTable(std::span<const float> values, int64_t vocab, int64_t hidden, DType storage);

  // out: [hidden] f32, row `token` (widened from bf16 exactly).
  void lookup(int32_t token, float* out) const;
  // out: [num_tokens, hidden].
  void lookup(const int32_t* tokens, int64_t num_tokens, float* out) const;

  int64_t vocab() const { return vocab_; }
  int64_t hidden() const { return hidden_; }
  DType storage() const { return storage_; }
  size_t bytes() const { return f32_.size() * sizeof(float) + bf16_.size() * sizeof(uint16_t); }

 private:
  int64_t vocab_;
  int64_t hidden_;
  DType storage_;
  std::vector<float> f32_;      // [vocab, hidden] when storage is f32
  std::vector<uint16_t> bf16_;  // [vocab, hidden] when storage is bf16
};

}  // namespace dspark
