#include "structured/gbnf_grammar.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "core/check.h"
#include "structured/gbnf_analysis.h"
#include "structured/gbnf_parser.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {
namespace {

using SlotKind = CompiledGrammar::SlotKind;

// Stacks in GrammarMatcher's layout: [h, positions...] one after another.
struct Stacks {
  std::vector<int32_t> words;
  int64_t n = 0;  // stacks held

  void clear() {
    words.clear();
    n = 0;
  }
  bool contains(std::span<const int32_t> stack) const {
    for (size_t i = 0; i < words.size(); i += static_cast<size_t>(words[i]) + 1) {
      if (static_cast<size_t>(words[i]) == stack.size() &&
          std::equal(stack.begin(), stack.end(), words.begin() + static_cast<std::ptrdiff_t>(i) + 1)) {
        return true;
      }
    }
    return false;
  }
  void add(std::span<const int32_t> stack) {
    ++n;
    words.push_back(static_cast<int32_t>(stack.size()));
    words.insert(words.end(), stack.begin(), stack.end());
  }
};

// Expands the references at the top of `stack` (left as it was on return) into out until
// every top is a class or the stack is empty. seen: the stacks with a reference at the top
// already expanded in this step (a loop through rules that may be empty comes back to one).
// False when out would pass kMaxStacks, or seen kMaxExpansions (a character whose parses
// take more work than that is refused, as one past the caps).
bool expand(const CompiledGrammar& g, std::vector<int32_t>& stack, Stacks& out, Stacks& seen) {
  if (stack.empty() || g.slot(stack.back()).kind == SlotKind::kChars) {
    if (out.contains(stack)) return true;
    if (out.n >= CompiledGrammar::kMaxStacks) return false;
    out.add(stack);
    return true;
  }
  if (seen.contains(stack)) return true;
  if (seen.n >= CompiledGrammar::kMaxExpansions) return false;
  seen.add(stack);
  const int32_t at = stack.back();
  stack.pop_back();
  // Where this rule's alternative goes on afterwards (nothing when the reference is last).
  const bool goes_on = g.slot(at + 1).kind != SlotKind::kEnd;
  if (goes_on) stack.push_back(at + 1);
  bool ok = true;
  for (const int32_t first : g.alternatives(g.slot(at).index)) {
    if (g.slot(first).kind == SlotKind::kEnd) {  // an empty alternative: go on at once
      ok = expand(g, stack, out, seen);
    } else if (static_cast<int64_t>(stack.size()) < CompiledGrammar::kMaxStackDepth) {
      stack.push_back(first);
      ok = expand(g, stack, out, seen);
      stack.pop_back();
    }  // deeper than the cap: this parse is dropped (the character that needs it is refused)
    if (!ok) break;
  }
  if (goes_on) stack.pop_back();
  stack.push_back(at);
  return ok;
}

// Scratch reused by every step on a thread (a trie walk steps thousands of times per mask).
struct StepScratch {
  Stacks out;
  Stacks seen;
  std::vector<int32_t> stack;
};
StepScratch& step_scratch() {
  thread_local StepScratch s;
  return s;
}

// Code point bounds of a UTF-8 sequence of `length` bytes.
constexpr uint32_t kSequenceMin[5] = {0, 0, 0x80, 0x800, 0x10000};
constexpr uint32_t kSequenceMax[5] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

// The code points a character of `length` bytes can still become once its bits so far are
// read and `left` continuation bytes remain (lo > hi: none, an overlong or too large prefix).
struct CodeRangeLeft {
  uint32_t lo;
  uint32_t hi;
};
CodeRangeLeft pending_range(uint32_t bits, int left, int length) {
  return {std::max(bits << (6 * left), kSequenceMin[length]),
          std::min(bits << (6 * left) | ((1u << (6 * left)) - 1), kSequenceMax[length])};
}

}  // namespace

