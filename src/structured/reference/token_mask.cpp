// Reference of the allowed-token mask: every token tried from a copy of the state.
#include <algorithm>

#include "core/check.h"
#include "structured/gbnf_grammar.h"
#include "structured/regex_dfa.h"
#include "structured/token_mask.h"

namespace dspark::reference {

template <class Matcher>
void allowed_tokens(const TokenBytes& vocabulary, const Matcher& state, std::span<uint64_t> mask) {
  DSPARK_CHECK(static_cast<int64_t>(mask.size()) == token_mask_words(vocabulary.size()),
               "reference::allowed_tokens: mask has {} words for {} ids", mask.size(),
               vocabulary.size());
  std::fill(mask.begin(), mask.end(), 0);
  for (int32_t id = 0; id < vocabulary.size(); ++id) {
    bool allowed = false;
    switch (vocabulary.roles[id]) {
      case TokenRole::kText: {
        Matcher m = state;
        allowed = m.advance(vocabulary.bytes[id]);
        break;
      }
      case TokenRole::kEos: allowed = state.can_end(); break;
      case TokenRole::kNone: break;
    }
    if (allowed) mask[id >> 6] |= uint64_t{1} << (id & 63);
  }
}

template void allowed_tokens<JsonMatcher>(const TokenBytes&, const JsonMatcher&, std::span<uint64_t>);
template void allowed_tokens<SchemaMatcher>(const TokenBytes&, const SchemaMatcher&, std::span<uint64_t>);
template void allowed_tokens<RegexMatcher>(const TokenBytes&, const RegexMatcher&, std::span<uint64_t>);
template void allowed_tokens<GrammarMatcher>(const TokenBytes&, const GrammarMatcher&, std::span<uint64_t>);

}  // namespace dspark::reference
