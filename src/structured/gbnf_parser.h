// The context-free grammars of constrained decoding (vLLM's structured_outputs.grammar and
// guided_grammar, llama.cpp's "grammar"), in GBNF, llama.cpp's notation, which is also what
// vLLM's default backend reads as EBNF:
//
//   root   ::= item ("," ws item)*        # a comment
//   item   ::= "\"" [a-z]+ "\"" | number
//   number ::= "-"? [0-9]{1,6}
//   ws     ::= [ \t\n]*
//
// A rule is `name ::= alternatives`; names are [A-Za-z0-9_-]+ and the output is a `root`.
// Alternatives are sequences separated by `|` (a sequence may be empty); the elements are
// "literals" (UTF-8), classes [a-z] / [^...] with ranges, `.` (any character), references to
// rules and groups ( ... ), each optionally followed by * + ? {m} {m,} {,n} {m,n}. Escapes in
// literals and classes: \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH. A rule ends at the end
// of its line, except inside a group or right after `::=` or `|`. Characters are Unicode
// code points (surrogates excluded), matched over the output's UTF-8 bytes.
//
// Parsing turns each repetition into rules of its own (x* is R ::= x R | "", so a loop keeps
// no state but where it is), so the result is plain rules of alternatives of elements:
// character classes and rule references. structured/gbnf_grammar.h checks and compiles it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "structured/regex_parser.h"

namespace dspark::gbnf {

inline constexpr int64_t kMaxGrammarBytes = 65536;
inline constexpr int32_t kMaxRepeatCount = 1000;
// Elements after repetitions are expanded (a bound on compile time and memory).
inline constexpr int64_t kMaxElements = 200000;

struct Element {
  enum class Kind : uint8_t { kChars, kRule };
  Kind kind;
  int32_t index;  // kChars: into Rules::classes; kRule: into Rules::rules
};

struct Rule {
  std::string name;  // as written, or "<name>#k" for the k-th rule a repetition or group of <name> made
  std::vector<std::vector<Element>> alternatives;
};

struct Rules {
  std::vector<Rule> rules;
  std::vector<regex::CodeRanges> classes;  // each sorted, disjoint, non-empty, without surrogates
  int32_t root = -1;
};

// Throws Error (kInvalidRequest) "grammar: <what> at line L column C" for text outside the
// syntax above, a rule referred to but not defined or defined twice, an empty class, counts
// over kMaxRepeatCount, text longer than kMaxGrammarBytes or no `root` rule.
Rules parse_gbnf(std::string_view text);

}  // namespace dspark::gbnf