std::shared_ptr<const CompiledGrammar> CompiledGrammar::compile(std::string_view gbnf_text) {
  const gbnf::Rules rules = gbnf::parse_gbnf(gbnf_text);
  auto g = std::shared_ptr<CompiledGrammar>(new CompiledGrammar());
  const size_t n = rules.rules.size();

  g->classes_ = rules.classes;
  const gbnf::ShortestDerivations shortest = gbnf::shortest_derivations(rules);
  // Rules the root uses, each of which must derive some finite string.
  std::vector<bool> used(n, false);
  std::vector<int32_t> todo{rules.root};
  used[static_cast<size_t>(rules.root)] = true;
  while (!todo.empty()) {
    const int32_t r = todo.back();
    todo.pop_back();
    DSPARK_CHECK_REQUEST(shortest.bytes[static_cast<size_t>(r)] != gbnf::kNeverEnds,
                         "grammar: rule '{}' never ends (each of its alternatives needs itself again)",
                         rules.rules[static_cast<size_t>(r)].name);
    for (const auto& alt : rules.rules[static_cast<size_t>(r)].alternatives)
      for (const gbnf::Element& e : alt)
        if (e.kind == gbnf::Element::Kind::kRule && !used[static_cast<size_t>(e.index)]) {
          used[static_cast<size_t>(e.index)] = true;
          todo.push_back(e.index);
        }
  }
  std::vector<bool> empty(n);
  for (size_t r = 0; r < n; ++r) empty[r] = shortest.bytes[r] == 0;
  gbnf::check_no_left_recursion(rules, empty);

  // Flat layout: slot 0 is the root's reference (the start stack), then every alternative.
  g->slots_ = {{SlotKind::kRule, rules.root}, {SlotKind::kEnd, 0}};
  g->rule_begin_.push_back(0);
  for (size_t r = 0; r < n; ++r) {
    const int32_t best = shortest.alternative[r];
    g->shortest_start_.push_back(best < 0 ? -1 : static_cast<int32_t>(g->alternative_starts_.size()) + best);
    for (const auto& alt : rules.rules[r].alternatives) {
      g->alternative_starts_.push_back(static_cast<int32_t>(g->slots_.size()));
      for (const gbnf::Element& e : alt) {
        g->slots_.push_back({e.kind == gbnf::Element::Kind::kChars ? SlotKind::kChars : SlotKind::kRule, e.index});
      }
      g->slots_.push_back({SlotKind::kEnd, 0});
    }
    g->rule_begin_.push_back(static_cast<int32_t>(g->alternative_starts_.size()));
  }
  for (int32_t& start : g->shortest_start_) {
    if (start >= 0) start = g->alternative_starts_[static_cast<size_t>(start)];
  }
  g->ascii_.assign(g->classes_.size(), {0, 0});
  for (size_t c = 0; c < g->classes_.size(); ++c)
    for (const regex::CodeRange range : g->classes_[c])
      for (uint32_t cp = range.lo; cp <= range.hi && cp < 128; ++cp) g->ascii_[c][cp >> 6] |= uint64_t{1} << (cp & 63);

  Stacks out, seen;
  std::vector<int32_t> stack{0};
  DSPARK_CHECK_REQUEST(expand(*g, stack, out, seen),
                       "grammar: more than {} parses, or {} expansions, at the start", kMaxStacks, kMaxExpansions);
  DSPARK_CHECK_REQUEST(out.n > 0, "grammar: its first character needs rules nested more than {} deep",
                       kMaxStackDepth);
  DSPARK_CHECK_REQUEST(out.words.size() > 1, "grammar: it matches only the empty string");
  g->start_ = std::move(out.words);
  g->source_ = std::string(gbnf_text);
  return g;
}

void CompiledGrammar::append_shortest(int32_t position, std::string& out) const {
  std::vector<int32_t> todo{position};  // slots still to derive, the next on top
  while (!todo.empty()) {
    const int32_t p = todo.back();
    todo.pop_back();
    const Slot& s = slot(p);
    if (s.kind == SlotKind::kEnd) continue;
    todo.push_back(p + 1);
    if (s.kind == SlotKind::kChars) {
      out += tok::utf8_encode(static_cast<char32_t>(class_first_in(s.index, 0, regex::kMaxCodePoint)));
      DSPARK_CHECK(static_cast<int64_t>(out.size()) <= kMaxCompletionBytes,
                   "CompiledGrammar: a completion of more than {} bytes", kMaxCompletionBytes);
    } else {
      todo.push_back(shortest_start_[static_cast<size_t>(s.index)]);
    }
  }
}

bool CompiledGrammar::class_contains(int32_t c, uint32_t cp) const {
  if (cp < 128) return (ascii_[static_cast<size_t>(c)][cp >> 6] >> (cp & 63) & 1) != 0;
  return class_first_in(c, cp, cp) >= 0;
}

int64_t CompiledGrammar::class_first_in(int32_t c, uint32_t lo, uint32_t hi) const {
  const regex::CodeRanges& ranges = classes_[static_cast<size_t>(c)];
  // The first range that ends at or after lo.
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                                   [](const regex::CodeRange& r, uint32_t v) { return r.hi < v; });
  if (it == ranges.end() || it->lo > hi) return -1;
  return std::max(it->lo, lo);
}

bool GrammarMatcher::can_end() const {
  if (need_ != 0) return false;
  for (size_t i = 0; i < stacks_.size(); i += static_cast<size_t>(stacks_[i]) + 1) {
    if (stacks_[i] == 0) return true;
  }
  return false;
}

