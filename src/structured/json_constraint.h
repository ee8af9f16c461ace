// Per-request JSON-object constraint (OpenAI response_format {"type": "json_object"}):
// the output tokens accepted so far, as a JsonMatcher state, and the logits masks that
// keep the output a prefix of a valid JSON object.
//
// With speculative decoding, a step verifies drafts d_0..d_{k-1} with k+1 rows of target
// logits; row j is the distribution after d_0..d_{j-1}. So:
//   1. n = valid_prefix_length(drafts): drafts from n on cannot be accepted (the target's
//      masked probability of d_n is 0), so the engine cuts them before verifying;
//   2. mask_rows(logits, stride, drafts.first(n)) masks row j with the state after the
//      first j drafts;
//   3. for each token the step emits (accepted drafts, then the bonus/resampled one),
//      accept_token(token).
// Once complete(), only EOS ids are allowed; the engine should finish the request there
// (also when it cannot emit EOS: ignore_eos, min_tokens, or a model without EOS ids,
// where the mask would otherwise allow nothing).
//
// Holds a pointer to the masker, which must outlive it. Not thread-safe; one per request.
// No allocation after construction.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "structured/json_matcher.h"
#include "structured/token_mask.h"

namespace dspark {

class JsonConstraint {
 public:
  explicit JsonConstraint(const JsonTokenMasker& masker, const JsonMatcherOptions& options = {});

  // Advances by one emitted token. Returns false, state unchanged, when the token is not
  // allowed here (a caller that masked correctly never sees that).
  bool accept_token(int32_t token);
  // How many leading drafts keep the output valid (all of them: drafts.size()).
  int32_t valid_prefix_length(std::span<const int32_t> drafts) const;

  // logits_row: [num_logits]. Masks it for the state after drafts_before, which must all be
  // valid (within valid_prefix_length); throws otherwise.
  void mask(float* logits_row, std::span<const int32_t> drafts_before);
  // logits: [drafts.size() + 1, row_stride], row j masked for the state after drafts[0, j).
  void mask_rows(float* logits, int64_t row_stride, std::span<const int32_t> drafts);

  bool complete() const { return matcher_.complete(); }
  const JsonMatcher& matcher() const { return matcher_; }
  // The allowed ids for the state after drafts_before: [masker.num_words()] bits, valid
  // until the next call. For callers that want the bits rather than masked logits.
  std::span<const uint64_t> allowed_tokens(std::span<const int32_t> drafts_before);

 private:
  JsonMatcher state_after(std::span<const int32_t> drafts) const;  // throws on an invalid draft

  const JsonTokenMasker* masker_;
  JsonMatcher matcher_;
  std::vector<uint64_t> bits_;  // [masker.num_words()] scratch for one mask
};

}  // namespace dspark
