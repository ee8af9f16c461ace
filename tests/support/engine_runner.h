// Test conveniences around the engine's Transformer: run whole sequences, alone or
// batched, with a private KV pool and block tables.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/block_allocator.h"
#include "model/kv_pool.h"
#include "model/transformer.h"

namespace dspark::testing {

class EngineRunner {
 public:
  EngineRunner(Transformer& model, DType kv_dtype = DType::kF32, int64_t block_size = 4, int64_t num_blocks = 512);

  // Starts a new sequence; returns its index.
  int add_sequence();
  // Feeds tokens to several sequences in ONE forward (each entry: sequence index and its
  // new tokens); returns the logits of every fed token, per entry: [n_i, vocab].
  std::vector<std::vector<float>> step(const std::vector<std::pair<int, std::vector<int32_t>>>& feeds);
  // Convenience: one sequence, tokens fed in chunks of `chunk`; logits of all tokens.
  std::vector<float> run(int seq, const std::vector<int32_t>& tokens, int64_t chunk);

  // The raw result of the latest forward (its buffers stay valid until the next one).
  const ForwardResult& last_result() const { return last_; }
  KvPool& kv() { return kv_; }
  BlockAllocator& allocator() { return allocator_; }

 private:
  Transformer& model_;
  KvPool kv_;
  BlockAllocator allocator_;
  std::vector<BlockTable> tables_;
  std::vector<int32_t> lengths_;
  ForwardResult last_;
};

}  // namespace dspark::testing