int64_t GrammarMatcher::num_stacks() const {
  int64_t n = 0;
  for (size_t i = 0; i < stacks_.size(); i += static_cast<size_t>(stacks_[i]) + 1) ++n;
  return n;
}

void GrammarMatcher::key(std::vector<int32_t>& out) const {
  out.assign(stacks_.begin(), stacks_.end());
  out.push_back(static_cast<int32_t>(partial_));
  out.push_back(need_ | length_ << 8);
}

bool GrammarMatcher::advance(std::string_view bytes) {
  GrammarMatcher m = *this;
  for (const char c : bytes) {
    if (!m.step(static_cast<uint8_t>(c))) return false;
  }
  *this = std::move(m);
  return true;
}

bool GrammarMatcher::some_top_holds(uint32_t lo, uint32_t hi) const {
  for (size_t i = 0; i < stacks_.size(); i += static_cast<size_t>(stacks_[i]) + 1) {
    if (stacks_[i] == 0) continue;
    const int32_t top = stacks_[i + static_cast<size_t>(stacks_[i])];
    if (grammar_->class_first_in(grammar_->slot(top).index, lo, hi) >= 0) return true;
  }
  return false;
}

bool GrammarMatcher::step(uint8_t byte) {
  int length = 0;
  uint32_t bits = 0;
  if (need_ == 0) {
    if (byte < 0x80) return advance_code_point(byte);
    if (byte < 0xC2 || byte > 0xF4) return false;  // a continuation byte, an overlong lead or past U+10FFFF
    length = tok::utf8_seq_len(byte);
    bits = byte & (0x7Fu >> length);
  } else {
    if ((byte & 0xC0) != 0x80) return false;
    length = length_;
    bits = partial_ << 6 | (byte & 0x3Fu);
  }
  const int left = need_ == 0 ? length - 1 : need_ - 1;  // continuation bytes after this one
  if (left == 0) {
    if (!advance_code_point(bits)) return false;
    need_ = 0;
    return true;
  }
  // The code points this prefix can still become, within its length's range.
  const CodeRangeLeft r = pending_range(bits, left, length);
  if (r.lo > r.hi || !some_top_holds(r.lo, r.hi)) return false;
  partial_ = bits;
  need_ = static_cast<uint8_t>(left);
  length_ = static_cast<uint8_t>(length);
  return true;
}

bool GrammarMatcher::advance_code_point(uint32_t cp) {
  StepScratch& s = step_scratch();
  s.out.clear();
  s.seen.clear();
  for (size_t i = 0; i < stacks_.size(); i += static_cast<size_t>(stacks_[i]) + 1) {
    const size_t height = static_cast<size_t>(stacks_[i]);
    if (height == 0) continue;
    const int32_t top = stacks_[i + height];
    if (!grammar_->class_contains(grammar_->slot(top).index, cp)) continue;
    s.stack.assign(stacks_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                   stacks_.begin() + static_cast<std::ptrdiff_t>(i + height));
    if (grammar_->slot(top + 1).kind != SlotKind::kEnd) s.stack.push_back(top + 1);
    if (!expand(*grammar_, s.stack, s.out, s.seen)) return false;
  }
  if (s.out.words.empty()) return false;
  stacks_.assign(s.out.words.begin(), s.out.words.end());
  return true;
}

std::string GrammarMatcher::completion() const {
  const CompiledGrammar& g = *grammar_;
  std::optional<std::string> best;
  for (size_t i = 0; i < stacks_.size(); i += static_cast<size_t>(stacks_[i]) + 1) {
    const size_t height = static_cast<size_t>(stacks_[i]);
    std::string out;
    size_t below = height;  // stack entries still to finish, from the top down
    if (need_ != 0) {  // finish the character first, with the smallest code point this stack's top holds
      if (height == 0) continue;
      const int32_t top = stacks_[i + height];
      const CodeRangeLeft r = pending_range(partial_, need_, length_);
      const int64_t cp = g.class_first_in(g.slot(top).index, r.lo, r.hi);
      if (cp < 0) continue;
      out = tok::utf8_encode(static_cast<char32_t>(cp)).substr(static_cast<size_t>(length_ - need_));
      g.append_shortest(top + 1, out);
      below = height - 1;
    }
    for (size_t k = below; k >= 1; --k) g.append_shortest(stacks_[i + k], out);
    if (!best || out.size() < best->size()) best = std::move(out);
  }
  DSPARK_CHECK(best.has_value(), "GrammarMatcher: no stack can finish");
  return *best;
}

}  // namespace dspark
