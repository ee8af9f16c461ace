// The allowed-token masks of one grammar's states over one vocabulary, for one request. A
// trie walk steps the grammar's matcher at every node it reaches (tens of thousands from a
// permissive state); here it walks the request's GrammarStateTable instead, so each (state,
// byte) pair is stepped once per request and the walk otherwise reads numbers. And each
// state's mask is kept (a loop such as a string's characters comes back to the same state
// again and again), up to kMaxCachedBytes a request.
//
// Gives TokenMasker::allowed_tokens's bits exactly (EOS where the state may end, only EOS
// where it is complete). The requests of one grammar in an engine share one
// (structured/shared_token_masks.h), so a grammar used again and again is walked once per
// state, not once per request; not thread-safe: the engine's thread alone masks
// (engine/engine_loop.h). Allocates as it meets new states; when the table holds more than
// GrammarStateTable::kMaxStates it starts again, empty, before the next walk (the masks kept
// go with it).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "structured/gbnf_grammar.h"
#include "structured/grammar_state_table.h"
#include "structured/token_mask.h"

namespace dspark {

class GrammarTokenMasks {
 public:
  static constexpr int64_t kMaxCachedBytes = int64_t{16} << 20;

  // Both must outlive this.
  GrammarTokenMasks(const TokenMasker& masker, const CompiledGrammar& grammar)
      : masker_(&masker), states_(grammar) {}

  // mask: [masker.num_words()], overwritten with the allowed ids after state.
  void allowed_tokens(const GrammarMatcher& state, std::span<uint64_t> mask);

  int64_t num_walks() const { return num_walks_; }  // masks computed, not copied
  int64_t num_states() const { return states_.size(); }

 private:
  const TokenMasker* masker_;
  GrammarStateTable states_;
  std::vector<std::vector<uint64_t>> masks_;  // [states] empty until computed (or past the cap)
  int64_t cached_bytes_ = 0;
  int64_t num_walks_ = 0;
};

}  // namespace dspark
