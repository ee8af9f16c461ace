// Attention over a paged KV cache.
//
// KV layout, per layer: a pool of K and one of V, num_blocks blocks each, f32 or bf16. A
// sequence's position p lives in block block_table[p / block_size] at offset
// o = p % block_size, i.e. slot = block_id * block_size + o. V blocks are
// [block_size, num_kv_heads, head_dim] (a position's heads in one row); K blocks are
// transposed, [num_kv_heads, head_dim, block_size], so that one element of the head for
// consecutive positions is contiguous: a score tile is then a multiply-add per element of
// q over 16 keys at once, with no reduction across lanes (key_index says where an element is).
//
// Each query token t sees the first num_keys[t] positions of its own sequence (causal
// decoding: num_keys = position + 1; a drafter's non-causal block: context + block
// length). With a sliding window W > 0 it sees only the last W of them, positions
// [max(0, num_keys - W), num_keys): for causal rows the Hugging Face window, keys k with
// p - k < W. Grouped-query attention: query head h reads KV head h / (num_heads/num_kv_heads).
//
// Contract (tested): the output of a query row depends only on that row's q, its keys and
// values — bit for bit the same whatever the other rows, their number, or the thread count.
// Each (token, KV head) is computed whole by one thread, as an online softmax over tiles of
// 32 keys that start at the first visible position rounded down to a multiple of 16 (0
// without a window; keys before that position are masked), so the order is fixed by
// num_keys and the window alone. head_dim <= 256. Block-table entries before the
// window are never read (they may be freed). Inputs (num_keys >= 1, block ids
// inside the pool, num_heads a multiple of num_kv_heads) are checked before any work.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace dspark {

struct KvLayerView {
  void* k = nullptr;  // [num_blocks, num_kv_heads, head_dim, block_size]
  void* v = nullptr;  // [num_blocks, block_size, num_kv_heads, head_dim]
  DType dtype = DType::kF32;  // kF32 or kBF16
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
};

// Index of element i of KV head `head` at `offset` of block `block_id` in the K pool (the
// layout above; walks over a block table know both without dividing).
inline int64_t key_index_in_block(const KvLayerView& kv, int64_t block_id, int64_t offset, int64_t head, int64_t i) {
  return ((block_id * kv.num_kv_heads + head) * kv.head_dim + i) * kv.block_size + offset;
}
// The same for the element at `slot`.
inline int64_t key_index(const KvLayerView& kv, int64_t slot, int64_t head, int64_t i) {
  return key_index_in_block(kv, slot / kv.block_size, slot % kv.block_size, head, i);
}
// Index of element i of KV head `head` at `slot` in the V pool.
inline int64_t value_index(const KvLayerView& kv, int64_t slot, int64_t head, int64_t i) {
  return (slot * kv.num_kv_heads + head) * kv.head_dim + i;
}

// Stores new rows: k, v: [num_tokens, num_kv_heads, head_dim] f32; slots: [num_tokens].
void write_kv(const float* k, const float* v, const int64_t* slots, int64_t num_tokens,
              const KvLayerView& kv);

struct PagedAttentionArgs {
  const float* q = nullptr;                  // [num_tokens, num_heads, head_dim]
  float* out = nullptr;                      // [num_tokens, num_heads, head_dim]
  int64_t num_tokens = 0;
  int64_t num_heads = 0;
  const int32_t* seq_of_token = nullptr;     // [num_tokens] index into block_tables
  const int32_t* num_keys = nullptr;         // [num_tokens] visible leading positions, >= 1
  const int32_t* const* block_tables = nullptr;  // [num_seqs] -> block ids of that sequence
  float scale = 1.0f;                        // usually 1 / sqrt(head_dim)
  int64_t window = 0;                        // > 0: each row sees its last `window` keys only
};

void paged_attention(const PagedAttentionArgs& args, const KvLayerView& kv);

namespace reference {
// Straightforward two-pass softmax in double-free f32, one query row at a time.
void paged_attention(const PagedAttentionArgs& args, const KvLayerView& kv);
}  // namespace reference

}  // namespace dspark
