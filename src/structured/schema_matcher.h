// Byte-level incremental acceptor for JSON text that validates against a compiled JSON
// Schema (json_schema.h), the grammar behind OpenAI's `response_format: {"type":
// "json_schema"}`. The same contract as JsonMatcher (json_matcher.h): advance(b) succeeds
// exactly when the text read so far plus b is a prefix of some text in L, and complete()
// says whether the text is in L, where
//
//   L = optional whitespace, then one JSON value valid under the schema (restricted as
//       below), and nothing after it (the engine ends the request with EOS there).
//
// Restrictions, which only remove texts:
//   - the strings, numbers and escapes of JsonMatcher, lexed by the same JsonScalarLexer
//     (json_lexer.h: well-formed UTF-8, paired surrogate escapes, no raw control bytes);
//     "integer" numbers have no fraction or exponent; enum/const values and property
//     names are written exactly as the schema stores them (json_schema.h);
//   - a tagged union of objects (json_schema.h) is decided by its tag's value, which
//     comes first;
//   - object properties come in the schema's declared order, each at most once, only
//     declared ones (maps excepted); when choosing the next key, at most 64 properties
//     from the first one that may come are candidates (the skippable optional ones, then
//     the next required one);
//   - at most CompiledJsonSchema::kMaxDepth (32) open containers; a container or optional
//     property is only started when its shortest completion fits in that depth;
//   - runs of whitespace between tokens at most max_whitespace_run (default 16) bytes.
//
// No dead ends: every state that is not complete() accepts at least one byte (a required
// property always fits, since the enclosing object was only opened when its required
// chain did; a string at maxLength takes its closing quote; an array at minItems takes
// ']'), and completion() names bytes that lead to complete(). Termination: whitespace and
// depth are bounded and every other byte extends a string, a number or the value's
// structure, so only strings and numbers without maxLength can grow without bound.
//
// A SchemaMatcher is a small value with no heap (~180 bytes: a fixed stack of (node,
// counter) frames and the state of the innermost scalar) pointing into the compiled
// schema, which must outlive it. Copy it freely, e.g. per level of a vocabulary trie walk.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "structured/json_lexer.h"
#include "structured/json_schema.h"

namespace dspark {

class SchemaMatcher {
 public:
  static constexpr int32_t kMaxDepth = CompiledJsonSchema::kMaxDepth;

  SchemaMatcher() = default;  // no schema: accepts nothing; only a target for assignment
  // max_whitespace_run in [0, 255].
  explicit SchemaMatcher(const CompiledJsonSchema& schema, int32_t max_whitespace_run = 16);

  // Reads one byte; false, unchanged, when the text plus the byte leaves L's prefixes.
  bool advance(uint8_t byte);
  // All or nothing.
  bool advance(std::string_view bytes);
  // advance(byte) into next (garbage on false), saving a copy in trie walks.
  bool advance_to(uint8_t byte, SchemaMatcher& next) const {
    next = *this;
    return next.step(byte);
  }

  bool complete() const { return mode_ == Mode::kDone; }
  bool can_end() const { return complete(); }  // the output may end (EOS) only once complete
  // Inside a string whose characters are unconstrained (no maxLength, not an enum value or
  // a declared property name), between characters: every "plain" token (token_mask.h)
  // stays inside it, exactly as inside a JsonMatcher string.
  bool in_plain_string() const;
  int32_t depth() const { return depth_; }

  // Bytes that complete the value from here (short, not necessarily shortest).
  // advance(completion()) always succeeds and leaves complete().
  std::string completion() const;

  bool operator==(const SchemaMatcher& other) const;  // same schema and same state

 private:
  enum class Mode : uint8_t {
    kStart,         // before the root value
    kValue,         // a value of node value_node_
    kArrayOpen,     // after '[': an item or ']'
    kObjectOpen,    // after '{': a key or '}'
    kObjectKey,     // after ',' in an object: a key
    kKey,           // inside a declared property name: key_live_ candidates, pos_ bytes read
    kColon,         // after a key: ':' (the value's node is value_node_)
    kAfterValue,    // ',' or the innermost container's close
    kScalar,        // inside a string or number, read by lexer_ (in_key_: a map key string;
                    // str_count_ characters so far)
    kLiteral,       // inside an enum/const/true/false/null: literals [lit_lo_, lit_hi_), pos_ read
    kDone,
  };

  bool step(uint8_t c);
  bool structural(uint8_t c);
  bool value_start(uint8_t c);
  bool key_start();
  uint32_t key_base() const;        // the first property that may come next (or props_end)
  uint64_t key_candidates() const;  // bits: properties key_base() + i that may come next
  bool can_close_object() const;
  bool item_fits() const;
  bool key_byte(uint8_t c);
  bool scalar_byte(uint8_t c);
  bool literal_byte(uint8_t c);
  void literal_maybe_end();
  void choose_variant();
  bool push(int32_t node, bool is_array);
  bool close(bool is_array);
  void end_value();
  uint8_t completion_byte() const;
  uint8_t value_completion_byte(int32_t node) const;

  const SchemaNode& node(int32_t index) const { return schema_->nodes[index]; }
  int32_t top() const { return depth_ - 1; }
  bool top_is_array() const { return ((array_bits_ >> top()) & 1) != 0; }
  bool fits(int32_t needed) const { return depth_ + needed <= kMaxDepth; }

  const CompiledJsonSchema* schema_ = nullptr;
  // Open containers, outermost first; only [0, depth_) is meaningful (left uninitialised
  // so that the 256-level arrays of a trie walk are cheap to create).
  std::array<uint16_t, kMaxDepth> frame_node_;     // the container's schema node
  std::array<uint16_t, kMaxDepth> frame_count_;    // arrays: items started (saturating);
                                                   // objects: properties consumed (cursor)
  uint32_t array_bits_ = 0;    // bit d: the container at depth d+1 is an array
  uint64_t key_live_ = 0;      // kKey: bit i = property cursor + i still matches
  uint32_t str_count_ = 0;     // kScalar in a string: characters so far (saturating)
  uint32_t lit_lo_ = 0;        // kLiteral: the candidate literals
  uint32_t lit_hi_ = 0;
  uint16_t pos_ = 0;           // kKey / kLiteral: bytes of the name / literal read
  uint16_t value_node_ = 0;    // the node of the pending value or of the open scalar
  JsonScalarLexer lexer_;      // kScalar: the open string or number
  Mode mode_ = Mode::kDone;
  uint8_t depth_ = 0;
  uint8_t ws_run_ = 0;
  bool in_key_ = false;
  uint8_t max_whitespace_run_ = 16;
};

}  // namespace dspark
