#include "structured/grammar_token_masks.h"

#include <algorithm>

namespace dspark {

void GrammarTokenMasks::allowed_tokens(const GrammarMatcher& state, std::span<uint64_t> mask) {
  if (states_.size() > GrammarStateTable::kMaxStates) {
    states_.clear();
    masks_.clear();
    cached_bytes_ = 0;
  }
  const int32_t id = states_.intern(state);
  if (static_cast<size_t>(id) < masks_.size() && !masks_[static_cast<size_t>(id)].empty()) {
    const std::vector<uint64_t>& kept = masks_[static_cast<size_t>(id)];
    std::copy(kept.begin(), kept.end(), mask.begin());
    return;
  }
  masker_->allowed_tokens(GrammarStateRef(states_, id), mask);
  ++num_walks_;
  const int64_t bytes = static_cast<int64_t>(mask.size_bytes());
  if (cached_bytes_ + bytes <= kMaxCachedBytes) {
    if (masks_.size() <= static_cast<size_t>(id)) masks_.resize(static_cast<size_t>(id) + 1);
    masks_[static_cast<size_t>(id)].assign(mask.begin(), mask.end());
    cached_bytes_ += bytes;
  }
}

}  // namespace dspark
