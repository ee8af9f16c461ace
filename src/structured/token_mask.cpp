#include "structured/token_mask.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "core/check.h"
#include "structured/gbnf_grammar.h"
#include "structured/grammar_state_table.h"
#include "structured/regex_dfa.h"

namespace dspark {

namespace {

// Stays inside a string byte by byte wherever a string is open: no byte that closes it,
// escapes or is refused there, and complete characters (checked by the matcher itself,
// from inside a string).
bool is_plain(std::string_view bytes) {
  for (const char c : bytes) {
    if (c == '"' || c == '\\' || static_cast<uint8_t>(c) < 0x20) return false;
  }
  JsonMatcher m;
  const bool opened = m.advance("{\"");
  return opened && m.advance(bytes) && m.in_string();
}

std::vector<int32_t> text_ids(const TokenBytes& vocabulary, bool plain) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < vocabulary.size(); ++id) {
    if (vocabulary.roles[id] == TokenRole::kText && is_plain(vocabulary.bytes[id]) == plain) {
      ids.push_back(id);
    }
  }
  return ids;
}

}  // namespace

TokenMasker::TokenMasker(TokenBytes vocabulary) : vocabulary_(std::move(vocabulary)) {
  const int64_t n = vocabulary_.size();
  DSPARK_CHECK(n > 0 && static_cast<int64_t>(vocabulary_.bytes.size()) == n,
               "TokenMasker: {} byte strings for {} roles", vocabulary_.bytes.size(), n);
  DSPARK_CHECK(n < std::numeric_limits<int32_t>::max(), "TokenMasker: vocabulary of {}", n);
  for (int32_t id = 0; id < n; ++id) {
    if (vocabulary_.roles[id] == TokenRole::kEos) eos_ids_.push_back(id);
  }
  std::vector<int32_t> all;
  for (int32_t id = 0; id < n; ++id) {
    if (vocabulary_.roles[id] == TokenRole::kText) all.push_back(id);
  }
  max_token_bytes_ = max_text_token_bytes(vocabulary_);
  std::vector<int32_t> short_ids, long_ids;
  for (const int32_t id : all) {
    (static_cast<int32_t>(vocabulary_.bytes[id].size()) <= kShortTokenBytes ? short_ids : long_ids).push_back(id);
  }
  short_ = TokenTrie(vocabulary_, short_ids);
  long_ = TokenTrie(vocabulary_, long_ids);
  non_plain_ = TokenTrie(vocabulary_, text_ids(vocabulary_, false));
  plain_.assign(static_cast<size_t>(num_words()), 0);
  for (const int32_t id : text_ids(vocabulary_, true)) plain_[id >> 6] |= uint64_t{1} << (id & 63);
}

template <class Matcher>
void TokenMasker::allowed_tokens(const Matcher& state, std::span<uint64_t> mask) const {
  DSPARK_CHECK(static_cast<int64_t>(mask.size()) == num_words(),
               "TokenMasker: mask has {} words, expected {}", mask.size(), num_words());
  if (state.complete()) {
    std::fill(mask.begin(), mask.end(), 0);
    for (const int32_t id : eos_ids_) mask[id >> 6] |= uint64_t{1} << (id & 63);
    return;  // no byte is accepted any more: no text token either
  }
  if (state.in_plain_string()) {
    std::copy(plain_.begin(), plain_.end(), mask.begin());
    non_plain_.allow(state, mask);
    return;
  }
  std::fill(mask.begin(), mask.end(), 0);
  short_.allow(state, mask);  // every text token is in one of the two
  long_.allow(state, mask);
  if (state.can_end()) {  // a regex's full match that may go on: its end allowed beside more text
    for (const int32_t id : eos_ids_) mask[id >> 6] |= uint64_t{1} << (id & 63);
  }
}

template <class Matcher>
bool TokenMasker::advance(Matcher& state, int32_t token) const {
  if (token < 0 || token >= num_logits()) return false;
  switch (vocabulary_.roles[token]) {
    case TokenRole::kText: return state.advance(vocabulary_.bytes[token]);
    case TokenRole::kEos: return state.can_end();
    case TokenRole::kNone: return false;
  }
  return false;
}

void TokenMasker::allowed_short_tokens(const RegexMatcher& state, std::span<uint64_t> mask) const {
  DSPARK_CHECK(static_cast<int64_t>(mask.size()) == num_words(),
               "TokenMasker: mask has {} words, expected {}", mask.size(), num_words());
  std::fill(mask.begin(), mask.end(), 0);
  short_.allow(state, mask);
}

void TokenMasker::add_allowed_long_tokens(const RegexMatcher& state, std::span<uint64_t> mask) const {
  long_.allow(state, mask);
}

template void TokenMasker::allowed_tokens<JsonMatcher>(const JsonMatcher&, std::span<uint64_t>) const;
template void TokenMasker::allowed_tokens<SchemaMatcher>(const SchemaMatcher&, std::span<uint64_t>) const;
template bool TokenMasker::advance<JsonMatcher>(JsonMatcher&, int32_t) const;
template bool TokenMasker::advance<SchemaMatcher>(SchemaMatcher&, int32_t) const;
template void TokenMasker::allowed_tokens<RegexMatcher>(const RegexMatcher&, std::span<uint64_t>) const;
template bool TokenMasker::advance<RegexMatcher>(RegexMatcher&, int32_t) const;
template void TokenMasker::allowed_tokens<GrammarMatcher>(const GrammarMatcher&, std::span<uint64_t>) const;
template bool TokenMasker::advance<GrammarMatcher>(GrammarMatcher&, int32_t) const;
template void TokenMasker::allowed_tokens<GrammarStateRef>(const GrammarStateRef&, std::span<uint64_t>) const;

}  // namespace dspark
