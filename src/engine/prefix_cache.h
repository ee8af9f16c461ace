// PrefixCache: automatic prefix caching over the engine's paged KV cache (vLLM's design).
//
// A full block of a sequence is identified by the chain key of its token prefix:
//   key_0 = H(seed, tokens[0, B)),   key_i = H(key_{i-1}, tokens[iB, (i+1)B)),
// so equal keys mean equal tokens at equal positions from the start, and hence equal K/V
// (the kernels are batch-invariant: a position's K/V does not depend on how it was
// batched or chunked). Once every position of a block is computed, the block is
// registered under its key (BlockAllocator::set_key); when its last user releases it, it
// stays cached until the allocator evicts it (LRU). A new request takes the longest run
// of cached blocks from its start, as shared read-only blocks, and computes only the
// rest. Shared blocks are never written: a sequence writes only at positions >= its
// num_computed, and every block it shares or registered lies wholly before that.
//
// A lookup compares the stored tokens and the parent key of every block it takes, so a
// 64-bit key collision cannot hand a request someone else's K/V.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/block_allocator.h"

namespace dspark {

// What the cache keeps per sequence: its block keys (a function of its tokens only, so
// they stay valid across preemption) and how many of its blocks have been offered to the
// cache since it last got blocks.
struct PrefixKeys {
  std::vector<uint64_t> keys;  // keys[i]: chain key of full block i, computed as needed
  int64_t num_offered = 0;     // blocks [0, num_offered) are registered, shared, or duplicates
};

class PrefixCache {
 public:
  PrefixCache(int64_t num_blocks, int64_t block_size);

  // For a sequence with no blocks yet: appends to `table` (retaining them) the longest
  // run of cached blocks that matches tokens from the start, leaving at least the last
  // token uncomputed (its logits are needed). Returns the positions covered.
  int64_t attach(std::span<const int32_t> tokens, BlockTable& table, PrefixKeys& prefix, BlockAllocator& allocator);
  // Registers the sequence's full blocks whose positions are all below num_computed and
  // that were not offered before. A block whose key another block already holds stays
  // private and is freed normally.
  void insert(std::span<const int32_t> tokens, int64_t num_computed, const BlockTable& table, PrefixKeys& prefix,
              BlockAllocator& allocator);

  int64_t block_size() const { return block_size_; }

 private:
  // keys[i], computed from keys[i - 1] and the tokens of block i if not yet known.
  uint64_t key_of_block(std::span<const int32_t> tokens, int64_t i, std::vector<uint64_t>& keys) const;
  bool holds(int32_t block, uint64_t parent, std::span<const int32_t> block_tokens) const;

  int64_t block_size_;
  std::vector<int32_t> tokens_;   // [num_blocks, block_size] tokens of each registered block
  std::vector<uint64_t> parent_;  // [num_blocks] key of the block before it (the seed for block 0)
};

}  // namespace dspark
