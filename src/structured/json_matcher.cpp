#include "structured/json_matcher.h"

#include "core/check.h"

namespace dspark {

namespace {

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

bool is_whitespace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

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
    case Mode::kScalar:
      return scalar_byte(c);
    case Mode::kLiteral: {
      const std::string_view literal = kLiterals[literal_];
      if (c != static_cast<uint8_t>(literal[literal_pos_])) return false;
      if (++literal_pos_ == static_cast<uint8_t>(literal.size())) end_value();
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
      mode_ = Mode::kScalar;
      lexer_.start_string();
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
      mode_ = Mode::kScalar;
      lexer_.start_string();
      in_key_ = false;
      return true;
    case '{':
      return open(false);
    case '[':
      return open(true);
    case 't':
    case 'f':
    case 'n':
      mode_ = Mode::kLiteral;
      literal_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
      literal_pos_ = 1;
      return true;
    default:
      if (!JsonScalarLexer::starts_number(c)) return false;
      mode_ = Mode::kScalar;
      lexer_.start_number(c);
      return true;
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

bool JsonMatcher::scalar_byte(uint8_t c) {
  switch (lexer_.step(c)) {
    case LexStep::kRejected:
      return false;
    case LexStep::kContinue:
      return true;
    case LexStep::kEnded:  // a string's closing quote
      if (in_key_) {
        mode_ = Mode::kColon;
        ws_run_ = 0;
      } else {
        end_value();
      }
      return true;
    case LexStep::kEndedBefore:  // a complete number: c is the byte after the value
      end_value();
      return structural(c);
  }
  return false;
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
      case Mode::kObjectKey: push('"'); break;  // then kScalar: '"' again, ':', '0', ...
      case Mode::kColon: push(':'); break;
      case Mode::kValue: push('0'); break;
      case Mode::kArrayOpen: push(']'); break;
      case Mode::kScalar: {
        const uint8_t c = m.lexer_.completion_byte();  // 0: a complete number
        push(c != 0 ? c : static_cast<uint8_t>(m.top_is_array() ? ']' : '}'));
        break;
      }
      case Mode::kLiteral: push(static_cast<uint8_t>(kLiterals[m.literal_][m.literal_pos_])); break;
      case Mode::kAfterValue:
        push(m.top_is_array() ? ']' : '}');
        break;
      case Mode::kDone: break;
    }
  }
  return out;
}

}  // namespace dspark
