#include "structured/json_matcher.h"

#include "core/check.h"

namespace dspark {

namespace {

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

bool is_whitespace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

static_assert(JsonMatcherOptions{}.max_depth == 64 && JsonMatcherOptions{}.max_whitespace_run == 16,
              "JsonMatcher's default members must match JsonMatcherOptions' defaults");

void JsonMatcherOptions::validate() const {
  DSPARK_CHECK(max_depth >= 1 && max_depth <= JsonMatcher::kMaxDepthLimit,
               "JsonMatcherOptions.max_depth must be in [1, {}], got {}",
               JsonMatcher::kMaxDepthLimit, max_depth);
  DSPARK_CHECK(max_whitespace_run >= 0 && max_whitespace_run <= 255,
               "JsonMatcherOptions.max_whitespace_run must be in [0, 255], got {}",
               max_whitespace_run);
}

JsonMatcher::JsonMatcher(const JsonMatcherOptions& options) {
  options.validate();
  max_depth_ = static_cast<uint8_t>(options.max_depth);
  max_whitespace_run_ = static_cast<uint8_t>(options.max_whitespace_run);
}

bool JsonMatcher::advance(uint8_t byte) {
  // step() may fail half-way (a number ended by a byte the container refuses), so it
  // runs on a copy: 24 bytes, cheaper than undoing.
  JsonMatcher next = *this;
  if (!next.step(byte)) return false;
  *this = next;
  return true;
}

bool JsonMatcher::advance(std::string_view bytes) {
  JsonMatcher next = *this;
  for (const char c : bytes) {
    if (!next.step(static_cast<uint8_t>(c))) return false;
  }
  *this = next;
  return true;
}

bool JsonMatcher::step(uint8_t c) {
  switch (mode_) {
    case Mode::kString:
    case Mode::kUtf8:
    case Mode::kEscape:
    case Mode::kHex:
    case Mode::kLowBackslash:
    case Mode::kLowU:
      return string_byte(c);
    case Mode::kNumMinus:
    case Mode::kNumZero:
    case Mode::kNumInt:
    case Mode::kNumDot:
    case Mode::kNumFrac:
    case Mode::kNumExp:
    case Mode::kNumExpSign:
    case Mode::kNumExpDigits:
      return number_byte(c);
    case Mode::kLiteral: {
      const std::string_view literal = kLiterals[literal_];
      if (c != static_cast<uint8_t>(literal[aux_])) return false;
      if (++aux_ == static_cast<uint8_t>(literal.size())) end_value();
      return true;
    }
    case Mode::kDone:
      return false;
    default:
      return structural(c);
  }
}

// Modes between tokens: whitespace is counted here and only here.
bool JsonMatcher::structural(uint8_t c) {
  if (is_whitespace(c)) {
    if (ws_run_ >= max_whitespace_run_) return false;
    ++ws_run_;
    return true;
  }
  ws_run_ = 0;
  switch (mode_) {
    case Mode::kStart:
      return c == '{' && open(false);
    case Mode::kObjectOpen:
      if (c == '}') return close(false);
      [[fallthrough]];
    case Mode::kObjectKey:
      if (c != '"') return false;
      mode_ = Mode::kString;
      in_key_ = true;
      return true;
    case Mode::kColon:
      if (c != ':') return false;
      mode_ = Mode::kValue;
      return true;
    case Mode::kArrayOpen:
      if (c == ']') return close(true);
      return value_start(c);
    case Mode::kValue:
      return value_start(c);
    case Mode::kAfterValue:
      if (c == ',') {
        mode_ = top_is_array() ? Mode::kValue : Mode::kObjectKey;
        return true;
      }
      if (c == '}') return close(false);
      if (c == ']') return close(true);
      return false;
    default:
      return false;
  }
}

bool JsonMatcher::value_start(uint8_t c) {
  switch (c) {
    case '"':
      mode_ = Mode::kString;
      in_key_ = false;
      return true;
    case '{':
      return open(false);
    case '[':
      return open(true);
    case '-':
      mode_ = Mode::kNumMinus;
      return true;
    case '0':
      mode_ = Mode::kNumZero;
      return true;
    case 't':
    case 'f':
    case 'n':
      mode_ = Mode::kLiteral;
      literal_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
      aux_ = 1;
      return true;
    default:
      if (c >= '1' && c <= '9') {
        mode_ = Mode::kNumInt;
        return true;
      }
      return false;
  }
}

bool JsonMatcher::open(bool is_array) {
  if (depth_ >= max_depth_) return false;
  const uint64_t bit = uint64_t{1} << depth_;
  array_bits_ = is_array ? (array_bits_ | bit) : (array_bits_ & ~bit);
  ++depth_;
  mode_ = is_array ? Mode::kArrayOpen : Mode::kObjectOpen;
  return true;
}

bool JsonMatcher::close(bool is_array) {
  if (depth_ == 0 || top_is_array() != is_array) return false;
  --depth_;
  array_bits_ &= ~(uint64_t{1} << depth_);
  mode_ = depth_ == 0 ? Mode::kDone : Mode::kAfterValue;
  return true;
}

// Every value lies inside a container (the top level is an object), so after a value
// comes ',' or a closing bracket.
void JsonMatcher::end_value() {
  mode_ = Mode::kAfterValue;
  ws_run_ = 0;
}

bool JsonMatcher::string_byte(uint8_t c) {
  switch (mode_) {
    case Mode::kString:
      if (c == '"') {
        if (in_key_) {
          mode_ = Mode::kColon;
          ws_run_ = 0;
        } else {
          end_value();
        }
        return true;
      }
      if (c == '\\') {
        mode_ = Mode::kEscape;
        return true;
      }
      if (c < 0x20) return false;  // raw control characters must be escaped
      if (c < 0x80) return true;
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
        return false;  // continuation byte without a lead, C0, C1, F5..FF
      }
      mode_ = Mode::kUtf8;
      return true;
    case Mode::kUtf8:
      if (c < utf8_lo_ || c > utf8_hi_) return false;
      utf8_lo_ = 0x80;
      utf8_hi_ = 0xBF;
      if (--aux_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kEscape:
      switch (c) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          mode_ = Mode::kString;
          return true;
        case 'u':
          mode_ = Mode::kHex;
          aux_ = 0;
          hex_value_ = 0;
          low_surrogate_ = false;
          return true;
        default:
          return false;
      }
    case Mode::kHex:
      return hex_digit(c);
    case Mode::kLowBackslash:
      if (c != '\\') return false;
      mode_ = Mode::kLowU;
      return true;
    case Mode::kLowU:
      if (c != 'u') return false;
      mode_ = Mode::kHex;
      aux_ = 0;
      hex_value_ = 0;
      low_surrogate_ = true;
      return true;
    default:
      return false;
  }
}

// Surrogates are decided by the first two digits (D8-DB high, DC-DF low), so a wrong
// escape is refused at the digit that makes it wrong, not at the end.
bool JsonMatcher::hex_digit(uint8_t c) {
  const int v = hex_value(c);
  if (v < 0) return false;
  if (low_surrogate_) {
    if (aux_ == 0 && v != 0xD) return false;
    if (aux_ == 1 && v < 0xC) return false;
  } else if (aux_ == 1 && hex_value_ == 0xD && v >= 0xC) {
    return false;  // a low surrogate without a high one before it
  }
  hex_value_ = static_cast<uint16_t>(hex_value_ * 16 + v);
  if (++aux_ < 4) return true;
  const bool high = !low_surrogate_ && hex_value_ >= 0xD800 && hex_value_ <= 0xDBFF;
  low_surrogate_ = false;
  mode_ = high ? Mode::kLowBackslash : Mode::kString;
  return true;
}

bool JsonMatcher::number_byte(uint8_t c) {
  const bool digit = is_digit(c);
  const bool exp = c == 'e' || c == 'E';
  switch (mode_) {
    case Mode::kNumMinus:
      if (c == '0') {
        mode_ = Mode::kNumZero;
        return true;
      }
      if (!digit) return false;
      mode_ = Mode::kNumInt;
      return true;
    case Mode::kNumZero:
    case Mode::kNumInt:
      if (digit && mode_ == Mode::kNumInt) return true;
      if (c == '.') {
        mode_ = Mode::kNumDot;
        return true;
      }
      if (exp) {
        mode_ = Mode::kNumExp;
        return true;
      }
      break;  // "0" then a digit (leading zero) falls through to the end test and fails
    case Mode::kNumDot:
      if (!digit) return false;
      mode_ = Mode::kNumFrac;
      return true;
    case Mode::kNumFrac:
      if (digit) return true;
      if (exp) {
        mode_ = Mode::kNumExp;
        return true;
      }
      break;
    case Mode::kNumExp:
      if (c == '+' || c == '-') {
        mode_ = Mode::kNumExpSign;
        return true;
      }
      [[fallthrough]];
    case Mode::kNumExpSign:
      if (!digit) return false;
      mode_ = Mode::kNumExpDigits;
      return true;
    case Mode::kNumExpDigits:
      if (digit) return true;
      break;
    default:
      return false;
  }
  // The number is complete and c does not extend it: c is the byte after the value.
  end_value();
  return structural(c);
}

std::string JsonMatcher::completion() const {
  std::string out;
  JsonMatcher m = *this;
  auto push = [&](uint8_t c) {
    const bool ok = m.step(c);
    DSPARK_CHECK(ok, "JsonMatcher::completion: byte 0x{:02X} refused (mode {})", c,
                 static_cast<int>(m.mode_));
    out.push_back(static_cast<char>(c));
  };
  while (!m.complete()) {
    switch (m.mode_) {
      case Mode::kStart: push('{'); break;
      case Mode::kObjectOpen: push('}'); break;
      case Mode::kObjectKey: push('"'); break;  // then kString: '"' again, ':', '0', ...
      case Mode::kColon: push(':'); break;
      case Mode::kValue: push('0'); break;
      case Mode::kArrayOpen: push(']'); break;
      case Mode::kString: push('"'); break;
      case Mode::kUtf8: push(m.utf8_lo_); break;
      case Mode::kEscape: push('n'); break;
      case Mode::kHex:
        // A pending low surrogate needs D then C-F; anything else takes '0', which can
        // never start a surrogate (D8 high waits for its pair in kLowBackslash).
        push(m.low_surrogate_ && m.aux_ == 0 ? 'D' : m.low_surrogate_ && m.aux_ == 1 ? 'C' : '0');
        break;
      case Mode::kLowBackslash: push('\\'); break;
      case Mode::kLowU: push('u'); break;
      case Mode::kNumMinus:
      case Mode::kNumDot:
      case Mode::kNumExp:
      case Mode::kNumExpSign:
        push('0');
        break;
      case Mode::kLiteral: push(static_cast<uint8_t>(kLiterals[m.literal_][m.aux_])); break;
      case Mode::kNumZero:
      case Mode::kNumInt:
      case Mode::kNumFrac:
      case Mode::kNumExpDigits:
      case Mode::kAfterValue:
        push(m.top_is_array() ? ']' : '}');
        break;
      case Mode::kDone: break;
    }
  }
  return out;
}

}  // namespace dspark
