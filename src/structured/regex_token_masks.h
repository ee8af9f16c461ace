// The allowed-token masks of one regex's states over one vocabulary, for one request. A
// trie walk from a permissive state (inside [^\n]{0,200}, say) visits nearly every token of
// the vocabulary: about 120 us for 8K tokens, 770 us for 50K, where a JSON string's mask takes
// 2-4 us (its plain tokens are precomputed). But states that no string of up to L bytes tells
// apart allow the same tokens of up to L bytes (CompiledRegex::lookahead_classes). So the
// short tokens' mask (L = kShortTokenBytes, structured/token_mask.h) is walked once per
// lookahead class and copied after, and the few longer tokens (GPT-2: 72 of 50,257) are
// walked for each state: a loop such as \w+ or [^\n]* costs a few walks per request, a
// counted run one per position within L bytes of its end and one for all the positions
// before that.
//
// Gives TokenMasker::allowed_tokens's bits exactly (EOS where the state may end, only EOS
// where it is complete). The requests of one regex in an engine share one
// (structured/shared_token_masks.h); not thread-safe: the engine's thread alone masks
// (engine/engine_loop.h). Allocates a class's mask the first time one of its states is asked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "structured/regex_dfa.h"
#include "structured/token_mask.h"

namespace dspark {

// The lookahead (bytes) RegexTokenMasks uses for a vocabulary whose longest text token has
// max_token_bytes bytes: what the server asks CompiledRegex::lookahead_classes for, ahead
// of the engine.
inline int32_t regex_lookahead_bytes(int32_t max_token_bytes) { return std::min(max_token_bytes, kShortTokenBytes); }

class RegexTokenMasks {
 public:
  // Both must outlive this.
  RegexTokenMasks(const TokenMasker& masker, const CompiledRegex& regex);

  // mask: [masker.num_words()], overwritten with the allowed ids after state.
  void allowed_tokens(const RegexMatcher& state, std::span<uint64_t> mask);

  int64_t num_classes() const { return static_cast<int64_t>(masks_.size()); }
  int64_t num_walks() const { return num_walks_; }  // short-token masks computed, not copied

 private:
  const TokenMasker* masker_;
  std::shared_ptr<const std::vector<int32_t>> class_of_;  // [regex states] (the regex's, shared)
  std::vector<std::vector<uint64_t>> masks_;  // [classes] short text tokens only; empty until asked
  int64_t num_walks_ = 0;
};

}  // namespace dspark
