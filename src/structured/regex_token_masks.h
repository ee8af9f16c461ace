// The allowed-token masks of one regex's states over one vocabulary, for one request. A
// trie walk from a permissive state (inside [^\n]{0,200}, say) visits nearly every token of
// the vocabulary: about 90 us for 8K tokens, 600 us for 50K, where a JSON string's mask takes
// 2-3 us (its plain tokens are precomputed). But states that no string of at most the
// longest token's length tells apart allow the same text tokens
// (CompiledRegex::lookahead_classes), so each such class is walked once and copied after:
// a loop such as \w+ or [^\n]* has a few classes, a counted run one per position near its
// end and one for all the positions before that.
//
// Gives TokenMasker::allowed_tokens's bits exactly (EOS where the state may end, only EOS
// where it is complete). Not thread-safe; one per request. Allocates a class's mask the
// first time one of its states is asked.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "structured/regex_dfa.h"
#include "structured/token_mask.h"

namespace dspark {

class RegexTokenMasks {
 public:
  // Both must outlive this.
  RegexTokenMasks(const TokenMasker& masker, const CompiledRegex& regex);

  // mask: [masker.num_words()], overwritten with the allowed ids after state.
  void allowed_tokens(const RegexMatcher& state, std::span<uint64_t> mask);

  int64_t num_classes() const { return static_cast<int64_t>(masks_.size()); }
  int64_t num_walks() const { return num_walks_; }  // masks computed, not copied

 private:
  const TokenMasker* masker_;
  std::shared_ptr<const std::vector<int32_t>> class_of_;  // [regex states] (the regex's, shared)
  std::vector<std::vector<uint64_t>> masks_;  // [classes] text tokens only; empty until asked
  int64_t num_walks_ = 0;
};

}  // namespace dspark
