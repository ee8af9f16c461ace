// Byte-level lexer for the two JSON scalars that are open-ended token languages: a string
// (read from after its opening quote) and a number (read from its first byte). JsonMatcher
// and SchemaMatcher (json_matcher.h, schema_matcher.h) both lex their scalars with it, so
// each lexical rule lives here once; the structure around a scalar (keys, containers,
// whitespace, schema limits) stays with the matchers.
//
// Strings: escapes \" \\ \/ \b \f \n \r \t \uXXXX; raw bytes < 0x20 refused; bytes >= 0x80
// must form well-formed UTF-8 (no overlong forms, no encoded surrogates, nothing above
// U+10FFFF), checked byte by byte, so a prefix ending inside a character is accepted while
// the character can still be completed; \u escapes of UTF-16 surrogates must form a pair
// (a high \uD800-\uDBFF followed by a low \uDC00-\uDFFF escape), refused at the hex digit
// that breaks the rule. The closing quote ends the token.
// Numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, or -?(0|[1-9][0-9]*) when the
// caller asks for an integer. A number ends only at the first byte that cannot extend it,
// which the lexer does not consume: the caller reads it as the byte after the value.
//
// Hook for length limits: between_chars() holds inside a string exactly where the next
// byte is the closing quote or starts a character (a multi-byte character, an escape, and
// a surrogate pair of escapes each being one), so a caller counts characters there.
//
// A JsonScalarLexer is an 8-byte value with no heap, so that the matchers which embed it
// stay cheap to copy once per level of a vocabulary trie walk.
#pragma once

#include <cstdint>

namespace dspark {

enum class LexStep : uint8_t {
  kRejected,     // the byte cannot come next; the lexer is then garbage (step a copy)
  kContinue,     // consumed; the token goes on
  kEnded,        // consumed, and it ended the token (a string's closing quote)
  kEndedBefore,  // not consumed: the number was complete and the byte cannot extend it
};

class JsonScalarLexer {
 public:
  static bool starts_number(uint8_t c) { return c == '-' || (c >= '0' && c <= '9'); }

  // Begins a string; the opening quote has been read.
  void start_string() { state_ = State::kString; }
  // Begins a number with its first byte, which must satisfy starts_number().
  void start_number(uint8_t first) {
    state_ = first == '-' ? State::kNumMinus : first == '0' ? State::kNumZero : State::kNumInt;
  }

  // Reads one byte of the token begun last. integer_only refuses '.', 'e' and 'E' in a
  // number (so they end it, and the caller refuses them as bytes after the value).
  LexStep step(uint8_t c, bool integer_only = false);  // inline below

  bool in_number() const { return state_ >= State::kNumMinus; }
  // Inside a string, where the next byte is '"' or starts a character.
  bool between_chars() const { return state_ == State::kString; }

  // A byte that leads toward the token's end: '"' between characters, then whatever
  // finishes the pending character or escape, '0' for a number that still needs a
  // digit; 0 when the number is complete, where only the byte after the value can end it.
  uint8_t completion_byte() const;

  bool operator==(const JsonScalarLexer&) const = default;

 private:
  enum class State : uint8_t {
    kString,        // between characters
    kUtf8,          // inside a multi-byte UTF-8 character: aux_ continuation bytes left
    kEscape,        // after '\'
    kHex,           // inside \uXXXX: aux_ hex digits read, value so far in hex_value_
    kLowBackslash,  // after a high-surrogate escape: the '\' of the low one
    kLowU,          // after that '\': the 'u'
    kNumMinus,      // after '-': a digit (every state from here on is a number)
    kNumZero,       // after a leading '0': '.', 'e' or the end
    kNumInt,        // in [1-9][0-9]*: digit, '.', 'e' or the end
    kNumDot,        // after '.': a digit
    kNumFrac,       // in the fraction: digit, 'e' or the end
    kNumExp,        // after 'e': sign or digit
    kNumExpSign,    // after the exponent's sign: a digit
    kNumExpDigits,  // in the exponent: digit or the end
  };

  LexStep string_byte(uint8_t c);
  LexStep hex_digit(uint8_t c);
  // After "\u"; low_surrogate: this escape is the second half of a pair.
  LexStep start_hex(bool low_surrogate) {
    state_ = State::kHex;
    aux_ = 0;
    hex_value_ = 0;
    low_surrogate_ = low_surrogate;
    return LexStep::kContinue;
  }
  LexStep number_byte(uint8_t c, bool integer_only);

