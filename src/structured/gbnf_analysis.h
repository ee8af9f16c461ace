// Checks and facts about parsed GBNF rules (structured/gbnf_parser.h) that the compiler
// (structured/gbnf_grammar.h) needs, each linear or near-linear in the grammar's size, so a
// large grammar compiles in time proportional to it.
#pragma once

#include <cstdint>
#include <vector>

#include "structured/gbnf_parser.h"

namespace dspark::gbnf {

inline constexpr int64_t kNeverEnds = -1;
// Lengths past this are held at it (a rule of rules that each double can derive nothing
// shorter than 2^depth bytes).
inline constexpr int64_t kMaxCountedBytes = int64_t{1} << 40;

struct ShortestDerivations {
  std::vector<int64_t> bytes;        // [rules] UTF-8 bytes of the shortest string, or kNeverEnds
  std::vector<int32_t> alternative;  // [rules] the alternative that derives it, or -1
};

// Knuth's generalisation of Dijkstra's algorithm: a rule's length is final once it is the
// smallest among those whose alternatives' references are all final; characters count the
// bytes of their class's smallest code point. Following `alternative` from any rule with a
// finite length ends (each refers only to rules made final before it).
ShortestDerivations shortest_derivations(const Rules& rules);

// Throws Error (kInvalidRequest) "grammar: rule '...' is left-recursive ..." when a rule can
// come back to itself through leftmost references (each after only rules that may derive
// the empty string) where one of those references is not the last of its alternative: its
// stacks would grow without a character read. Cycles of last references only are loops the
// matcher's expansion handles. empty[r]: rule r derives the empty string.
void check_no_left_recursion(const Rules& rules, const std::vector<bool>& empty);

}  // namespace dspark::gbnf
