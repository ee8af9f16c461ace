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

}  // namespace
}  // namespace dspark
