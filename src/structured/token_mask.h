// Which tokens may come next under a grammar state (JsonMatcher for json_object,
// SchemaMatcher for json_schema, RegexMatcher for a regex or a choice, GrammarMatcher for a
// context-free grammar): a bit per vocabulary id, and applying that to a logits row
// (disallowed ids get -inf). One masker per vocabulary serves every grammar: the member
// templates are instantiated for each matcher, so json_object runs the same code as before
// schemas existed.
//
// Token t is allowed after state s when
//   - t is kText and s.advance(bytes[t]) succeeds (the text stays a prefix of some valid
//     output; see json_matcher.h), or
//   - t is kEos and s.can_end() (a JSON value once complete; a regex at any full match);
// kNone tokens never are. Once s is complete (no byte may follow) only EOS ids are allowed.
//
// The reference (dspark::reference::allowed_tokens) tries every token from s: O(vocab x
// token length) matcher steps. TokenMasker walks a byte trie of the vocabulary instead
// (token_trie.h): shared prefixes are read once and a refused byte skips its subtree.
// Inside a string, where generation spends most of its steps and nearly every token is
// allowed, it does better still: a "plain" token (no '"', '\\' or byte < 0x20, and
// well-formed UTF-8 on its own) stays inside the string byte by byte, so its verdict there
// depends on nothing else: those bits are precomputed, and only the trie of the other
// tokens is walked. The matcher says where that holds (in_plain_string(): for a schema,
// not in a string with maxLength, an enum value or a declared property name). Both give the reference's bits (tests/structured/token_mask_test.cpp).
//
// A TokenMasker is immutable once built: any number of threads may mask with it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/token_grammar.h"
#include "structured/json_matcher.h"
#include "structured/schema_matcher.h"
#include "structured/token_bytes.h"
#include "structured/token_trie.h"

namespace dspark {


class RegexMatcher;  // structured/regex_dfa.h

// Text tokens of at most this many bytes are short: a regex's masks of them are cached by
// lookahead class (structured/regex_token_masks.h), the few longer ones walked per state.
inline constexpr int32_t kShortTokenBytes = 16;

class TokenMasker {
 public:
  // Throws when a kText token has no bytes (it would be allowed forever, changing nothing).
  explicit TokenMasker(TokenBytes vocabulary);

  int64_t num_logits() const { return vocabulary_.size(); }
  int64_t num_words() const { return token_mask_words(num_logits()); }
  const TokenBytes& vocabulary() const { return vocabulary_; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
  int32_t max_token_bytes() const { return max_token_bytes_; }  // the longest text token

  // mask: [num_words()] overwritten with the allowed ids after state.
  // Matcher: JsonMatcher, SchemaMatcher, RegexMatcher, GrammarMatcher or GrammarStateRef
  // (instantiated in token_mask.cpp).
  template <class Matcher>
  void allowed_tokens(const Matcher& state, std::span<uint64_t> mask) const;

  // Advances state by token's bytes when the token is allowed there (EOS: where s.can_end(),
  // leaving the state as it is). Returns false, state unchanged, otherwise.
  template <class Matcher>
  bool advance(Matcher& state, int32_t token) const;

  // For RegexTokenMasks: the allowed text tokens of at most kShortTokenBytes bytes after
  // state (mask overwritten; no EOS), and the longer ones (ORed into mask).
  void allowed_short_tokens(const RegexMatcher& state, std::span<uint64_t> mask) const;
  void add_allowed_long_tokens(const RegexMatcher& state, std::span<uint64_t> mask) const;

 private:
  TokenBytes vocabulary_;
  TokenTrie non_plain_;                  // the text tokens that are not plain
  std::vector<uint64_t> plain_;          // [num_words] the plain tokens
  // The text tokens, in two tries: those of at most kShortTokenBytes bytes and the others.
  TokenTrie short_;
  TokenTrie long_;
  std::vector<int32_t> eos_ids_;
  int32_t max_token_bytes_ = 0;
};

namespace reference {
// Token by token from a copy of state; mask: [token_mask_words(vocabulary.size())].
template <class Matcher>
void allowed_tokens(const TokenBytes& vocabulary, const Matcher& state, std::span<uint64_t> mask);
}  // namespace reference

}  // namespace dspark
