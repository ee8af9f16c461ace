#include "engine/prefix_cache.h"

#include <algorithm>

#include "core/check.h"
#include "core/rng.h"

namespace dspark {
namespace {

constexpr uint64_t kSeed = 0x64737061726b2d31ull;  // the parent key of a sequence's first block

uint64_t chain_key(uint64_t parent, std::span<const int32_t> block_tokens) {
  uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ull);
  for (int32_t t : block_tokens) h = mix64(h ^ static_cast<uint32_t>(t));
  return h;
}

}  // namespace

PrefixCache::PrefixCache(int64_t num_blocks, int64_t block_size)
    : block_size_(block_size), tokens_(num_blocks * block_size, 0), parent_(num_blocks, 0) {
  DSPARK_CHECK(num_blocks > 0 && block_size > 0, "prefix cache needs blocks, got {} of {}", num_blocks, block_size);
}

uint64_t PrefixCache::key_of_block(std::span<const int32_t> tokens, int64_t i, std::vector<uint64_t>& keys) const {
  if (i < static_cast<int64_t>(keys.size())) return keys[i];
  DSPARK_CHECK(i == static_cast<int64_t>(keys.size()), "block keys are computed in order");
  const uint64_t parent = i == 0 ? kSeed : keys[i - 1];
  keys.push_back(chain_key(parent, tokens.subspan(i * block_size_, block_size_)));
  return keys.back();
}

bool PrefixCache::holds(int32_t block, uint64_t parent, std::span<const int32_t> block_tokens) const {
  const int32_t* stored = tokens_.data() + static_cast<int64_t>(block) * block_size_;
  return parent_[block] == parent && std::equal(block_tokens.begin(), block_tokens.end(), stored);
}

int64_t PrefixCache::attach(std::span<const int32_t> tokens, BlockTable& table, PrefixKeys& prefix,
                            BlockAllocator& allocator) {
  std::vector<uint64_t>& keys = prefix.keys;
  DSPARK_CHECK(table.num_blocks() == 0, "a prefix is attached only to a sequence without blocks");
  const int64_t max_blocks = tokens.empty() ? 0 : (static_cast<int64_t>(tokens.size()) - 1) / block_size_;
  int64_t matched = 0;
  for (; matched < max_blocks; ++matched) {
    const uint64_t key = key_of_block(tokens, matched, keys);
    const int32_t block = allocator.find(key);
    const uint64_t parent = matched == 0 ? kSeed : keys[matched - 1];
    if (block < 0 || !holds(block, parent, tokens.subspan(matched * block_size_, block_size_))) break;
    allocator.retain(block);
    table.append_shared(block);
  }
  prefix.num_offered = matched;
  return matched * block_size_;
}

void PrefixCache::insert(std::span<const int32_t> tokens, int64_t num_computed, const BlockTable& table,
                         PrefixKeys& prefix, BlockAllocator& allocator) {
  std::vector<uint64_t>& keys = prefix.keys;
  const int64_t full = std::min(num_computed / block_size_, table.num_blocks());
  for (int64_t i = prefix.num_offered; i < full; ++i) {
    const uint64_t key = key_of_block(tokens, i, keys);
    const int32_t block = table[i];
    if (!allocator.set_key(block, key)) continue;
    std::copy_n(tokens.begin() + i * block_size_, block_size_, tokens_.begin() + static_cast<int64_t>(block) * block_size_);
    parent_[block] = i == 0 ? kSeed : keys[i - 1];
  }
  prefix.num_offered = std::max(prefix.num_offered, full);
}

}  // namespace dspark
