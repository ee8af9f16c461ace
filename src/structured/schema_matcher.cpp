#include "structured/schema_matcher.h"

#include <bit>
#include <limits>

#include "core/check.h"

namespace dspark {

namespace {

bool is_whitespace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
// A number literal ends only at a byte that cannot extend it; other literals end at their
// last byte (no JSON string, true, false or null is a proper prefix of another value).
bool is_number_text(const std::string& text) {
  return !text.empty() && JsonScalarLexer::starts_number(static_cast<uint8_t>(text[0]));
}

template <class T>
void bump(T& counter) {
  if (counter != std::numeric_limits<T>::max()) ++counter;
}

}  // namespace

SchemaMatcher::SchemaMatcher(const CompiledJsonSchema& schema, int32_t max_whitespace_run)
    : schema_(&schema) {
  DSPARK_CHECK(max_whitespace_run >= 0 && max_whitespace_run <= 255,
               "SchemaMatcher: max_whitespace_run must be in [0, 255], got {}", max_whitespace_run);
  DSPARK_CHECK(schema.root >= 0 && static_cast<size_t>(schema.root) < schema.nodes.size(),
               "SchemaMatcher: root node {} of {}", schema.root, schema.nodes.size());
  max_whitespace_run_ = static_cast<uint8_t>(max_whitespace_run);
  mode_ = Mode::kStart;
  value_node_ = static_cast<uint16_t>(schema.root);
}

bool SchemaMatcher::operator==(const SchemaMatcher& o) const {
  if (schema_ != o.schema_ || mode_ != o.mode_ || depth_ != o.depth_ || array_bits_ != o.array_bits_ ||
      key_live_ != o.key_live_ || str_count_ != o.str_count_ || lit_lo_ != o.lit_lo_ ||
      lit_hi_ != o.lit_hi_ || pos_ != o.pos_ || value_node_ != o.value_node_ ||
      lexer_ != o.lexer_ || ws_run_ != o.ws_run_ || in_key_ != o.in_key_ ||
      max_whitespace_run_ != o.max_whitespace_run_) {
    return false;
  }
  for (int32_t d = 0; d < depth_; ++d) {
    if (frame_node_[d] != o.frame_node_[d] || frame_count_[d] != o.frame_count_[d]) return false;
  }
  return true;
}

bool SchemaMatcher::advance(uint8_t byte) {
  SchemaMatcher next = *this;  // step() may fail half-way; a copy is cheaper than undoing
  if (!next.step(byte)) return false;
  *this = next;
  return true;
}

bool SchemaMatcher::advance(std::string_view bytes) {
  SchemaMatcher next = *this;
  for (const char c : bytes) {
    if (!next.step(static_cast<uint8_t>(c))) return false;
  }
  *this = next;
  return true;
}

bool SchemaMatcher::in_plain_string() const {
  return mode_ == Mode::kScalar && lexer_.between_chars() &&
         (in_key_ || node(value_node_).max_length == SchemaNode::kUnbounded);
}

bool SchemaMatcher::step(uint8_t c) {
  switch (mode_) {
    case Mode::kScalar:
      return scalar_byte(c);
    case Mode::kKey:
      return key_byte(c);
    case Mode::kLiteral:
      return literal_byte(c);
    case Mode::kDone:
      return false;
    default:
      return structural(c);
  }
}

bool SchemaMatcher::structural(uint8_t c) {
  if (schema_ == nullptr) return false;
  if (is_whitespace(c)) {
    if (ws_run_ >= max_whitespace_run_) return false;
    ++ws_run_;
    return true;
  }
  ws_run_ = 0;
  switch (mode_) {
    case Mode::kStart:
    case Mode::kValue:
      return value_start(c);
    case Mode::kArrayOpen:
      if (c == ']') return close(true);
      if (!item_fits()) return false;
      bump(frame_count_[top()]);
      value_node_ = static_cast<uint16_t>(node(frame_node_[top()]).items);
      return value_start(c);
    case Mode::kObjectOpen:
      if (c == '}') return close(false);
      [[fallthrough]];
    case Mode::kObjectKey:
      return c == '"' && key_start();
    case Mode::kColon:
      if (c != ':') return false;
      mode_ = Mode::kValue;
      return true;
    case Mode::kAfterValue:
      if (top_is_array()) {
        if (c == ']') return close(true);
        if (c != ',' || !item_fits()) return false;
        bump(frame_count_[top()]);
        value_node_ = static_cast<uint16_t>(node(frame_node_[top()]).items);
        mode_ = Mode::kValue;
        return true;
      }
      if (c == '}') return close(false);
      if (c != ',') return false;
      if (node(frame_node_[top()]).map ? !item_fits() : key_candidates() == 0) return false;
      mode_ = Mode::kObjectKey;
      return true;
    default:
      return false;
  }
}

// The first byte decides the alternative: the compiler left at most one per kind of value,
// and enum values only for first bytes no typed alternative takes.
bool SchemaMatcher::value_start(uint8_t c) {
  const SchemaNode& n = node(value_node_);
  switch (c) {
    case '"':
      if (!(n.kinds & SchemaNode::kString)) break;
      mode_ = Mode::kScalar;
      lexer_.start_string();
      in_key_ = false;
      str_count_ = 0;
      return true;
    case '{':
      if (!(n.kinds & SchemaNode::kObject) || !fits(n.object_depth)) break;
      return push(value_node_, false);
    case '[':
      if (!(n.kinds & SchemaNode::kArray) || !fits(n.array_depth)) break;
      return push(value_node_, true);
    default:
      if (JsonScalarLexer::starts_number(c) &&
          (n.kinds & (SchemaNode::kInteger | SchemaNode::kNumber))) {
        mode_ = Mode::kScalar;
        lexer_.start_number(c);
        return true;
      }
      break;
  }
  const auto& lits = schema_->literals;
  uint32_t lo = n.literals_begin;
  while (lo < n.literals_end && static_cast<uint8_t>(lits[lo][0]) != c) ++lo;
  if (lo == n.literals_end) return false;
  uint32_t hi = lo;
  while (hi < n.literals_end && static_cast<uint8_t>(lits[hi][0]) == c) ++hi;
  lit_lo_ = lo;
  lit_hi_ = hi;
  pos_ = 1;
  mode_ = Mode::kLiteral;
  literal_maybe_end();
  return true;
}

bool SchemaMatcher::push(int32_t node_index, bool is_array) {
  if (depth_ >= kMaxDepth) return false;
  frame_node_[depth_] = static_cast<uint16_t>(node_index);
  frame_count_[depth_] = 0;
  const uint32_t bit = uint32_t{1} << depth_;
  array_bits_ = is_array ? (array_bits_ | bit) : (array_bits_ & ~bit);
  ++depth_;
  mode_ = is_array ? Mode::kArrayOpen : Mode::kObjectOpen;
  return true;
}

bool SchemaMatcher::close(bool is_array) {
  if (depth_ == 0 || top_is_array() != is_array) return false;
  if (is_array) {
    if (frame_count_[top()] < node(frame_node_[top()]).min_items) return false;
  } else if (!can_close_object()) {
    return false;
  }
  --depth_;
  end_value();
  return true;
}

void SchemaMatcher::end_value() {
  mode_ = depth_ == 0 ? Mode::kDone : Mode::kAfterValue;
  ws_run_ = 0;
}

// The next array item (arrays) or map value (maps) may start here.
bool SchemaMatcher::item_fits() const {
  const SchemaNode& n = node(frame_node_[top()]);
  if (top_is_array()) return frame_count_[top()] < n.max_items && fits(node(n.items).min_depth);
  return fits(node(n.additional).min_depth);
}

// Optional properties that do not fit at this depth can never be chosen here (the depth
// of this object does not change), so the candidates start at the first one that fits;
// the next required property always does (the object was opened only if it fits).
uint32_t SchemaMatcher::key_base() const {
  const SchemaNode& n = node(frame_node_[top()]);
  uint32_t base = n.props_begin + frame_count_[top()];
  while (base < n.props_end && !schema_->properties[base].required &&
         !fits(node(schema_->properties[base].node).min_depth)) {
    ++base;
  }
  return base;
}

uint64_t SchemaMatcher::key_candidates() const {
  const SchemaNode& n = node(frame_node_[top()]);
  const uint32_t base = key_base();
  uint64_t bits = 0;
  for (uint32_t i = 0; i < 64 && base + i < n.props_end; ++i) {
    const SchemaProperty& p = schema_->properties[base + i];
    if (fits(node(p.node).min_depth)) bits |= uint64_t{1} << i;
    if (p.required) break;  // nothing after a required property may come before it
  }
  return bits;
}

bool SchemaMatcher::can_close_object() const {
  const SchemaNode& n = node(frame_node_[top()]);
  if (n.map) return true;
  const uint32_t cursor = n.props_begin + frame_count_[top()];
  return cursor >= n.props_end || schema_->properties[cursor].next_required == n.props_end;
}

bool SchemaMatcher::key_start() {
  if (node(frame_node_[top()]).map) {
    if (!item_fits()) return false;
    mode_ = Mode::kScalar;
    lexer_.start_string();
    in_key_ = true;
    str_count_ = 0;
    return true;
  }
  key_live_ = key_candidates();
  if (key_live_ == 0) return false;
  frame_count_[top()] = static_cast<uint16_t>(key_base() - node(frame_node_[top()]).props_begin);
  pos_ = 0;
  mode_ = Mode::kKey;
  return true;
}

// Names are compared in their written (escaped) form. A candidate continuing with '"' has
// a backslash before it, which no complete name ends with, so continuing is tried first.
bool SchemaMatcher::key_byte(uint8_t c) {
  const SchemaNode& n = node(frame_node_[top()]);
  const uint32_t base = n.props_begin + frame_count_[top()];
  uint64_t next = 0;
  for (uint64_t live = key_live_; live != 0; live &= live - 1) {
    const int i = std::countr_zero(live);
    const std::string& name = schema_->properties[base + i].name;
    if (name.size() > pos_ && static_cast<uint8_t>(name[pos_]) == c) next |= uint64_t{1} << i;
  }
  if (next != 0) {
    key_live_ = next;
    ++pos_;
    return true;
  }
  if (c != '"') return false;
  for (uint64_t live = key_live_; live != 0; live &= live - 1) {
    const int i = std::countr_zero(live);
    const SchemaProperty& p = schema_->properties[base + i];
    if (p.name.size() == pos_) {
      frame_count_[top()] = static_cast<uint16_t>(frame_count_[top()] + i + 1);
      value_node_ = static_cast<uint16_t>(p.node);
      mode_ = Mode::kColon;
      ws_run_ = 0;
      return true;
    }
  }
  return false;
}

bool SchemaMatcher::scalar_byte(uint8_t c) {
  const SchemaNode& n = node(value_node_);  // in a map key, not the key's node: unused
  if (lexer_.between_chars()) {
    // c closes the string or starts a character: where the length limits apply (to value
    // strings; map keys have none). Counting a byte that the lexer then refuses is
    // harmless: a refused step leaves *this garbage anyway.
    if (c == '"') {
      if (!in_key_ && str_count_ < n.min_length) return false;
    } else {
      if (!in_key_ && str_count_ >= n.max_length) return false;  // only the closing quote fits
      bump(str_count_);
    }
  }
  const bool integer_only = (n.kinds & SchemaNode::kNumber) == 0;  // read only in a number
  switch (lexer_.step(c, integer_only)) {
    case LexStep::kRejected:
      return false;
    case LexStep::kContinue:
      return true;
    case LexStep::kEnded:  // a string's closing quote
      if (in_key_) {
        value_node_ = static_cast<uint16_t>(node(frame_node_[top()]).additional);
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

// Candidates share their first pos_ bytes and are sorted, so those continuing with c are
// contiguous, after the one (if any) that ends here.
bool SchemaMatcher::literal_byte(uint8_t c) {
  const auto& lits = schema_->literals;
  uint32_t lo = lit_lo_;
  const bool ends_here = lits[lo].size() == pos_;
  if (ends_here) ++lo;
  while (lo < lit_hi_ && static_cast<uint8_t>(lits[lo][pos_]) != c) ++lo;
  if (lo < lit_hi_) {
    uint32_t hi = lo;
    while (hi < lit_hi_ && static_cast<uint8_t>(lits[hi][pos_]) == c) ++hi;
    lit_lo_ = lo;
    lit_hi_ = hi;
    ++pos_;
    literal_maybe_end();
    return true;
  }
  if (!ends_here) return false;
  end_value();  // a complete number: c is the byte after it
  return structural(c);
}

void SchemaMatcher::literal_maybe_end() {
  const std::string& first = schema_->literals[lit_lo_];
  if (first.size() != pos_ || is_number_text(first)) return;
  if (depth_ > 0 && !top_is_array()) choose_variant();
  end_value();
}

// A tagged union's only property is its tag (string literals, which end at their quote,
// so the literal read is lit_lo_): the object goes on as the alternative that tag selects,
// its cursor (1) past that alternative's own tag property.
void SchemaMatcher::choose_variant() {
  const SchemaNode& object = node(frame_node_[top()]);
  if (object.variants_end == object.variants_begin) return;
  const uint32_t i = lit_lo_ - node(value_node_).literals_begin;
  frame_node_[top()] = static_cast<uint16_t>(schema_->variant_nodes[object.variants_begin + i]);
}

uint8_t SchemaMatcher::value_completion_byte(int32_t node_index) const {
  const SchemaNode& n = node(node_index);
  if (n.literals_end > n.literals_begin) return static_cast<uint8_t>(schema_->literals[n.literals_begin][0]);
  if (n.kinds & SchemaNode::kString) return '"';
  if (n.kinds & (SchemaNode::kInteger | SchemaNode::kNumber)) return '0';
  const bool object = (n.kinds & SchemaNode::kObject) && fits(n.object_depth);
  const bool array = (n.kinds & SchemaNode::kArray) && fits(n.array_depth);
  if (object && (!array || n.object_depth <= n.array_depth)) return '{';
  DSPARK_CHECK(array, "SchemaMatcher::completion: node {} has no value that fits", node_index);
  return '[';
}

uint8_t SchemaMatcher::completion_byte() const {
  auto after_value = [&] {
    SchemaMatcher m = *this;
    m.end_value();
    return m.completion_byte();
  };
  switch (mode_) {
    case Mode::kStart:
    case Mode::kValue:
      return value_completion_byte(value_node_);
    case Mode::kArrayOpen:
    case Mode::kAfterValue:
      if (top_is_array()) {
        const SchemaNode& n = node(frame_node_[top()]);
        if (frame_count_[top()] >= n.min_items) return ']';
        return mode_ == Mode::kAfterValue ? ',' : value_completion_byte(n.items);
      }
      return can_close_object() ? '}' : ',';
    case Mode::kObjectOpen:
      return can_close_object() ? '}' : '"';
    case Mode::kObjectKey:
      return '"';
    case Mode::kKey: {
      // The last candidate: the next required property when there is one.
      const int i = std::bit_width(key_live_) - 1;
      const SchemaNode& n = node(frame_node_[top()]);
      const std::string& name = schema_->properties[n.props_begin + frame_count_[top()] + i].name;
      return pos_ < name.size() ? static_cast<uint8_t>(name[pos_]) : '"';
    }
    case Mode::kColon:
      return ':';
    case Mode::kScalar: {
      if (lexer_.between_chars() && !in_key_ && str_count_ < node(value_node_).min_length) return 'a';
      const uint8_t c = lexer_.completion_byte();  // 0: a complete number
      return c != 0 ? c : after_value();
    }
    case Mode::kLiteral: {
      const std::string& first = schema_->literals[lit_lo_];
      return pos_ < first.size() ? static_cast<uint8_t>(first[pos_]) : after_value();
    }
    case Mode::kDone:
      break;
  }
  DSPARK_FAIL("SchemaMatcher::completion: nothing completes a complete value");
}

std::string SchemaMatcher::completion() const {
  std::string out;
  SchemaMatcher m = *this;
  while (!m.complete()) {
    const uint8_t c = m.completion_byte();
    const bool ok = m.step(c);
    DSPARK_CHECK(ok, "SchemaMatcher::completion: byte 0x{:02X} refused (mode {})", c, static_cast<int>(m.mode_));
    out.push_back(static_cast<char>(c));
  }
  return out;
}

}  // namespace dspark
