#include "model/embedding_table.h"

#include <cstring>

#include "core/check.h"

namespace dspark {

EmbeddingTable::EmbeddingTable(std::span<const float> values, int64_t vocab, int64_t hidden, DType storage)
    : vocab_(vocab), hidden_(hidden), storage_(storage) {
  DSPARK_CHECK(vocab > 0 && hidden > 0, "embedding table needs a positive shape, got [{}, {}]", vocab, hidden);
  DSPARK_CHECK(static_cast<int64_t>(values.size()) == vocab * hidden,
               "embedding table of [{}, {}] needs {} values, got {}", vocab, hidden, vocab * hidden, values.size());
  DSPARK_CHECK(storage == DType::kF32 || storage == DType::kBF16, "embedding storage must be f32 or bf16, got {}",
               dtype_name(storage));
  if (storage == DType::kF32) {
    f32_.assign(values.begin(), values.end());
  } else {
    bf16_.resize(values.size());
    convert_f32_to_bf16(values.data(), bf16_.data(), values.size());
  }
}

void EmbeddingTable::lookup(int32_t token, float* out) const {
  const int64_t row = static_cast<int64_t>(token) * hidden_;
  if (storage_ == DType::kF32) {
    std::memcpy(out, f32_.data() + row, static_cast<size_t>(hidden_) * sizeof(float));
  } else {
    convert_to_f32(bf16_.data() + row, DType::kBF16, out, static_cast<size_t>(hidden_));
  }
}

void EmbeddingTable::lookup(const int32_t* tokens, int64_t num_tokens, float* out) const {
  for (int64_t t = 0; t < num_tokens; ++t) lookup(tokens[t], out + t * hidden_);
}

}  // namespace dspark
