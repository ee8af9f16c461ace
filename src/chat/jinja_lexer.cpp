#include "chat/jinja_lexer.h"

#include <cctype>
#include <cstring>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace dspark::jinja {
namespace {

// Jinja2 splits the source into lines (str.splitlines) and rejoins them with "\n", so
// every line break Python knows becomes "\n" and a final line break disappears.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t pos = 0, size = 0; pos < source.size(); pos += size) {
    char32_t cp = decode_utf8(source, pos, size);
    if (cp == '\r' && pos + 1 < source.size() && source[pos + 1] == '\n') {
      out += '\n';
      size = 2;
    } else if (cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
               cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
      out += '\n';
    } else {
      out.append(source.substr(pos, size));
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

constexpr size_t kMaxTagTokens = 4096;

// Operators, longest first so that "**" wins over "*".
constexpr const char* kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%",
                                      "~", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|",
                                      "=", "<", ">", ";"};

class Lexer {
 public:
  Lexer(std::string source, const std::string& name) : src_(std::move(source)), name_(name) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_data();
    tokens_.push_back({TokenType::kEof, "", line_at(pos_)});
    return std::move(tokens_);
  }

 private:
  enum class TagKind { kVariable, kBlock, kComment };

  [[noreturn]] void fail(size_t at, const std::string& what) {
    throw TemplateSyntaxError(name_ + ":" + std::to_string(line_at(at)) + ": " + what);
  }

  // Lines are counted incrementally: positions only move forward.
  int line_at(size_t at) {
    for (; line_pos_ < at && line_pos_ < src_.size(); ++line_pos_)
      if (src_[line_pos_] == '\n') ++line_;
    return line_;
  }

  void emit(TokenType type, std::string text, size_t at) {
    int line = line_at(at);
    tokens_.push_back({type, std::move(text), line});
  }

  // Literal text up to the next tag, stripped as that tag's whitespace control asks.
  void lex_data() {
    size_t tag = pos_;
    while ((tag = src_.find('{', tag)) != std::string::npos) {
      if (tag + 1 < src_.size() && std::strchr("{%#", src_[tag + 1])) break;
      ++tag;
    }
    if (tag == std::string::npos) {
      emit_text(src_.substr(pos_), pos_);
      pos_ = src_.size();
      return;
    }
    char opener = src_[tag + 1];
    char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
    if (sign != '-' && sign != '+') sign = '\0';
    TagKind kind = opener == '{' ? TagKind::kVariable : opener == '%' ? TagKind::kBlock : TagKind::kComment;
    size_t raw_body = kind == TagKind::kBlock ? match_raw_begin(tag) : std::string::npos;

    emit_text(strip_before_tag(src_.substr(pos_, tag - pos_), sign, kind != TagKind::kVariable), pos_);
    size_t body = tag + 2 + (sign ? 1 : 0);
    if (raw_body != std::string::npos) {
      lex_raw(raw_body, tag);
    } else if (kind == TagKind::kComment) {
      lex_comment(body, tag);
    } else {
      lex_tag(body, tag, kind);
    }
  }

  void emit_text(std::string text, size_t at) {
    if (!text.empty()) emit(TokenType::kText, std::move(text), at);
  }

  std::string strip_before_tag(std::string text, char sign, bool lstrip_applies) {
    if (sign == '-') return python_strip(text, nullptr, false, true);
    if (sign == '+' || !lstrip_applies) return text;
    size_t line_start = text.rfind('\n');
    line_start = line_start == std::string::npos ? 0 : line_start + 1;
    if (line_start == 0 && !line_starting_) return text;
    if (line_start == text.size()) return text;
    for (size_t i = line_start; i < text.size(); ++i)
      if (!is_space(text[i])) return text;
    text.resize(line_start);
    return text;
  }

  // Consumes what follows a tag end: all whitespace after "-", the first newline after a
  // block or comment end when trim_blocks applies.
  void after_tag_end(size_t end, char sign, bool trim_newline) {
    pos_ = end;
    if (sign == '-') {
      std::string_view rest(src_);
      rest.remove_prefix(pos_);
      std::string stripped = python_strip(rest, nullptr, true, false);
      pos_ = src_.size() - stripped.size();
    } else if (sign != '+' && trim_newline && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  void lex_comment(size_t body, size_t tag) {
    size_t close = src_.find("#}", body);
    if (close == std::string::npos) fail(tag, "Missing end of comment tag");
    char sign = close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : '\0';
    after_tag_end(close + 2, sign, true);
  }

  // Matches "{% raw %}" (with optional - / + and spaces) at `tag`; returns where the raw
  // body starts, or npos.
  size_t match_raw_begin(size_t tag) {
    size_t p = tag + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return std::string::npos;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "-%}") == 0) {
      p += 3;
      while (p < src_.size() && is_space(src_[p])) ++p;
      return p;
    }
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string::npos;
  }

