#include "model/kv_pool.h"

#include "core/check.h"

namespace dspark {

KvPool::KvPool(const ModelConfig& config, const KvPoolOptions& options)
    : options_(options), num_kv_heads_(config.num_key_value_heads), head_dim_(config.head_dim) {
  DSPARK_CHECK(options.num_blocks > 0 && options.block_size > 0, "KV pool needs positive num_blocks and block_size, got {} and {}",
               options.num_blocks, options.block_size);
  DSPARK_CHECK(options.dtype == DType::kF32 || options.dtype == DType::kBF16, "KV cache dtype must be f32 or bf16, got {}",
               dtype_name(options.dtype));
  const size_t layer_bytes = static_cast<size_t>(options.num_blocks * options.block_size * num_kv_heads_ * head_dim_) *
                             dtype_size(options.dtype);
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    k_.push_back(AlignedBuffer::in_huge_pages(layer_bytes));
    v_.push_back(AlignedBuffer::in_huge_pages(layer_bytes));
  }
}

KvLayerView KvPool::layer(int64_t layer_index) {
  KvLayerView view;
  view.k = k_[layer_index].data();
  view.v = v_[layer_index].data();
  view.dtype = options_.dtype;
  view.num_blocks = options_.num_blocks;
  view.block_size = options_.block_size;
  view.num_kv_heads = num_kv_heads_;
  view.head_dim = head_dim_;
  return view;
}

size_t KvPool::bytes() const {
  size_t total = 0;
  for (const auto& b : k_) total += b.size();
  for (const auto& b : v_) total += b.size();
  return total;
}

}  // namespace dspark
