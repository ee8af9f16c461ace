// Byte-level incremental acceptor for one JSON object (RFC 8259), the grammar behind
// OpenAI's `response_format: {"type": "json_object"}`.
//
// A JsonMatcher has read some bytes t. It accepts a byte b exactly when t+b is a prefix
// of some text in the language L below, and complete() says whether t itself is in L:
//
//   L = optional whitespace, then one JSON object (the top-level value must be an object),
//       and nothing after its closing brace (not even whitespace: once complete, the
//       only thing left to generate is EOS, and the engine ends the request there);
//
// with three deliberate restrictions of RFC 8259, all of which only remove texts:
//   - nesting depth (objects and arrays, the top-level object counting as 1) is at most
//     options.max_depth (<= 64, so that the container stack is one 64-bit word);
//   - a run of consecutive whitespace bytes (space, \t, \n, \r) is at most
//     options.max_whitespace_run long. Whitespace is always optional, so this only stops
//     a model from emitting whitespace forever; the default 16 still lets a newline plus
//     indentation through for pretty-printed output up to depth 7 at 2 spaces per level
//     (or 3 at 4 spaces);
//   - \u escapes of UTF-16 surrogates must form a pair (a high \uD800-\uDBFF followed by
//     a low \uDC00-\uDFFF escape): RFC 8259 admits lone surrogates syntactically, but
//     strict parsers (nlohmann::json, serde_json, Go) reject them, and the point is text
//     every client can parse.
// Strings and numbers are lexed by JsonScalarLexer (json_lexer.h): escapes \" \\ \/ \b
// \f \n \r \t \uXXXX; raw bytes < 0x20 refused; bytes >= 0x80 must form well-formed
// UTF-8, checked byte by byte, so a prefix ending inside a character is accepted while the
// character can still be completed. Numbers follow
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; a number ends only at the next byte
// that cannot extend it (',', '}', ']' or whitespace), which is then read as that byte.
// Magnitude is not limited (1e999 is accepted: RFC 8259 leaves range to implementations).
//
// No dead ends: every state that is not complete() accepts at least one byte, and
// completion() names bytes that lead to complete(). At max_depth only '{' and '[' are
// refused (scalars and closing still fit); at the whitespace limit, only whitespace.
//
// A JsonMatcher is a small value (24 bytes, no heap): copy it freely, e.g. to try a
// token's bytes, or to walk a trie of the vocabulary with one copy per level.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "structured/json_lexer.h"

namespace dspark {

struct JsonMatcherOptions {
  int32_t max_depth = 64;           // most nested objects/arrays, top level = 1; in [1, 64]
  int32_t max_whitespace_run = 16;  // most consecutive whitespace bytes; in [0, 255]

  void validate() const;  // throws Error naming the bad field
};

class JsonMatcher {
 public:
  static constexpr int32_t kMaxDepthLimit = 64;  // the stack is one uint64_t

  JsonMatcher() = default;  // default options
  explicit JsonMatcher(const JsonMatcherOptions& options);  // validates options

  // Reads one byte. Returns false when the text read so far plus this byte is not a
  // prefix of any text in L; the matcher is then unchanged (the byte is not consumed),
  // so a caller can try another. There is no dead state.
  bool advance(uint8_t byte);
  // Reads the bytes in order; all or nothing: on false the matcher is unchanged.
  bool advance(std::string_view bytes);
  // advance(byte) into next instead of *this, saving a copy: on true next is the state
  // after byte; on false next holds garbage. For walks that keep one state per trie level.
  bool advance_to(uint8_t byte, JsonMatcher& next) const {
    next = *this;
    return next.step(byte);
  }

  // The top-level object has been closed: no byte is accepted any more (only EOS).
  bool complete() const { return mode_ == Mode::kDone; }
  // The output may end here (EOS allowed): only once the object closed.
  bool can_end() const { return complete(); }
  // Inside a string, between characters (not in an escape or a multi-byte character).
  bool in_string() const { return mode_ == Mode::kScalar && lexer_.between_chars(); }
  // Where every "plain" token stays inside the string (token_mask.h): any string here.
  bool in_plain_string() const { return in_string(); }
  // Open containers now (0 before the first '{' and once complete).
  int32_t depth() const { return depth_; }

  // Bytes that complete the object from here (short, not necessarily shortest: open
  // strings are closed, pending escapes and UTF-8 characters finished, a value is "0",
  // every container closed). advance(completion()) always succeeds and leaves complete().
  std::string completion() const;

  bool operator==(const JsonMatcher&) const = default;

 private:
  enum class Mode : uint8_t {
    kStart,         // before the top-level '{' (whitespace allowed)
    kObjectOpen,    // after '{': a key or '}'
    kObjectKey,     // after ',' in an object: a key
    kColon,         // after a key: ':'
    kValue,         // after ':' or after ',' in an array: a value
    kArrayOpen,     // after '[': a value or ']'
    kAfterValue,    // after a value: ',' or the closing bracket of the innermost container
    kScalar,        // inside a string or number, read by lexer_ (in_key_: a key string)
    kLiteral,       // inside true/false/null: literal_ which, literal_pos_ bytes read
    kDone,          // the top-level object is closed
  };

  bool step(uint8_t c);  // advances in place; on false *this is garbage (advance restores)
  bool structural(uint8_t c);
  bool scalar_byte(uint8_t c);
  bool value_start(uint8_t c);
  bool open(bool is_array);
  bool close(bool is_array);
  void end_value();
  bool top_is_array() const { return ((array_bits_ >> (depth_ - 1)) & 1) != 0; }

  uint64_t array_bits_ = 0;  // bit d-1: the container at depth d is an array (else object)
  JsonScalarLexer lexer_;    // kScalar: the open string or number
  Mode mode_ = Mode::kStart;
  uint8_t depth_ = 0;        // open containers
  uint8_t ws_run_ = 0;       // whitespace bytes just read, in structural modes
  uint8_t literal_ = 0;      // kLiteral: 0 true, 1 false, 2 null
  uint8_t literal_pos_ = 0;  // kLiteral: bytes read
  bool in_key_ = false;      // the open string is an object key
  uint8_t max_depth_ = 64;            // JsonMatcherOptions' defaults (checked in the .cpp)
  uint8_t max_whitespace_run_ = 16;
};

}  // namespace dspark
