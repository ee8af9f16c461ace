// The regular expressions of constrained decoding (vLLM's guided_regex and
// structured_outputs.regex): their syntax, parsed into a tree whose leaves are sets of
// Unicode code points. structured/regex_dfa.h turns the tree into a byte automaton.
//
// The output must match the whole pattern (as Python's re.fullmatch), so a leading `^` and
// a trailing `$` change nothing and are accepted; anchors elsewhere are refused. Supported:
// literals (UTF-8), `.` (any character but \n), classes `[...]` / `[^...]` with ranges,
// `\d \w \s` and their negations (ASCII classes: [0-9], [A-Za-z0-9_], [ \t\n\r\f\v]), escapes
// `\n \t \r \f \v \0 \xHH \uHHHH \UHHHHHHHH` and any escaped punctuation, groups `(...)`,
// `(?:...)`, `(?P<name>...)`, `(?<name>...)`, alternation `|`, and the quantifiers `* + ?
// {n} {n,} {,m} {n,m}` (a lazy `?` after one is accepted: it matches the same strings).
// Refused, each with a message naming what and where: backreferences, lookaround, word
// boundaries, inline flags, Unicode properties, possessive quantifiers, counts over 1000.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dspark::regex {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
inline constexpr int32_t kMaxRepeatCount = 1000;
inline constexpr int64_t kMaxPatternBytes = 16384;

struct CodeRange {
  uint32_t lo;  // inclusive
  uint32_t hi;  // inclusive
};

using CodeRanges = std::vector<CodeRange>;
// Sorted, with overlapping and adjacent ranges merged.
CodeRanges normalized_ranges(CodeRanges ranges);
// The code points in [0, kMaxCodePoint] outside sorted (normalized) ranges.
CodeRanges complement_ranges(const CodeRanges& sorted);

struct Node {
  enum class Kind : uint8_t { kEmpty, kSet, kConcat, kAlternate, kRepeat };
  Kind kind = Kind::kEmpty;
  std::vector<CodeRange> set;      // kSet: sorted, disjoint, not adjacent, non-empty
  std::vector<int32_t> children;   // kConcat / kAlternate: the parts; kRepeat: the one repeated
  int32_t min = 0;                 // kRepeat
  int32_t max = -1;                // kRepeat: -1 = unbounded
};

struct Tree {
  std::vector<Node> nodes;  // children before parents
  int32_t root = 0;
};

// Throws Error (kInvalidRequest) "regex: <what> at byte N" for a pattern outside the syntax
// above, not UTF-8, or longer than kMaxPatternBytes.
Tree parse_regex(std::string_view pattern);

// The pattern that matches exactly `text` (every character escaped where needed).
std::string escape_regex(std::string_view text);

}  // namespace dspark::regex
