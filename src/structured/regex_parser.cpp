#include "structured/regex_parser.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/check.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::regex {
namespace {

using Ranges = std::vector<CodeRange>;

Ranges digits() { return {{'0', '9'}}; }
Ranges word() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
Ranges space() { return {{'\t', '\r'}, {' ', ' '}}; }  // \t \n \v \f \r and the space

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  Tree parse() {
    DSPARK_CHECK_REQUEST(static_cast<int64_t>(p_.size()) <= kMaxPatternBytes, "regex: {} bytes, longer than {}",
                         p_.size(), kMaxPatternBytes);
    size_t end = p_.size();
    if (!p_.empty() && p_[0] == '^') pos_ = 1;
    if (end > pos_ && p_[end - 1] == '$' && !escaped_at(end - 1)) --end;
    end_ = end;
    tree_.root = alternation();
    if (pos_ < end_) fail(p_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
    return std::move(tree_);
  }

 private:
  // Whether p_[i] is preceded by an odd number of backslashes.
  bool escaped_at(size_t i) const {
    size_t n = 0;
    while (i > n && p_[i - n - 1] == '\\') ++n;
    return n % 2 == 1;
  }

  [[noreturn]] void fail(std::string_view what) const { fail_at(what, pos_); }
  [[noreturn]] void fail_at(std::string_view what, size_t at) const {
    throw Error(ErrorKind::kInvalidRequest, "", fmt::format("regex: {} at byte {}", what, at));
  }

  bool at_end() const { return pos_ >= end_; }
  char peek() const { return p_[pos_]; }

  int32_t add(Node n) {
    tree_.nodes.push_back(std::move(n));
    return static_cast<int32_t>(tree_.nodes.size()) - 1;
  }
  int32_t add_set(Ranges r) {
    Node n;
    n.kind = Node::Kind::kSet;
    n.set = normalized_ranges(std::move(r));
    return add(std::move(n));
  }

  int32_t alternation() {
    std::vector<int32_t> parts{concatenation()};
    while (!at_end() && peek() == '|') {
      ++pos_;
      parts.push_back(concatenation());
    }
    if (parts.size() == 1) return parts[0];
    Node n;
    n.kind = Node::Kind::kAlternate;
    n.children = std::move(parts);
    return add(std::move(n));
  }

  int32_t concatenation() {
    std::vector<int32_t> parts;
    while (!at_end() && peek() != '|' && peek() != ')') parts.push_back(repetition());
    if (parts.empty()) return add(Node{});
    if (parts.size() == 1) return parts[0];
    Node n;
    n.kind = Node::Kind::kConcat;
    n.children = std::move(parts);
    return add(std::move(n));
  }

  int32_t repetition() {
    int32_t node = atom();
    bool quantified = false;
    while (!at_end()) {
      int32_t min = 0, max = -1;
      const size_t q_at = pos_;
      const char c = peek();
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        min = 1;
        ++pos_;
      } else if (c == '?') {
        max = 1;
        ++pos_;
      } else if (c != '{' || !counted(min, max)) {
        break;
      }
      if (quantified) fail_at("a quantifier after a quantifier (possessive or repeated quantifiers are not supported)",
                              q_at);
      quantified = true;
      if (!at_end() && peek() == '?') ++pos_;  // lazy: the same strings match
      Node n;
      n.kind = Node::Kind::kRepeat;
      n.children = {node};
      n.min = min;
      n.max = max;
      node = add(std::move(n));
    }
    return node;
  }

  // {n}, {n,}, {,m} or {n,m} at pos_; false (pos_ unchanged) where the brace is a literal,
  // as in Python's re.
  bool counted(int32_t& min, int32_t& max) {
    size_t i = pos_ + 1;
    auto number = [&](int64_t& v) {
      const size_t start = i;
      v = 0;
      while (i < end_ && p_[i] >= '0' && p_[i] <= '9') {
        v = std::min<int64_t>(v * 10 + (p_[i] - '0'), int64_t{1} << 40);
        ++i;
      }
      return i > start;
    };
    int64_t lo = 0, hi = -1;
    const bool has_lo = number(lo);
    if (i < end_ && p_[i] == ',') {
      ++i;
      if (!number(hi)) hi = -1;
    } else {
      if (!has_lo) return false;
      hi = lo;
    }
    if (i >= end_ || p_[i] != '}') return false;
    if (lo > kMaxRepeatCount || hi > kMaxRepeatCount) fail(fmt::format("a count above {}", kMaxRepeatCount));
    if (hi >= 0 && hi < lo) fail("a count range whose maximum is below its minimum");
    pos_ = i + 1;
    min = static_cast<int32_t>(lo);
    max = static_cast<int32_t>(hi);
    return true;
  }

  int32_t atom() {
    const char c = peek();
    if (c == '(') return group();
    if (c == '[') return add_set(char_class());
    if (c == '.') {
      ++pos_;
      return add_set({{0, '\n' - 1}, {'\n' + 1, kMaxCodePoint}});
    }
    if (c == '\\') {
      Ranges r;
      escape(r, /*in_class=*/false);
      return add_set(std::move(r));
    }
    if (c == '^' || c == '$') fail("an anchor inside the pattern (the whole output matches it; '^' and '$' are "
                                   "accepted only at its start and end)");
    if (c == '*' || c == '+' || c == '?') fail("nothing to repeat");
    const uint32_t cp = code_point();
    return add_set({{cp, cp}});
  }

