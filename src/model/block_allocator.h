// BlockAllocator: which KV blocks are free. Blocks are handed out lowest id first (so runs
// are reproducible) and returned when a sequence finishes, is cancelled or fails.
// BlockTable: the blocks of one sequence, in position order.
#pragma once

#include <cstdint>
#include <vector>

namespace dspark {

class BlockAllocator {
 public:
  explicit BlockAllocator(int64_t num_blocks);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t num_used() const { return num_blocks_ - num_free(); }
  // Returns -1 when none is free.
  int32_t allocate();
  void release(int32_t block);

 private:
  int64_t num_blocks_;
  std::vector<int32_t> free_;  // stack, lowest id on top
  std::vector<uint8_t> used_;  // [num_blocks] catches double frees
};

class BlockTable {
 public:
  // Grows the table to cover num_positions positions. Returns false (and allocates
  // nothing) when the allocator has too few free blocks.
  bool reserve(int64_t num_positions, int64_t block_size, BlockAllocator& allocator);
  void release_all(BlockAllocator& allocator);
  const int32_t* data() const { return blocks_.data(); }
  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }

 private:
  std::vector<int32_t> blocks_;
};

}  // namespace dspark
