#include "support/engine_runner.h"

#include <algorithm>
#include <stdexcept>

namespace dspark::testing {

EngineRunner::EngineRunner(Transformer& model, DType kv_dtype, int64_t block_size, int64_t num_blocks)
    : model_(model), kv_(model.config(), KvPoolOptions{num_blocks, block_size, kv_dtype}), allocator_(num_blocks) {}

int EngineRunner::add_sequence() {
  tables_.emplace_back();
  lengths_.push_back(0);
  return static_cast<int>(tables_.size()) - 1;
}

std::vector<std::vector<float>> EngineRunner::step(const std::vector<std::pair<int, std::vector<int32_t>>>& feeds) {
  std::vector<int32_t> ids, rows;
  std::vector<SequenceSlice> slices;
  for (const auto& [seq, tokens] : feeds) {
    if (!tables_[seq].reserve(lengths_[seq] + static_cast<int64_t>(tokens.size()), kv_.block_size(), allocator_)) {
      throw std::runtime_error("test KV pool too small");
    }
    slices.push_back({static_cast<int32_t>(tokens.size()), lengths_[seq], tables_[seq].data()});
    for (int32_t id : tokens) {
      rows.push_back(static_cast<int32_t>(ids.size()));
      ids.push_back(id);
    }
  }
  ForwardBatch batch{ids, slices, rows};
  const ForwardResult out = model_.forward(batch, kv_);
  last_ = out;
  const int64_t vocab = model_.config().vocab_size;
  std::vector<std::vector<float>> result;
  int64_t row = 0;
  for (const auto& [seq, tokens] : feeds) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    result.emplace_back(out.logits + row * vocab, out.logits + (row + n) * vocab);
    row += n;
    lengths_[seq] += static_cast<int32_t>(n);
  }
  return result;
}

std::vector<float> EngineRunner::run(int seq, const std::vector<int32_t>& tokens, int64_t chunk) {
  std::vector<float> logits;
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    const size_t end = std::min(tokens.size(), i + static_cast<size_t>(chunk));
    auto part = step({{seq, std::vector<int32_t>(tokens.begin() + i, tokens.begin() + end)}});
    logits.insert(logits.end(), part[0].begin(), part[0].end());
  }
  return logits;
}

}  // namespace dspark::testing