  uint16_t hex_value_ = 0;      // kHex: the digits read so far
  State state_ = State::kString;
  uint8_t aux_ = 0;             // kUtf8 / kHex counter (see State)
  uint8_t utf8_lo_ = 0;         // kUtf8: the next continuation byte lies in [lo, hi]
  uint8_t utf8_hi_ = 0;
  bool low_surrogate_ = false;  // kHex: this escape must be a low surrogate
};

// The byte-level rules are inline: a vocabulary trie walk runs them once per trie node, and
// a call into another translation unit per byte made token masks measurably slower.

inline LexStep JsonScalarLexer::step(uint8_t c, bool integer_only) {
  return in_number() ? number_byte(c, integer_only) : string_byte(c);
}

inline LexStep JsonScalarLexer::string_byte(uint8_t c) {
  switch (state_) {
    case State::kString:
      if (c == '"') return LexStep::kEnded;
      if (c == '\\') {
        state_ = State::kEscape;
        return LexStep::kContinue;
      }
      if (c < 0x20) return LexStep::kRejected;  // raw control characters must be escaped
      if (c < 0x80) return LexStep::kContinue;
      // UTF-8 lead byte: how many continuation bytes follow, and the range of the first
      // one, which is what excludes overlong forms (E0, F0), encoded surrogates (ED) and
      // code points above U+10FFFF (F4) (Unicode 15, table 3-7).
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (c >= 0xC2 && c <= 0xDF) {
        aux_ = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        aux_ = 2;
        if (c == 0xE0) utf8_lo_ = 0xA0;
        if (c == 0xED) utf8_hi_ = 0x9F;
      } else if (c >= 0xF0 && c <= 0xF4) {
        aux_ = 3;
        if (c == 0xF0) utf8_lo_ = 0x90;
        if (c == 0xF4) utf8_hi_ = 0x8F;
      } else {
        return LexStep::kRejected;  // continuation byte without a lead, C0, C1, F5..FF
      }
      state_ = State::kUtf8;
      return LexStep::kContinue;
    case State::kUtf8:
      if (c < utf8_lo_ || c > utf8_hi_) return LexStep::kRejected;
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (--aux_ == 0) state_ = State::kString;
      return LexStep::kContinue;
    case State::kEscape:
      switch (c) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          state_ = State::kString;
          return LexStep::kContinue;
        case 'u':
          return start_hex(false);
        default:
          return LexStep::kRejected;
      }
    case State::kHex:
      return hex_digit(c);
    case State::kLowBackslash:
      if (c != '\\') return LexStep::kRejected;
      state_ = State::kLowU;
      return LexStep::kContinue;
    case State::kLowU:
      if (c != 'u') return LexStep::kRejected;
      return start_hex(true);
    default:
      return LexStep::kRejected;
  }
}

// Surrogates are decided by the first two digits (D8-DB high, DC-DF low), so a wrong
// escape is refused at the digit that makes it wrong, not at the end.
inline LexStep JsonScalarLexer::hex_digit(uint8_t c) {
  int v;
  if (c >= '0' && c <= '9') {
    v = c - '0';
  } else if (c >= 'a' && c <= 'f') {
    v = c - 'a' + 10;
  } else if (c >= 'A' && c <= 'F') {
    v = c - 'A' + 10;
  } else {
    return LexStep::kRejected;
  }
  if (low_surrogate_) {
    if (aux_ == 0 && v != 0xD) return LexStep::kRejected;
    if (aux_ == 1 && v < 0xC) return LexStep::kRejected;
  } else if (aux_ == 1 && hex_value_ == 0xD && v >= 0xC) {
    return LexStep::kRejected;  // a low surrogate without a high one before it
  }
  hex_value_ = static_cast<uint16_t>(hex_value_ * 16 + v);
  if (++aux_ < 4) return LexStep::kContinue;
  const bool high = !low_surrogate_ && hex_value_ >= 0xD800 && hex_value_ <= 0xDBFF;
  low_surrogate_ = false;
  // Back between characters only after the low half: the pair is one character.
  state_ = high ? State::kLowBackslash : State::kString;
  return LexStep::kContinue;
}

inline LexStep JsonScalarLexer::number_byte(uint8_t c, bool integer_only) {
  const bool digit = c >= '0' && c <= '9';
  const bool exp = !integer_only && (c == 'e' || c == 'E');
  const bool dot = !integer_only && c == '.';
  switch (state_) {
    case State::kNumMinus:
      if (c == '0') {
        state_ = State::kNumZero;
        return LexStep::kContinue;
      }
      if (!digit) return LexStep::kRejected;
      state_ = State::kNumInt;
      return LexStep::kContinue;
    case State::kNumZero:
    case State::kNumInt:
      if (digit && state_ == State::kNumInt) return LexStep::kContinue;
      if (dot) {
        state_ = State::kNumDot;
        return LexStep::kContinue;
      }
      if (exp) {
        state_ = State::kNumExp;
        return LexStep::kContinue;
      }
      // "0" then a digit (a leading zero) ends the number here, and the caller refuses
      // the digit as the byte after the value.
      return LexStep::kEndedBefore;
    case State::kNumDot:
      if (!digit) return LexStep::kRejected;
      state_ = State::kNumFrac;
      return LexStep::kContinue;
    case State::kNumFrac:
      if (digit) return LexStep::kContinue;
      if (exp) {
        state_ = State::kNumExp;
        return LexStep::kContinue;
      }
      return LexStep::kEndedBefore;
    case State::kNumExp:
      if (c == '+' || c == '-') {
        state_ = State::kNumExpSign;
        return LexStep::kContinue;
      }
      [[fallthrough]];
    case State::kNumExpSign:
      if (!digit) return LexStep::kRejected;
      state_ = State::kNumExpDigits;
      return LexStep::kContinue;
    case State::kNumExpDigits:
      return digit ? LexStep::kContinue : LexStep::kEndedBefore;
    default:
      return LexStep::kRejected;
  }
}

}  // namespace dspark
