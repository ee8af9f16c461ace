// The states of a grammar (structured/gbnf_grammar.h) that one request's masks have reached,
// numbered, with their byte transitions remembered: a lazily built automaton over the
// grammar's matcher states.
//
// A trie walk over the vocabulary steps the matcher once per node (tens of thousands of
// nodes from a permissive state), and a matcher step expands stacks. But the states a walk
// passes through are few and recur: inside `[^\n]*` or a JSON string every character leads
// back to the same stacks. So each (state, byte) pair is stepped once per request, and the
// walk itself reads numbers (GrammarStateRef): a table read for ASCII bytes, a hash lookup
// for the others.
//
// Not thread-safe; one per request (GrammarTokenMasks). clear() drops every state, so the
// owner calls it between walks only (GrammarTokenMasks does when more than kMaxStates are
// held; a single walk may pass that bound by the states it reaches, at most one per trie node).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "structured/gbnf_grammar.h"

namespace dspark {

class GrammarStateTable {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int64_t kMaxStates = 8192;

  explicit GrammarStateTable(const CompiledGrammar& grammar) : grammar_(&grammar) {}

  // The number of state m (added if new).
  int32_t intern(const GrammarMatcher& m);
  // The state after byte from state id, or kDead.
  int32_t next(int32_t id, uint8_t byte) {
    if (byte < 128) {
      const int32_t known = ascii_[static_cast<size_t>(id)][byte];
      return known != kUnknown ? known : step(id, byte);
    }
    const auto it = other_.find(static_cast<uint64_t>(id) << 8 | byte);
    return it != other_.end() ? it->second : step(id, byte);
  }
  const GrammarMatcher& matcher(int32_t id) const { return states_[static_cast<size_t>(id)]; }
  int64_t size() const { return static_cast<int64_t>(states_.size()); }
  void clear();

 private:
  static constexpr int32_t kUnknown = -2;
  int32_t step(int32_t id, uint8_t byte);

  const CompiledGrammar* grammar_;
  std::vector<GrammarMatcher> states_;
  std::vector<std::array<int32_t, 128>> ascii_;      // [states][ASCII byte] next state, kDead or kUnknown
  std::unordered_map<uint64_t, int32_t> other_;      // (state << 8 | byte >= 128) -> next state or kDead
  std::unordered_map<std::string, int32_t> ids_;     // GrammarMatcher::key as bytes -> state
  GrammarMatcher scratch_;
  std::vector<int32_t> key_;   // scratch: GrammarMatcher::key
  std::string key_bytes_;      // scratch: key_ as bytes
};

// A state of a GrammarStateTable, as the token masker walks it (the grammar-state contract
// of structured/token_mask.h); copying it copies two words.
class GrammarStateRef {
 public:
  GrammarStateRef() = default;  // a placeholder for the trie walk's levels; not usable
  GrammarStateRef(GrammarStateTable& table, int32_t id) : table_(&table), id_(id) {}

  bool advance_to(uint8_t byte, GrammarStateRef& next) const {
    const int32_t n = table_->next(id_, byte);
    if (n == GrammarStateTable::kDead) return false;
    next.table_ = table_;
    next.id_ = n;
    return true;
  }
  bool complete() const { return table_->matcher(id_).complete(); }
  bool can_end() const { return table_->matcher(id_).can_end(); }
  bool in_plain_string() const { return false; }

 private:
  GrammarStateTable* table_ = nullptr;
  int32_t id_ = 0;
};

}  // namespace dspark
