// BlockAllocator: which KV blocks are free, which are in use and by how many sequences,
// and which hold a cached token prefix (prefix caching, engine/prefix_cache.h).
//
// A block in use has a reference count (the sequences whose block tables hold it; more
// than one when a cached prefix is shared). When the count drops to zero, a block that
// carries a cache key is not freed but becomes evictable: its contents stay valid and a
// later lookup of its key can take it back. Allocation hands out never-cached free blocks
// first, lowest id first (so runs are reproducible), and only when none is left evicts
// the evictable block released longest ago (LRU), dropping its key.
//
// BlockTable: the blocks of one sequence, in position order.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace dspark {

class BlockAllocator {
 public:
  explicit BlockAllocator(int64_t num_blocks);

  int64_t num_blocks() const { return num_blocks_; }
  // Blocks an allocation can take: never-cached free ones plus evictable cached ones.
  int64_t num_free() const { return static_cast<int64_t>(free_.size()) + num_evictable_; }
  // Blocks referenced by at least one sequence.
  int64_t num_used() const { return num_blocks_ - num_free(); }
  // Blocks holding a cached prefix, referenced or evictable.
  int64_t num_cached() const { return static_cast<int64_t>(block_of_key_.size()); }
  int64_t num_evictions() const { return num_evictions_; }

  // A block with one reference, or -1 when none is free.
  int32_t allocate();
  // One reference fewer (see the class comment for what happens at zero).
  void release(int32_t block);
  // One reference more to a block that is in use or evictable (a prefix-cache hit).
  void retain(int32_t block);

  // Marks a block in use as holding the prefix `key`. Returns false (and changes nothing)
  // when another block already holds that key, or this block already has a key.
  bool set_key(int32_t block, uint64_t key);
  // The block holding `key`, or -1.
  int32_t find(uint64_t key) const;

 private:
  static constexpr int32_t kNone = -1;
  void unlink_evictable(int32_t block);

  int64_t num_blocks_;
  std::vector<int32_t> free_;       // never-cached free blocks; stack, lowest id on top
  std::vector<int32_t> refs_;       // [num_blocks] references; 0 = free or evictable
  std::vector<uint8_t> has_key_;    // [num_blocks]
  std::vector<uint64_t> key_;       // [num_blocks] valid where has_key_
  std::unordered_map<uint64_t, int32_t> block_of_key_;
  // Evictable blocks as a doubly linked list in release order (head = released longest ago).
  std::vector<int32_t> prev_;       // [num_blocks]
  std::vector<int32_t> next_;       // [num_blocks]
  int32_t lru_head_ = kNone;
  int32_t lru_tail_ = kNone;
  int64_t num_evictable_ = 0;
  int64_t num_evictions_ = 0;
};

class BlockTable {
 public:
  // Grows the table to cover num_positions positions. Returns false (and allocates
  // nothing) when the allocator has too few free blocks.
  bool reserve(int64_t num_positions, int64_t block_size, BlockAllocator& allocator);
  // reserve() for a sequence read through a sliding window that starts at first_position
  // and never moves back: blocks wholly before it are released (their entries become
  // kReleased, never to be read) and none is allocated for them.
  bool reserve_window(int64_t first_position, int64_t num_positions, int64_t block_size, BlockAllocator& allocator);
  static constexpr int32_t kReleased = -1;
  // Appends a block the caller has already taken a reference to (a prefix-cache hit).
  void append_shared(int32_t block) { blocks_.push_back(block); }
  void release_all(BlockAllocator& allocator);
  const int32_t* data() const { return blocks_.data(); }
  int32_t operator[](int64_t i) const { return blocks_[i]; }
  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }

 private:
  std::vector<int32_t> blocks_;
  int64_t num_released_ = 0;  // leading entries that are kReleased
};

}  // namespace dspark