  int32_t group() {
    const size_t open = pos_;
    ++pos_;
    if (!at_end() && peek() == '?') {
      ++pos_;
      if (!at_end() && peek() == ':') {
        ++pos_;
      } else if (!at_end() && (peek() == 'P' || peek() == '<') &&
                 !(peek() == '<' && pos_ + 1 < end_ && (p_[pos_ + 1] == '=' || p_[pos_ + 1] == '!'))) {
        if (peek() == 'P') ++pos_;
        if (at_end() || peek() != '<') fail("a group construct that is not supported");
        const size_t name = ++pos_;
        while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')) ++pos_;
        if (at_end() || peek() != '>' || pos_ == name) fail("a malformed group name");
        ++pos_;
      } else {
        fail("lookaround, inline flags or another group construct that is not supported");
      }
    }
    const int32_t inner = alternation();
    if (at_end() || peek() != ')') fail_at("an unclosed '('", open);
    ++pos_;
    return inner;
  }

  Ranges char_class() {
    const size_t open = pos_;
    ++pos_;
    bool negated = false;
    if (!at_end() && peek() == '^') {
      negated = true;
      ++pos_;
    }
    Ranges r;
    bool first = true;
    while (true) {
      if (at_end()) fail_at("an unclosed '['", open);
      if (peek() == ']' && !first) break;
      first = false;
      uint32_t lo = 0;
      if (peek() == '\\') {
        Ranges item;
        if (!escape(item, /*in_class=*/true)) {  // \d, \w, ...: no range from it
          r.insert(r.end(), item.begin(), item.end());
          continue;
        }
        lo = item[0].lo;
      } else {
        lo = code_point();
      }
      uint32_t hi = lo;
      if (pos_ + 1 < end_ && peek() == '-' && p_[pos_ + 1] != ']') {
        const size_t dash = pos_++;
        if (peek() == '\\') {
          Ranges item;
          if (!escape(item, true)) fail_at("a range ending in a class escape", dash);
          hi = item[0].lo;
        } else {
          hi = code_point();
        }
        if (hi < lo) fail_at("a range whose end is below its start", dash);
      }
      r.push_back({lo, hi});
    }
    ++pos_;
    r = normalized_ranges(std::move(r));
    if (negated) r = complement_ranges(r);
    if (r.empty()) fail_at("a class that matches no character", open);
    return r;
  }

  // Reads an escape at pos_ into r. Returns true for a single character, false for a class.
  bool escape(Ranges& r, bool in_class) {
    const size_t at = pos_;
    ++pos_;
    if (at_end()) fail_at("a trailing backslash", at);
    const char c = peek();
    ++pos_;
    auto single = [&](uint32_t cp) {
      r.push_back({cp, cp});
      return true;
    };
    switch (c) {
      case 'd': r = digits(); return false;
      case 'D': r = complement_ranges(digits()); return false;
      case 'w': r = word(); return false;
      case 'W': r = complement_ranges(word()); return false;
      case 's': r = space(); return false;
      case 'S': r = complement_ranges(space()); return false;
      case 'n': return single('\n');
      case 't': return single('\t');
      case 'r': return single('\r');
      case 'f': return single('\f');
      case 'v': return single('\v');
      case '0': return single(0);
      case 'x': return single(hex(2, at));
      case 'u': return single(hex(4, at));
      case 'U': return single(hex(8, at));
      case 'b':
        if (in_class) return single('\b');
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) return single(c);
    }
    fail_at(fmt::format("an unsupported escape '\\{}' (backreferences, word boundaries and Unicode properties are "
                        "not supported)", c), at);
  }

  uint32_t hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(peek()))) fail_at("a malformed hex escape", at);
      const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(peek())));
      v = v * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : h - 'a' + 10);
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) fail_at("an escape that is not a Unicode scalar value", at);
    return v;
  }

  // One UTF-8 character at pos_ (well-formed: no overlong forms, surrogates or values past
  // U+10FFFF).
  uint32_t code_point() {
    int bad = 0;
    if (tok::utf8_check_at(p_, pos_, &bad) == 0) fail("a byte that is not UTF-8");
    return tok::utf8_next(p_, pos_);
  }

  std::string_view p_;
  size_t pos_ = 0;
  size_t end_ = 0;
  Tree tree_;
};

}  // namespace

Ranges normalized_ranges(Ranges r) {
  std::sort(r.begin(), r.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
  Ranges out;
  for (const CodeRange c : r) {
    if (!out.empty() && c.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, c.hi);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Ranges complement_ranges(const Ranges& sorted) {
  Ranges out;
  uint32_t next = 0;
  for (const CodeRange c : sorted) {
    if (c.lo > next) out.push_back({next, c.lo - 1});
    next = c.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}


Tree parse_regex(std::string_view pattern) { return Parser(pattern).parse(); }

std::string escape_regex(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\.^$|?*+()[]{}-").find(c) != std::string_view::npos) out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace dspark::regex
