#include "structured/gbnf_parser.h"

#include <cctype>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "core/check.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::gbnf {
namespace {

using regex::CodeRange;
using regex::CodeRanges;

constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;

CodeRanges without_surrogates(const CodeRanges& sorted) {
  CodeRanges out;
  for (const CodeRange c : sorted) {
    if (c.hi < kSurrogateLo || c.lo > kSurrogateHi) {
      out.push_back(c);
      continue;
    }
    if (c.lo < kSurrogateLo) out.push_back({c.lo, kSurrogateLo - 1});
    if (c.hi > kSurrogateHi) out.push_back({kSurrogateHi + 1, c.hi});
  }
  return out;
}

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  Rules parse() {
    DSPARK_CHECK_REQUEST(static_cast<int64_t>(t_.size()) <= kMaxGrammarBytes, "grammar: {} bytes, longer than {}",
                         t_.size(), kMaxGrammarBytes);
    if (const size_t bad = tok::utf8_find_invalid(t_); bad != std::string_view::npos) fail_at("not UTF-8", bad);
    space(true);
    while (!at_end()) {
      definition();
      space(true);
    }
    for (size_t r = 0; r < out_.rules.size(); ++r) {
      if (!defined_[r]) {
        fail_at(fmt::format("rule '{}' is used but not defined", out_.rules[r].name), first_use_[r]);
      }
    }
    const auto root = by_name_.find("root");
    DSPARK_CHECK_REQUEST(root != by_name_.end(), "grammar: no rule 'root' (the rule the output matches)");
    out_.root = root->second;
    return std::move(out_);
  }

 private:
  static constexpr size_t kMadeRule = static_cast<size_t>(-1);

  [[noreturn]] void fail(std::string_view what) const { fail_at(what, pos_); }
  [[noreturn]] void fail_at(std::string_view what, size_t at) const {
    int64_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error(ErrorKind::kInvalidRequest, "", fmt::format("grammar: {} at line {} column {}", what, line, column));
  }

  bool at_end() const { return pos_ >= t_.size(); }
  char peek() const { return t_[pos_]; }

