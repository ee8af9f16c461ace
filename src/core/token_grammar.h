// A grammar over token sequences as the engine's other parts see it: which tokens may come
// next. structured/grammar_constraint.h implements it (response_format, forced tool calls); a
// drafter given one (spec/proposer.h DraftRequest::grammar) draws each draft among the
// tokens it allows, so that no draft is drawn only to be cut before verification.
#pragma once

#include <cstdint>
#include <span>

namespace dspark {

// Token masks, the grammar's answer: bit (id % 64) of word id / 64 set when id is allowed.
inline int64_t token_mask_words(int64_t num_logits) { return (num_logits + 63) / 64; }

inline bool token_mask_allows(std::span<const uint64_t> mask, int32_t id) {
  return ((mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1) != 0;
}

// logits: [num_logits]; mask: [token_mask_words(num_logits)]. Disallowed ids become -inf.
void apply_token_mask(std::span<const uint64_t> mask, float* logits, int64_t num_logits);

class TokenGrammar {
 public:
  virtual ~TokenGrammar() = default;
  // The tokens allowed after the committed output and then `drafts_before` (each of which
  // must have been allowed), as a mask of token_mask_words(vocab) words. Valid until the
  // next call.
  virtual std::span<const uint64_t> allowed_tokens(std::span<const int32_t> drafts_before) = 0;
};

}  // namespace dspark