  void lex_raw(size_t body, size_t tag) {
    for (size_t p = src_.find("{%", body); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q++] : '\0';
      while (q < src_.size() && is_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && is_space(src_[q])) ++q;
      char end_sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q++] : '\0';
      if (src_.compare(q, 2, "%}") != 0) continue;
      emit_text(strip_before_tag(src_.substr(body, p - body), sign, true), body);
      after_tag_end(q + 2, end_sign, true);
      return;
    }
    fail(tag, "Missing end of raw directive");
  }

  // Tokens inside {{ }} or {% %}, up to the matching end marker. Brackets are balanced
  // first: inside them "}}" closes a dict, not the tag.
  void lex_tag(size_t body, size_t tag, TagKind kind) {
    const bool block = kind == TagKind::kBlock;
    emit(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, block ? "{%" : "{{", tag);
    const char* end = block ? "%}" : "}}";
    size_t p = body;
    std::string brackets;
    // Bounds the size (and so the depth) of one expression tree: evaluating and destroying
    // it recurses once per level.
    const size_t first_token = tokens_.size();
    while (true) {
      if (tokens_.size() - first_token > kMaxTagTokens) fail(tag, "expression is too long (more than 4096 tokens in one tag)");
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size()) fail(tag, std::string("unexpected end of template, expected '") + end + "'");
      if (brackets.empty()) {
        char sign = src_[p];
        if ((sign == '-' || sign == '+') && src_.compare(p + 1, 2, end) == 0 && (block || sign == '-')) {
          emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, end, p);
          after_tag_end(p + 3, sign, block);
          return;
        }
        if (src_.compare(p, 2, end) == 0) {
          emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, end, p);
          after_tag_end(p + 2, '\0', block);
          return;
        }
      }
      p = lex_token(p, brackets);
    }
  }

  size_t lex_token(size_t p, std::string& brackets) {
    char c = src_[p];
    if (is_name_start(c)) {
      size_t q = p;
      while (q < src_.size() && is_name_char(src_[q])) ++q;
      emit(TokenType::kName, src_.substr(p, q - p), p);
      return q;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    for (const char* op : kOperators) {
      size_t len = std::strlen(op);
      if (src_.compare(p, len, op) != 0) continue;
      if (len == 1 && std::strchr("([{", c)) brackets += c;
      if (len == 1 && std::strchr(")]}", c)) {
        char open = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (brackets.empty() || brackets.back() != open) fail(p, std::string("unexpected '") + c + "'");
        brackets.pop_back();
      }
      emit(TokenType::kOperator, op, p);
      return p + len;
    }
    fail(p, std::string("unexpected char '") + c + "'");
  }

  size_t lex_number(size_t p) {
    size_t q = p;
    while (q < src_.size() && (is_digit(src_[q]) || src_[q] == '_')) ++q;
    bool is_float = false;
    // "1.5" is a float; "x.0" (after a dot) and "1.foo" are not.
    bool after_dot = p > 0 && src_[p - 1] == '.';
    if (!after_dot && q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
      is_float = true;
      ++q;
      while (q < src_.size() && (is_digit(src_[q]) || src_[q] == '_')) ++q;
    }
    if (!after_dot && q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t e = q + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && is_digit(src_[e])) {
        is_float = true;
        q = e;
        while (q < src_.size() && is_digit(src_[q])) ++q;
      }
    }
    std::string text;
    for (size_t i = p; i < q; ++i) if (src_[i] != '_') text += src_[i];
    emit(is_float ? TokenType::kFloat : TokenType::kInteger, text, p);
    return q;
  }

  // Python string literal escapes (Jinja decodes literals with "unicode-escape").
  size_t lex_string(size_t p) {
    const char quote = src_[p];
    std::string value;
    size_t q = p + 1;
    while (true) {
      if (q >= src_.size()) fail(p, "unexpected end of string");
      char c = src_[q];
      if (c == quote) break;
      if (c != '\\' || q + 1 >= src_.size()) {
        value += c;
        ++q;
        continue;
      }
      char e = src_[q + 1];
      q += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\n': break;  // line continuation
        case 'x': case 'u': case 'U': {
          size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          for (size_t i = 0; i < digits; ++i)
            if (q + i >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[q + i])))
              fail(p, "truncated \\" + std::string(1, e) + " escape in string");
          char32_t cp = static_cast<char32_t>(std::stoul(src_.substr(q, digits), nullptr, 16));
          if (cp > 0x10FFFF) fail(p, "illegal Unicode character in string");
          append_utf8(value, cp);
          q += digits;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // octal, up to three digits
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int i = 0; i < 2 && q < src_.size() && src_[q] >= '0' && src_[q] <= '7'; ++i, ++q)
              cp = cp * 8 + static_cast<char32_t>(src_[q] - '0');
            append_utf8(value, cp);
          } else {  // unknown escapes stay as written
            value += '\\';
            value += e;
          }
      }
    }
    emit(TokenType::kString, std::move(value), p);
    return q + 1;
  }

  std::string src_;
  const std::string& name_;
  size_t pos_ = 0;
  size_t line_pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the previous tag's match ended with a newline
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& template_name) {
  return Lexer(normalize_newlines(source), template_name).run();
}

}  // namespace dspark::jinja
