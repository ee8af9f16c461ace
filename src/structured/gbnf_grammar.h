// A context-free grammar (structured/gbnf_parser.h) compiled for constrained decoding, and
// the matcher state over it: the output is held to strings that are a prefix of some string
// of the grammar, and may end where it is one.
//
// The rules are laid out flat: each alternative is a run of slots (a character class or a
// reference to a rule) closed by an end slot. A matcher state is a set of stacks of slots:
// the top of a stack is the class the next character must be in, the slots below are where
// each enclosing rule goes on once the inner one is done (a reference in the last slot of
// an alternative leaves nothing below it, so a loop written as R ::= x R | "" keeps a
// stack of constant height). A character advances every stack whose top class holds it,
// then expands references at the tops into their alternatives until every top is a class
// again; an empty stack means the output may end. This is a pushdown automaton run on all
// parses at once (llama.cpp's grammar sampler works so too); characters are decoded from the
// output's UTF-8 bytes, and a byte that starts a character is accepted only when some top
// class holds a character that begins so.
//
// Checked at compile time so that no output can dead-end: every rule used can derive some
// finite string; no rule refers to itself in a leftmost place with something after it (left
// recursion: its stacks would grow without reading a character); the grammar matches some
// non-empty string. Sizes are capped: at most kMaxStacks stacks (parses kept apart),
// kMaxStackDepth slots per stack and kMaxExpansions references expanded per character; a
// character that would pass one is refused (its bytes masked), never worked through slowly.
//
// Immutable once compiled: any number of requests and threads may read it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "structured/regex_parser.h"

namespace dspark {

class CompiledGrammar {
 public:
  static constexpr int32_t kMaxStacks = 256;
  static constexpr int32_t kMaxStackDepth = 512;
  static constexpr int32_t kMaxExpansions = 1024;  // references expanded in one character's step

  enum class SlotKind : uint8_t { kChars, kRule, kEnd };
  struct Slot {
    SlotKind kind;
    int32_t index;  // kChars: a class; kRule: a rule
  };

  // Parses and checks; throws Error (kInvalidRequest) "grammar: ..." for text the parser
  // refuses, a rule that derives no finite string, left recursion, a grammar of only the
  // empty string, or a start past the caps.
  static std::shared_ptr<const CompiledGrammar> compile(std::string_view gbnf);

  const Slot& slot(int32_t position) const { return slots_[static_cast<size_t>(position)]; }
  // The first slot of each alternative of rule r.
  std::span<const int32_t> alternatives(int32_t rule) const {
    return {alternative_starts_.data() + rule_begin_[static_cast<size_t>(rule)],
            alternative_starts_.data() + rule_begin_[static_cast<size_t>(rule) + 1]};
  }
  bool class_contains(int32_t c, uint32_t code_point) const;
  // Whether class c holds a code point in [lo, hi]; the smallest such, or -1.
  int64_t class_first_in(int32_t c, uint32_t lo, uint32_t hi) const;
  // Appends the shortest string the slots from `position` to its alternative's end derive
  // (the smallest code point of each class); throws past kMaxCompletionBytes.
  void append_shortest(int32_t position, std::string& out) const;
  static constexpr int64_t kMaxCompletionBytes = int64_t{1} << 20;
  // The start state's stacks (GrammarMatcher's layout).
  const std::vector<int32_t>& start_stacks() const { return start_; }
  int64_t num_rules() const { return static_cast<int64_t>(rule_begin_.size()) - 1; }
  // The GBNF text it was compiled from (equal texts compile to equal grammars).
  const std::string& source() const { return source_; }
  int64_t num_slots() const { return static_cast<int64_t>(slots_.size()); }

 private:
  std::vector<Slot> slots_;                  // [num_slots] alternatives' runs, each closed by kEnd
  std::vector<int32_t> alternative_starts_;  // alternatives' first slots, rule after rule
  std::vector<int32_t> rule_begin_;          // [num_rules + 1] into alternative_starts_
  std::vector<regex::CodeRanges> classes_;
  std::vector<std::array<uint64_t, 2>> ascii_;  // [classes] bits of the class's ASCII code points
  std::vector<int32_t> shortest_start_;      // [num_rules] first slot of the alternative of its shortest string
  std::vector<int32_t> start_;
  std::string source_;
};

// The state after the output's bytes. Satisfies the grammar-state contract of the token
// masker (structured/token_mask.h) beside RegexMatcher: advance, advance_to, complete,
// can_end, in_plain_string, completion. A copy is a copy of its stacks (the trie walk keeps
// one per byte of depth; their storage is reused from one copy to the next).
class GrammarMatcher {
 public:
  GrammarMatcher() = default;  // a placeholder for the trie walk's levels; not usable
  explicit GrammarMatcher(const CompiledGrammar& grammar)
      : grammar_(&grammar), stacks_(grammar.start_stacks()) {}

  bool advance(uint8_t byte) { return step(byte); }
  // All of bytes or, state unchanged, none.
  bool advance(std::string_view bytes);
  bool advance_to(uint8_t byte, GrammarMatcher& next) const {
    next = *this;
    return next.step(byte);
  }
  // No byte can follow: every parse is done (the only stack is the empty one: one word, its
  // height 0).
  bool complete() const { return need_ == 0 && stacks_.size() == 1; }
  // Some parse is done: the output may end here.
  bool can_end() const;
  bool in_plain_string() const { return false; }
  // Bytes that lead from here to a place where the output may end (can_end()).
  std::string completion() const;
  int64_t num_stacks() const;

  // The state as words (the stacks, then a character's bytes read so far), for caches.
  void key(std::vector<int32_t>& out) const;

 private:
  bool step(uint8_t byte);
  bool advance_code_point(uint32_t code_point);
  // Whether some stack's top class holds a code point in [lo, hi].
  bool some_top_holds(uint32_t lo, uint32_t hi) const;

  const CompiledGrammar* grammar_ = nullptr;
  // The stacks one after another, each as its height h and then h slot positions, bottom to
  // top; no two equal. An empty stack: h = 0.
  std::vector<int32_t> stacks_;
  uint32_t partial_ = 0;  // the bits read of a character whose bytes are still coming
  uint8_t need_ = 0;      // its continuation bytes still to come (0: between characters)
  uint8_t length_ = 0;    // its byte length
};

}  // namespace dspark
