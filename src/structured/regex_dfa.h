// A regular expression (structured/regex_parser.h) compiled to a deterministic automaton
// over UTF-8 bytes, for constrained decoding: the output is held to strings that are a
// prefix of a full match, and may end where it is one.
//
// Built once per request: the tree becomes a byte NFA (Thompson's construction; code point
// sets as UTF-8 byte-range sequences), then a DFA by subset construction over the classes
// of bytes the pattern tells apart (its table has a column per class, not per byte: a
// counted run such as [^\n]{0,500} has thousands of states but a handful of classes). Only
// live states are kept (those from which some accepting state is reachable), so every state
// the output can be in still has a match ahead: a token mask built from it never leads into
// a dead end. Sizes are capped (kMaxNfaStates, kMaxDfaStates): a pattern past them is
// refused, never built slowly.
//
// Immutable once compiled: any number of requests and threads may read it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dspark {

class CompiledRegex {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int64_t kMaxNfaStates = 200000;
  static constexpr int64_t kMaxDfaStates = 50000;

  // The state after `byte` from `state`, or kDead.
  int32_t next(int32_t state, uint8_t byte) const {
    return next_[static_cast<size_t>(state) * static_cast<size_t>(num_byte_classes_) + byte_class_[byte]];
  }
  int32_t start() const { return 0; }
  bool accepting(int32_t state) const { return accepting_[static_cast<size_t>(state)] != 0; }
  // Whether any byte leads on from state (false: the output is complete there).
  bool continues(int32_t state) const { return continues_[static_cast<size_t>(state)] != 0; }
  int64_t num_states() const { return static_cast<int64_t>(accepting_.size()); }
  // The shortest bytes from state to an accepting state (the smallest byte at each step).
  std::string completion(int32_t state) const;

  // States told apart only by strings longer than max_bytes share a class: from any two
  // states of one class, exactly the same strings of at most max_bytes bytes can be read
  // (whether each ends in a full match aside). So a vocabulary whose tokens have at most
  // max_bytes bytes allows the same text tokens from both: a mask computed for one state
  // serves its class (Moore's refinement stopped after max_bytes rounds). [num_states] ids.
  // Computed at the first call for a max_bytes (a long counted run: a few ms), then shared;
  // thread-safe. The serving loop asks on the submitting thread (EngineLoop::submit), so the
  // engine's step never waits.
  std::shared_ptr<const std::vector<int32_t>> lookahead_classes(int32_t max_bytes) const;
  int32_t num_byte_classes() const { return num_byte_classes_; }
  // The pattern it was compiled from (equal patterns compile to equal automata).
  const std::string& source() const { return source_; }

  // Builds the automaton; throws Error (kInvalidRequest) "regex: ..." for a pattern the
  // parser refuses, one past the size caps, one that matches no string, or one that matches
  // only the empty string (the output could hold nothing but its end).
  static std::shared_ptr<const CompiledRegex> compile(std::string_view pattern);

 private:
  std::vector<int32_t> next_;          // [num_states][num_byte_classes]
  std::array<uint8_t, 256> byte_class_{};  // bytes no transition tells apart share a class
  int32_t num_byte_classes_ = 0;
  std::vector<uint8_t> accepting_;     // [num_states]
  std::vector<uint8_t> continues_;     // [num_states]
  std::vector<int16_t> toward_accept_;  // [num_states] first byte of completion(), -1 when accepting
  std::string source_;
  std::vector<int32_t> compute_lookahead_classes(int32_t max_bytes) const;
  mutable std::mutex lookahead_mu_;
  mutable std::vector<std::pair<int32_t, std::shared_ptr<const std::vector<int32_t>>>> lookahead_;  // by max_bytes
};

// The pattern that matches exactly one of `choices` (vLLM's guided_choice): an alternation
// of the escaped strings. Throws for an empty list or an empty string among them.
std::string choice_regex(std::span<const std::string> choices);

// The automaton's state after bytes: one table read per byte. Satisfies the grammar-state
// contract of the token masker (structured/token_mask.h) beside JsonMatcher and
// SchemaMatcher: advance, advance_to, complete, can_end, in_plain_string, completion.
class RegexMatcher {
 public:
  RegexMatcher() = default;  // a placeholder for the trie walk's levels; not usable
  explicit RegexMatcher(const CompiledRegex& regex) : regex_(&regex), state_(regex.start()) {}

  bool advance(uint8_t byte) { return advance_to(byte, *this); }
  // All of bytes or, state unchanged, none.
  bool advance(std::string_view bytes);
  bool advance_to(uint8_t byte, RegexMatcher& next) const {
    const int32_t s = regex_->next(state_, byte);
    if (s == CompiledRegex::kDead) return false;
    next.regex_ = regex_;
    next.state_ = s;
    return true;
  }
  // No byte can follow: the output is a full match and must end.
  bool complete() const { return !regex_->continues(state_); }
  // The output so far is a full match: it may end here.
  bool can_end() const { return regex_->accepting(state_); }
  bool in_plain_string() const { return false; }
  std::string completion() const { return regex_->completion(state_); }
  int32_t state() const { return state_; }

 private:
  const CompiledRegex* regex_ = nullptr;
  int32_t state_ = 0;
};

}  // namespace dspark