  // Blanks and comments; newlines too where newline_ok (a rule's text goes on).
  void space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newline_ok)) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else {
        return;
      }
    }
  }

  std::string word() {
    const size_t start = pos_;
    while (!at_end() && is_word_char(peek())) ++pos_;
    return std::string(t_.substr(start, pos_ - start));
  }

  int32_t rule_index(const std::string& name, size_t used_at) {
    const auto [it, added] = by_name_.try_emplace(name, static_cast<int32_t>(out_.rules.size()));
    if (added) {
      out_.rules.push_back({name, {}});
      defined_.push_back(false);
      first_use_.push_back(used_at);
    }
    return it->second;
  }

  int32_t made_rule(std::vector<std::vector<Element>> alternatives) {
    out_.rules.push_back({fmt::format("{}#{}", current_, ++made_), std::move(alternatives)});
    defined_.push_back(true);
    first_use_.push_back(kMadeRule);
    return static_cast<int32_t>(out_.rules.size()) - 1;
  }

  Element chars(CodeRanges ranges) {
    std::string key;
    for (const CodeRange c : ranges) key += fmt::format("{:x}-{:x},", c.lo, c.hi);
    const auto [it, added] = class_index_.try_emplace(key, static_cast<int32_t>(out_.classes.size()));
    if (added) out_.classes.push_back(std::move(ranges));
    return {Element::Kind::kChars, it->second};
  }

  void count_elements(size_t n) {
    elements_ += static_cast<int64_t>(n);
    if (elements_ > kMaxElements) {
      fail(fmt::format("more than {} elements once repetitions are expanded", kMaxElements));
    }
  }

  void definition() {
    const size_t name_at = pos_;
    const std::string name = word();
    if (name.empty()) fail("expected a rule name");
    space(false);
    if (t_.substr(pos_, 3) != "::=") fail(fmt::format("expected '::=' after the rule name '{}'", name));
    pos_ += 3;
    space(true);
    const int32_t r = rule_index(name, name_at);
    if (defined_[r]) fail_at(fmt::format("rule '{}' is defined twice", name), name_at);
    defined_[r] = true;
    current_ = name;
    made_ = 0;
    std::vector<std::vector<Element>> alternatives = alternation(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') {
      if (t_.substr(pos_, 3) == "::=") fail("a second '::=' on the line (one rule per line)");
      fail(fmt::format("unexpected '{}' in rule '{}'", peek(), name));
    }
    out_.rules[r].alternatives = std::move(alternatives);
  }

  std::vector<std::vector<Element>> alternation(bool nested) {
    std::vector<std::vector<Element>> alternatives{sequence(nested)};
    while (!at_end() && peek() == '|') {
      ++pos_;
      space(true);
      alternatives.push_back(sequence(nested));
    }
    return alternatives;
  }

  std::vector<Element> sequence(bool nested) {
    std::vector<Element> seq;
    while (!at_end()) {
      const char c = peek();
      if (c == '*' || c == '+' || c == '?' || c == '{') fail(fmt::format("'{}' with nothing to repeat", c));
      std::vector<Element> item;
      if (!atom(item)) break;
      while (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
        item = repeated(item);
      }
      count_elements(item.size());
      seq.insert(seq.end(), item.begin(), item.end());
      space(nested);
    }
    return seq;
  }

  // Reads one literal, class, `.`, reference or group into item; false (nothing read) at
  // anything else.
  bool atom(std::vector<Element>& item) {
    const char c = peek();
    if (c == '"') {
      const size_t start = pos_++;
      while (true) {
        if (at_end()) fail_at("an unterminated literal", start);
        if (peek() == '"') break;
        const uint32_t cp = peek() == '\\' ? escape() : next_code_point();
        if (cp >= kSurrogateLo && cp <= kSurrogateHi) fail("a surrogate code point");
        item.push_back(chars({{cp, cp}}));
      }
      ++pos_;
      return true;
    }
    if (c == '[') {
      item.push_back(char_class());
      return true;
    }
    if (c == '.') {
      ++pos_;
      item.push_back(chars(without_surrogates({{0, regex::kMaxCodePoint}})));
      return true;
    }
    if (c == '(') {
      const size_t start = pos_++;
      space(true);
      std::vector<std::vector<Element>> alternatives = alternation(true);
      if (at_end() || peek() != ')') fail_at("an unclosed '('", start);
      ++pos_;
      if (alternatives.size() == 1) {
        item = std::move(alternatives[0]);
      } else {
        item.push_back({Element::Kind::kRule, made_rule(std::move(alternatives))});
      }
      return true;
    }
    if (is_word_char(c)) {
      const size_t at = pos_;
      item.push_back({Element::Kind::kRule, rule_index(word(), at)});
      return true;
    }
    return false;
  }

  uint32_t next_code_point() {
    size_t p = pos_;
    const char32_t cp = tok::utf8_next(t_, p);
    pos_ = p;
    return static_cast<uint32_t>(cp);
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) {
        fail(fmt::format("expected {} hex digits", digits));
      }
      const char h = peek();
      v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      ++pos_;
    }
    if (v > regex::kMaxCodePoint) fail("a code point above U+10FFFF");
    return v;
  }

  uint32_t escape() {
    ++pos_;  // the backslash
    if (at_end()) fail("a '\\' at the end");
    const char c = t_[pos_++];
    switch (c) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '\\': case '"': case '[': case ']': case '-': case '/': case '^': return static_cast<uint8_t>(c);
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default: --pos_; fail(fmt::format("an unknown escape '\\{}'", c));
    }
  }

  Element char_class() {
    const size_t start = pos_++;
    const bool negated = !at_end() && peek() == '^';
    if (negated) ++pos_;
    CodeRanges ranges;
    while (true) {
      if (at_end()) fail_at("an unterminated class", start);
      if (peek() == ']') break;
      const uint32_t lo = peek() == '\\' ? escape() : next_code_point();
      uint32_t hi = lo;
      if (pos_ + 1 < t_.size() && peek() == '-' && t_[pos_ + 1] != ']') {
        ++pos_;
        hi = peek() == '\\' ? escape() : next_code_point();
        if (hi < lo) fail("a range out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    ranges = regex::normalized_ranges(std::move(ranges));
    if (negated) ranges = regex::complement_ranges(ranges);
    ranges = without_surrogates(ranges);
    if (ranges.empty()) fail_at("a class that matches no character", start);
    return chars(std::move(ranges));
  }

  int32_t count() {
    const size_t start = pos_;
    int64_t v = 0;
    while (!at_end() && std::isdigit(static_cast<unsigned char>(peek())) && v <= kMaxRepeatCount) {
      v = v * 10 + (peek() - '0');
      ++pos_;
    }
    if (pos_ == start) return -1;
    if (v > kMaxRepeatCount) fail_at(fmt::format("a count above {}", kMaxRepeatCount), start);
    return static_cast<int32_t>(v);
  }

  // item under the repetition operator at pos_: * + ? {m} {m,} {,n} {m,n}.
  std::vector<Element> repeated(const std::vector<Element>& item) {
    int32_t min = 0, max = -1;  // -1: unbounded
    const size_t at = pos_;
    const char op = t_[pos_++];
    if (op == '+') {
      min = 1;
    } else if (op == '?') {
      max = 1;
    } else if (op == '{') {
      space(false);
      min = count();
      space(false);
      if (!at_end() && peek() == ',') {
        ++pos_;
        space(false);
        max = count();
        space(false);
        if (min < 0 && max < 0) fail_at("a count {,} with no bound", at);
        if (min < 0) min = 0;
      } else {
        if (min < 0) fail_at("expected a count after '{'", at);
        max = min;
      }
      if (at_end() || peek() != '}') fail_at("an unclosed '{'", at);
      ++pos_;
      if (max >= 0 && max < min) fail_at(fmt::format("a count {{{},{}}} out of order", min, max), at);
    }
    const Element x = item.size() == 1 ? item[0] : Element{Element::Kind::kRule, made_rule({item})};
    std::vector<Element> out(static_cast<size_t>(min), x);
    if (max < 0) {  // R ::= x R | ""
      const int32_t r = made_rule({});
      out_.rules[r].alternatives = {{x, {Element::Kind::kRule, r}}, {}};
      out.push_back({Element::Kind::kRule, r});
    } else if (max > min) {  // O_1 ::= x | "", O_k ::= x O_{k-1} | ""
      int32_t optional = made_rule({{x}, {}});
      for (int32_t k = 2; k <= max - min; ++k) {
        optional = made_rule({{x, {Element::Kind::kRule, optional}}, {}});
        count_elements(2);
      }
      out.push_back({Element::Kind::kRule, optional});
    }
    count_elements(out.size());
    return out;
  }

  std::string_view t_;
  size_t pos_ = 0;
  Rules out_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::vector<bool> defined_;     // [rules]
  std::vector<size_t> first_use_;  // [rules] byte of the first reference (kMadeRule for made rules)
  std::map<std::string, int32_t> class_index_;  // a class's ranges as text -> its index
  int64_t elements_ = 0;
  std::string current_;  // the rule being read (names the rules its repetitions and groups make)
  int32_t made_ = 0;
};

}  // namespace

Rules parse_gbnf(std::string_view text) { return Parser(text).parse(); }

}  // namespace dspark::gbnf
