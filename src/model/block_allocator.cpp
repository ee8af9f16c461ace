#include "model/block_allocator.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

BlockAllocator::BlockAllocator(int64_t num_blocks)
    : num_blocks_(num_blocks),
      refs_(num_blocks, 0),
      has_key_(num_blocks, 0),
      key_(num_blocks, 0),
      prev_(num_blocks, kNone),
      next_(num_blocks, kNone) {
  DSPARK_CHECK(num_blocks > 0, "need at least one KV block, got {}", num_blocks);
  free_.reserve(num_blocks);
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

int32_t BlockAllocator::allocate() {
  int32_t block = kNone;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (lru_head_ != kNone) {
    block = lru_head_;
    unlink_evictable(block);
    block_of_key_.erase(key_[block]);
    has_key_[block] = 0;
    ++num_evictions_;
  } else {
    return kNone;
  }
  refs_[block] = 1;
  return block;
}

void BlockAllocator::release(int32_t block) {
  DSPARK_CHECK(block >= 0 && block < num_blocks_ && refs_[block] > 0, "releasing block {} that is not allocated", block);
  if (--refs_[block] > 0) return;
  if (!has_key_[block]) {
    free_.push_back(block);
    return;
  }
  // Evictable, most recently released last.
  prev_[block] = lru_tail_;
  next_[block] = kNone;
  if (lru_tail_ != kNone) next_[lru_tail_] = block;
  else lru_head_ = block;
  lru_tail_ = block;
  ++num_evictable_;
}

void BlockAllocator::retain(int32_t block) {
  DSPARK_CHECK(block >= 0 && block < num_blocks_ && (refs_[block] > 0 || has_key_[block]),
               "retaining block {} that is neither in use nor cached", block);
  if (refs_[block]++ == 0) unlink_evictable(block);
}

bool BlockAllocator::set_key(int32_t block, uint64_t key) {
  DSPARK_CHECK(block >= 0 && block < num_blocks_ && refs_[block] > 0, "caching block {} that is not in use", block);
  if (has_key_[block] || block_of_key_.count(key)) return false;
  block_of_key_.emplace(key, block);
  key_[block] = key;
  has_key_[block] = 1;
  return true;
}

int32_t BlockAllocator::find(uint64_t key) const {
  const auto it = block_of_key_.find(key);
  return it == block_of_key_.end() ? kNone : it->second;
}

void BlockAllocator::unlink_evictable(int32_t block) {
  if (prev_[block] != kNone) next_[prev_[block]] = next_[block];
  else lru_head_ = next_[block];
  if (next_[block] != kNone) prev_[next_[block]] = prev_[block];
  else lru_tail_ = prev_[block];
  prev_[block] = next_[block] = kNone;
  --num_evictable_;
}

bool BlockTable::reserve(int64_t num_positions, int64_t block_size, BlockAllocator& allocator) {
  const int64_t needed = (num_positions + block_size - 1) / block_size - num_blocks();
  if (needed <= 0) return true;
  if (needed > allocator.num_free()) return false;
  for (int64_t i = 0; i < needed; ++i) blocks_.push_back(allocator.allocate());
  return true;
}

bool BlockTable::reserve_window(int64_t first_position, int64_t num_positions, int64_t block_size,
                                BlockAllocator& allocator) {
  const int64_t first_block = first_position / block_size;  // blocks before it are wholly unread
  for (; num_released_ < std::min(first_block, num_blocks()); ++num_released_) {
    allocator.release(blocks_[num_released_]);
    blocks_[num_released_] = kReleased;
  }
  const int64_t total = (num_positions + block_size - 1) / block_size;
  const int64_t needed = total - std::max(first_block, num_blocks());
  if (needed > allocator.num_free()) return false;
  while (num_blocks() < std::min(first_block, total)) {
    blocks_.push_back(kReleased);
    ++num_released_;
  }
  while (num_blocks() < total) blocks_.push_back(allocator.allocate());
  return true;
}

void BlockTable::release_all(BlockAllocator& allocator) {
  for (int32_t b : blocks_)
    if (b != kReleased) allocator.release(b);
  blocks_.clear();
  num_released_ = 0;
}

}  // namespace dspark
