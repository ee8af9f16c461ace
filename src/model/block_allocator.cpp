#include "model/block_allocator.h"

#include "core/check.h"

namespace dspark {

BlockAllocator::BlockAllocator(int64_t num_blocks) : num_blocks_(num_blocks), used_(num_blocks, 0) {
  DSPARK_CHECK(num_blocks > 0, "need at least one KV block, got {}", num_blocks);
  free_.reserve(num_blocks);
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

int32_t BlockAllocator::allocate() {
  if (free_.empty()) return -1;
  const int32_t block = free_.back();
  free_.pop_back();
  used_[block] = 1;
  return block;
}

void BlockAllocator::release(int32_t block) {
  DSPARK_CHECK(block >= 0 && block < num_blocks_ && used_[block], "releasing block {} that is not allocated", block);
  used_[block] = 0;
  free_.push_back(block);
}

bool BlockTable::reserve(int64_t num_positions, int64_t block_size, BlockAllocator& allocator) {
  const int64_t needed = (num_positions + block_size - 1) / block_size - num_blocks();
  if (needed <= 0) return true;
  if (needed > allocator.num_free()) return false;
  for (int64_t i = 0; i < needed; ++i) blocks_.push_back(allocator.allocate());
  return true;
}

void BlockTable::release_all(BlockAllocator& allocator) {
  for (int32_t b : blocks_) allocator.release(b);
  blocks_.clear();
}

}  // namespace dspark
