// KvPool: the memory of a paged KV cache — for every layer, a K pool of
// [num_blocks, num_kv_heads, head_dim, block_size] and a V pool of
// [num_blocks, block_size, num_kv_heads, head_dim] (kernels/attention.h says why K blocks
// are transposed). It only stores; which blocks belong to which sequence is the engine's
// bookkeeping (BlockAllocator + per-sequence block tables).
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "kernels/attention.h"
#include "loader/config.h"

namespace dspark {

struct KvPoolOptions {
  int64_t num_blocks = 256;        // blocks per layer
  int64_t block_size = 16;         // positions per block
  DType dtype = DType::kF32;       // kF32 or kBF16
};

class KvPool {
 public:
  KvPool(const ModelConfig& config, const KvPoolOptions& options);

  KvLayerView layer(int64_t layer_index);
  int64_t num_layers() const { return static_cast<int64_t>(k_.size()); }
  int64_t num_blocks() const { return options_.num_blocks; }
  int64_t block_size() const { return options_.block_size; }
  DType dtype() const { return options_.dtype; }
  size_t bytes() const;

 private:
  KvPoolOptions options_;
  int64_t num_kv_heads_;
  int64_t head_dim_;
  std::vector<AlignedBuffer> k_;  // per layer: [num_blocks, num_kv_heads, head_dim, block_size]
  std::vector<AlignedBuffer> v_;  // per layer: [num_blocks, block_size, num_kv_heads, head_dim]
};

}  // namespace dspark
