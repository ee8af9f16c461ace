#include "model/block_allocator.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

TEST(BlockAllocator, AllocatesLowestFirstAndReleases) {
  BlockAllocator a(4);
  EXPECT_EQ(a.allocate(), 0);
  EXPECT_EQ(a.allocate(), 1);
  a.release(0);
  EXPECT_EQ(a.allocate(), 0);
  EXPECT_EQ(a.num_used(), 2);
  EXPECT_THROW(a.release(3), Error);  // never allocated
}

TEST(BlockTable, ReservesWholeBlocksAndFailsWithoutPartialAllocation) {
  BlockAllocator a(3);
  BlockTable t;
  EXPECT_TRUE(t.reserve(5, 4, a));  // 2 blocks
  EXPECT_EQ(t.num_blocks(), 2);
  EXPECT_TRUE(t.reserve(8, 4, a));  // still 2
  EXPECT_EQ(t.num_blocks(), 2);
  EXPECT_FALSE(t.reserve(13, 4, a));  // needs 2 more, only 1 free
  EXPECT_EQ(a.num_free(), 1);
  t.release_all(a);
  EXPECT_EQ(a.num_free(), 3);
}

// A sliding window: blocks wholly before its start are released and never allocated, the
// table keeps its indexing by position, and release_all frees only what is held.
TEST(BlockTable, AWindowHoldsOnlyTheBlocksItCanStillRead) {
  BlockAllocator allocator(6);
  BlockTable table;
  ASSERT_TRUE(table.reserve_window(0, 10, 4, allocator));  // positions 0..9: blocks 0..2
  EXPECT_EQ(allocator.num_used(), 3);
  ASSERT_TRUE(table.reserve_window(9, 20, 4, allocator));  // window from 9: blocks 0, 1 go
  EXPECT_EQ(table.num_blocks(), 5);
  EXPECT_EQ(table[0], BlockTable::kReleased);
  EXPECT_EQ(table[1], BlockTable::kReleased);
  EXPECT_NE(table[2], BlockTable::kReleased);
  EXPECT_EQ(allocator.num_used(), 3);  // blocks 2..4
  ASSERT_TRUE(table.reserve_window(40, 44, 4, allocator));  // a jump: nothing before 40 is held
  EXPECT_EQ(table.num_blocks(), 11);
  EXPECT_EQ(allocator.num_used(), 1);
  for (int64_t b = 0; b < 10; ++b) EXPECT_EQ(table[b], BlockTable::kReleased) << b;
  EXPECT_FALSE(table.reserve_window(40, 40 + 4 * 7, 4, allocator));  // 7 blocks: 6 more needed, 5 free
  EXPECT_EQ(allocator.num_used(), 1);
  table.release_all(allocator);
  EXPECT_EQ(allocator.num_used(), 0);
  EXPECT_EQ(table.num_blocks(), 0);
}

TEST(BlockAllocator, SharedBlocksAreFreedByTheirLastUser) {
  BlockAllocator a(2);
  const int32_t b = a.allocate();
  a.retain(b);
  a.release(b);
  EXPECT_EQ(a.num_used(), 1);  // one user left
  a.release(b);
  EXPECT_EQ(a.num_used(), 0);
  EXPECT_THROW(a.release(b), Error);
  EXPECT_THROW(a.retain(b), Error);  // free and uncached: nothing to retain
}

TEST(BlockAllocator, CachedBlocksStayFindableUntilEvictedLeastRecentlyReleasedFirst) {
  BlockAllocator a(3);
  const int32_t b0 = a.allocate(), b1 = a.allocate(), b2 = a.allocate();
  EXPECT_TRUE(a.set_key(b0, 100));
  EXPECT_TRUE(a.set_key(b1, 101));
  EXPECT_FALSE(a.set_key(b2, 100));  // another block holds that key
  EXPECT_FALSE(a.set_key(b0, 102));  // b0 already has one
  EXPECT_EQ(a.num_cached(), 2);
  a.release(b1);  // released first: evicted first
  a.release(b0);
  a.release(b2);  // uncached: plainly free, taken before any eviction
  EXPECT_EQ(a.num_free(), 3);
  EXPECT_EQ(a.num_used(), 0);
  EXPECT_EQ(a.find(100), b0);
  EXPECT_EQ(a.allocate(), b2);
  EXPECT_EQ(a.find(101), b1);
  // A hit takes b1 back out of the eviction order, so b0 goes next.
  a.retain(b1);
  EXPECT_EQ(a.num_free(), 1);
  EXPECT_EQ(a.allocate(), b0);
  EXPECT_EQ(a.find(100), -1);
  EXPECT_EQ(a.num_evictions(), 1);
  EXPECT_EQ(a.allocate(), -1);
  a.release(b1);
  EXPECT_EQ(a.allocate(), b1);  // evicted in turn
  EXPECT_EQ(a.find(101), -1);
  EXPECT_EQ(a.num_cached(), 0);
}

}  // namespace
}  // namespace dspark
