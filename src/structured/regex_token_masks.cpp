#include "structured/regex_token_masks.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

RegexTokenMasks::RegexTokenMasks(const TokenMasker& masker, const CompiledRegex& regex)
    : masker_(&masker),
      class_of_(regex.lookahead_classes(regex_lookahead_bytes(masker.max_token_bytes()))) {
  const int32_t num_classes = class_of_->empty() ? 0 : *std::max_element(class_of_->begin(), class_of_->end()) + 1;
  masks_.resize(static_cast<size_t>(num_classes));
}

void RegexTokenMasks::allowed_tokens(const RegexMatcher& state, std::span<uint64_t> mask) {
  DSPARK_CHECK(static_cast<int64_t>(mask.size()) == masker_->num_words(),
               "RegexTokenMasks: mask has {} words, expected {}", mask.size(), masker_->num_words());
  const int32_t cls = (*class_of_)[static_cast<size_t>(state.state())];
  std::vector<uint64_t>& short_tokens = masks_[static_cast<size_t>(cls)];
  if (short_tokens.empty()) {
    short_tokens.resize(mask.size());
    masker_->allowed_short_tokens(state, short_tokens);
    ++num_walks_;
  }
  std::copy(short_tokens.begin(), short_tokens.end(), mask.begin());
  masker_->add_allowed_long_tokens(state, mask);
  if (state.can_end()) {
    for (const int32_t id : masker_->eos_ids()) mask[id >> 6] |= uint64_t{1} << (id & 63);
  }
}

}  // namespace dspark
