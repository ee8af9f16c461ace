// PrefixCache on its own: which blocks a sequence gets back, that the last token is always
// left to compute, that blocks are registered once and only when wholly computed, and
// that a lookup never hands out a block whose tokens differ.
#include "engine/prefix_cache.h"

#include <numeric>

#include <gtest/gtest.h>

namespace dspark {
namespace {

constexpr int64_t kBlock = 4;

std::vector<int32_t> iota_tokens(int n, int32_t first = 10) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Runs a sequence as the engine would: attach, reserve the rest, "compute" everything
// but the last token, register, release. Returns the positions the cache gave.
int64_t run_sequence(PrefixCache& cache, BlockAllocator& allocator, const std::vector<int32_t>& tokens) {
  BlockTable table;
  PrefixKeys keys;
  const int64_t cached = cache.attach(tokens, table, keys, allocator);
  EXPECT_TRUE(table.reserve(static_cast<int64_t>(tokens.size()), kBlock, allocator));
  cache.insert(tokens, static_cast<int64_t>(tokens.size()) - 1, table, keys, allocator);
  table.release_all(allocator);
  return cached;
}

TEST(PrefixCache, ASecondSequenceGetsTheSharedFullBlocks) {
  BlockAllocator allocator(16);
  PrefixCache cache(16, kBlock);
  const std::vector<int32_t> a = iota_tokens(11);  // blocks 0, 1 full and computed; block 2 partial
  EXPECT_EQ(run_sequence(cache, allocator, a), 0);
  EXPECT_EQ(allocator.num_cached(), 2);
  EXPECT_EQ(allocator.num_used(), 0);
  // Same first 9 tokens, then different: blocks 0 and 1 are shared.
  std::vector<int32_t> b = iota_tokens(9);
  b.push_back(77);
  b.push_back(78);
  b.push_back(79);
  EXPECT_EQ(run_sequence(cache, allocator, b), 8);
  // Differing in the first block: nothing.
  std::vector<int32_t> c = a;
  c[1] = 99;
  EXPECT_EQ(run_sequence(cache, allocator, c), 0);
}

TEST(PrefixCache, TheLastTokenIsAlwaysLeftToCompute) {
  BlockAllocator allocator(16);
  PrefixCache cache(16, kBlock);
  const std::vector<int32_t> t = iota_tokens(13);
  run_sequence(cache, allocator, t);  // registers blocks 0..2 (positions 0..11 computed)
  const std::vector<int32_t> exact(t.begin(), t.begin() + 12);
  EXPECT_EQ(run_sequence(cache, allocator, exact), 8);  // 12 tokens: block 2 would leave none
  EXPECT_EQ(run_sequence(cache, allocator, t), 12);
}

TEST(PrefixCache, OnlyWhollyComputedBlocksAreRegisteredAndEachOnce) {
  BlockAllocator allocator(16);
  PrefixCache cache(16, kBlock);
  const std::vector<int32_t> t = iota_tokens(12);
  BlockTable table;
  PrefixKeys keys;
  EXPECT_EQ(cache.attach(t, table, keys, allocator), 0);
  ASSERT_TRUE(table.reserve(12, kBlock, allocator));
  cache.insert(t, 7, table, keys, allocator);  // block 1 is not complete
  EXPECT_EQ(allocator.num_cached(), 1);
  EXPECT_EQ(keys.num_offered, 1);
  cache.insert(t, 8, table, keys, allocator);
  EXPECT_EQ(allocator.num_cached(), 2);
  cache.insert(t, 8, table, keys, allocator);
  EXPECT_EQ(keys.num_offered, 2);
  // A concurrent duplicate computing the same prefix keeps its own blocks private.
  BlockTable other;
  PrefixKeys other_keys;
  ASSERT_TRUE(other.reserve(12, kBlock, allocator));
  cache.insert(t, 12, other, other_keys, allocator);
  EXPECT_EQ(allocator.num_cached(), 3);  // only its block 2 is new
  other.release_all(allocator);
  table.release_all(allocator);
  EXPECT_EQ(allocator.num_used(), 0);
  EXPECT_EQ(allocator.num_free(), 16);
}

TEST(PrefixCache, EvictedBlocksAreRecomputed) {
  BlockAllocator allocator(4);  // one sequence of up to 16 positions at a time
  PrefixCache cache(4, kBlock);
  const std::vector<int32_t> a = iota_tokens(9, 10);
  const std::vector<int32_t> b = iota_tokens(16, 50);
  run_sequence(cache, allocator, a);  // caches 2 blocks
  run_sequence(cache, allocator, b);  // needs all 4: evicts a's
  EXPECT_GT(allocator.num_evictions(), 0);
  EXPECT_EQ(run_sequence(cache, allocator, a), 0);
}

TEST(PrefixCache, ALookupChecksTheTokensNotJustTheKey) {
  // Two caches over one allocator stand in for a key collision: the second cache never
  // stored tokens for the block the first registered, so the key alone must not match.
  BlockAllocator allocator(8);
  PrefixCache cache(8, kBlock);
  const std::vector<int32_t> t = iota_tokens(9);
  run_sequence(cache, allocator, t);
  PrefixCache stranger(8, kBlock);
  BlockTable table;
  PrefixKeys keys;
  EXPECT_EQ(stranger.attach(t, table, keys, allocator), 0);
  EXPECT_EQ(cache.attach(t, table, keys, allocator), 8);
  table.release_all(allocator);
}

}  // namespace
}  // namespace dspark
