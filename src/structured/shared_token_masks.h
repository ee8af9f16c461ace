// The token masks of the grammars (GBNF) and regexes a vocabulary's requests ask for, shared
// by equal ones (the same source text): the engine keeps one of each, so requests with the
// same constraint (every request of a batch job, say) reuse each other's trie walks instead
// of walking again. Holds the `capacity` constraints used last and their masks (each within
// its masks' own bounds); a request still holding masks that were dropped keeps them alive.
// Not thread-safe, as the masks it hands out: one engine's, used on its thread alone
// (engine/engine_loop.h).
//
// Compiled: CompiledGrammar or CompiledRegex (source()); Masks: GrammarTokenMasks or
// RegexTokenMasks (built from the masker and the compiled constraint).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "structured/gbnf_grammar.h"
#include "structured/grammar_token_masks.h"
#include "structured/regex_dfa.h"
#include "structured/regex_token_masks.h"
#include "structured/token_mask.h"

namespace dspark {

template <class Compiled, class Masks>
class SharedTokenMasks {
 public:
  struct Entry {
    std::shared_ptr<const Compiled> compiled;  // the first compiled of its text
    std::shared_ptr<Masks> masks;
  };
  static constexpr size_t kDefaultCapacity = 8;

  explicit SharedTokenMasks(const TokenMasker& masker, size_t capacity = kDefaultCapacity)
      : masker_(&masker), capacity_(capacity) {}

  // The constraint to use for `compiled` (an earlier one of the same text, or itself) and its masks.
  Entry get(const std::shared_ptr<const Compiled>& compiled) {
    if (const auto it = by_source_.find(compiled->source()); it != by_source_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      return entries_.front();
    }
    entries_.push_front({compiled, std::make_shared<Masks>(*masker_, *compiled)});
    by_source_[compiled->source()] = entries_.begin();
    if (entries_.size() > capacity_) {
      by_source_.erase(entries_.back().compiled->source());
      entries_.pop_back();
    }
    return entries_.front();
  }

  size_t size() const { return entries_.size(); }

 private:
  const TokenMasker* masker_;
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> by_source_;
};

using SharedGrammarMasks = SharedTokenMasks<CompiledGrammar, GrammarTokenMasks>;
using SharedRegexMasks = SharedTokenMasks<CompiledRegex, RegexTokenMasks>;

}  // namespace dspark
