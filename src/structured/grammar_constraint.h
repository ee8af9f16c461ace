// Per-request output grammar: OpenAI response_format {"type": "json_object"} (a
// JsonMatcher state), {"type": "json_schema"} (a SchemaMatcher state over a compiled
// schema), a regular expression (a RegexMatcher state over a compiled automaton: vLLM's
// guided regex and choice), or a context-free grammar (a GrammarMatcher state over a
// compiled GBNF grammar: vLLM's guided grammar, llama.cpp's grammar): the output tokens
// accepted so far, and the logits masks that keep the output a prefix of a valid JSON
// object / of a value valid under the schema / of a full match / of a string of the grammar.
// Every grammar runs the same code (the masker's templates); the variant is dispatched once
// per call, not per token of the vocabulary.
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
// where the mask would otherwise allow nothing). A regex's output may also end earlier, at
// any full match that could still go on (can_end(): EOS allowed beside more text).
//
// Holds a pointer to the masker, which must outlive it, and shares ownership of the
// schema or automaton. Not thread-safe; one per request. No allocation after construction
// (a regex's: once for each class of its states that the output reaches, RegexTokenMasks; a
// grammar's: for the states its masks reach, GrammarTokenMasks; requests of one regex or
// grammar may share them).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <variant>
#include <vector>

#include "core/token_grammar.h"
#include "structured/gbnf_grammar.h"
#include "structured/grammar_token_masks.h"
#include "structured/json_matcher.h"
#include "structured/json_schema.h"
#include "structured/regex_dfa.h"
#include "structured/regex_token_masks.h"
#include "structured/schema_matcher.h"
#include "structured/token_mask.h"

namespace dspark {

class GrammarConstraint final : public TokenGrammar {
 public:
  // json_object.
  explicit GrammarConstraint(const TokenMasker& masker, const JsonMatcherOptions& options = {});
  // json_schema (schema must not be null).
  GrammarConstraint(const TokenMasker& masker, std::shared_ptr<const CompiledJsonSchema> schema);
  // A regex (regex must not be null), its masks shared with other requests of the same
  // pattern (structured/shared_token_masks.h) or, when masks is null, its own.
  GrammarConstraint(const TokenMasker& masker, std::shared_ptr<const CompiledRegex> regex,
                    std::shared_ptr<RegexTokenMasks> masks = nullptr);
  // A context-free grammar (grammar must not be null), its masks shared with other requests
  // of the same grammar (structured/shared_token_masks.h) or, when masks is null, its own.
  GrammarConstraint(const TokenMasker& masker, std::shared_ptr<const CompiledGrammar> grammar,
                    std::shared_ptr<GrammarTokenMasks> masks = nullptr);

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

  bool complete() const {
    return std::visit([](const auto& m) { return m.complete(); }, matcher_);
  }
  // The json_object state (throws for a schema constraint).
  const JsonMatcher& matcher() const;
  // The json_schema state (throws for a json_object constraint).
  const SchemaMatcher& schema_matcher() const;
  // Bytes that complete the output from here (the matcher's completion()).
  std::string completion() const;
  // The allowed ids for the state after drafts_before: [masker.num_words()] bits, valid
  // until the next call. For callers that want the bits rather than masked logits.
  std::span<const uint64_t> allowed_tokens(std::span<const int32_t> drafts_before) override;

 private:
  using State = std::variant<JsonMatcher, SchemaMatcher, RegexMatcher, GrammarMatcher>;
  State state_after(std::span<const int32_t> drafts) const;  // throws on an invalid draft
  // bits_ = the allowed ids after m (a regex's through regex_masks_, a grammar's through
  // grammar_masks_).
  template <class Matcher>
  void fill_allowed(const Matcher& m);

  const TokenMasker* masker_;
  std::shared_ptr<const CompiledJsonSchema> schema_;  // json_schema: what matcher_ points into
  std::shared_ptr<const CompiledRegex> regex_;        // regex: likewise
  std::shared_ptr<RegexTokenMasks> regex_masks_;      // regex: its states' masks, each class walked once
  std::shared_ptr<const CompiledGrammar> cfg_;        // grammar: what matcher_ points into
  std::shared_ptr<GrammarTokenMasks> grammar_masks_;  // grammar: its states' masks, each state walked once
  State matcher_;
  std::vector<uint64_t> bits_;  // [masker.num_words()] scratch for one mask
};

}  // namespace dspark
