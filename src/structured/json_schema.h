// A JSON Schema compiled for constrained decoding (OpenAI's
// `response_format: {"type": "json_schema", ...}`): an immutable graph of value nodes that
// SchemaMatcher (schema_matcher.h) walks byte by byte. Built once per request by
// compile_json_schema(), shared by pointer, never changed after.
//
// Supported subset (anything else is an Error of kind kInvalidRequest whose message names
// the keyword and its JSON pointer in the schema, e.g. "json_schema: 'pattern' at
// /properties/id is not supported"):
//   - type: "object", "array", "string", "number", "integer", "boolean", "null", or an
//     array of them (a union; keywords apply to the kinds they concern). Without `type`,
//     the kinds are inferred from the keywords present (properties/required/
//     additionalProperties: object; items/minItems/maxItems: array; minLength/maxLength:
//     string); a schema with none of them (or `true`, or `{}`) is any JSON value.
//   - properties, required (each name must be a declared property), additionalProperties.
//     Properties are generated in the declared order, optional ones may be skipped, and
//     only declared properties are generated: with `properties` present,
//     additionalProperties true, absent or a schema behaves like false (extra keys are
//     allowed by the schema, never required, so the output still validates). An object
//     schema without `properties` is a map: any keys (free strings; duplicates are not
//     prevented), values of the additionalProperties schema (absent/true: any JSON value);
//     with additionalProperties false it is only `{}`.
//   - items (one schema; absent/true: any value), minItems, maxItems.
//   - minLength, maxLength on strings, counted in Unicode code points (an escape, a
//     UTF-8 character or a surrogate-pair escape is one).
//   - enum, const: JSON scalars (strings, numbers, booleans, null). The model must write
//     the value exactly as nlohmann::json serialises it (strings: the same escapes, raw
//     UTF-8; numbers: "1", "2.5"). With `type` beside them, values of other types are
//     dropped (an empty result is an error).
//   - anyOf, and oneOf read as anyOf (the compiled alternatives never overlap, so the two
//     agree on every output). Alternatives are merged into one node, which must decide
//     the alternative from the value's first byte: at most one array alternative; string
//     alternatives must agree on min/maxLength; integer + number is number; enum values
//     covered by a typed alternative must validate against it. Several object
//     alternatives form a tagged union: each must declare first a required property of
//     the same name whose values are string consts/enums, disjoint between alternatives
//     (e.g. {"name": {"const": "f"}, ...} per tool); the value written for it decides the
//     alternative for the rest of the object.
//   - allOf with exactly one schema (what pydantic emits to attach a description to a $ref).
//   - $ref to a local JSON pointer: "#", "#/$defs/Name", "#/definitions/Name" (any "#/..."
//     pointer). Recursion is allowed when it passes through an object or array; its depth
//     is bounded by SchemaMatcher::kMaxDepth (a schema that needs deeper nesting than that
//     for every value is an error).
//   - nullable: true (OpenAPI) adds null.
//   - ignored annotations: description, title, default, examples, $schema, $id, $comment,
//     $defs, definitions, readOnly, writeOnly, deprecated, discriminator.
// Refused: pattern, format, patternProperties, propertyNames, not, if/then/else, allOf of
// several schemas, minimum/maximum/exclusive*/multipleOf, uniqueItems, contains,
// prefixItems, tuple `items`, dependent*, unevaluated*, min/maxProperties, external or
// unresolvable $ref, a `false` schema, unknown keywords; wrong keyword types, unknown type
// names, empty enums/type lists/anyOf, min > max; a root that may be a number (a
// top-level number has no end before EOS); a schema with no finite value.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dspark {

struct SchemaNode {
  // Typed kinds; booleans, null and enum/const values are literals instead.
  enum Kind : uint8_t { kObject = 1, kArray = 2, kString = 4, kInteger = 8, kNumber = 16 };
  static constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
  static constexpr int32_t kNoValue = std::numeric_limits<int32_t>::max() / 4;  // depth "infinity"

  uint8_t kinds = 0;            // Kind bits (kNumber set means any number, integers included)
  // object
  bool map = false;             // keys are free strings with values `additional`
  uint32_t props_begin = 0;     // declared properties: properties[props_begin, props_end)
  uint32_t props_end = 0;
  int32_t additional = -1;      // map: the node of every value
  // array
  int32_t items = -1;
  uint32_t min_items = 0;
  uint32_t max_items = kUnbounded;
  // string
  uint32_t min_length = 0;
  uint32_t max_length = kUnbounded;
  // literals: literals[literals_begin, literals_end), sorted bytewise, exact JSON texts
  uint32_t literals_begin = 0;
  uint32_t literals_end = 0;
  // object, tagged union: the one declared property is the tag; once its value, the i-th
  // literal of its node, is read, the object goes on as variant_nodes[variants_begin + i]
  // (whose first property is that tag). Empty range: not a union.
  uint32_t variants_begin = 0;
  uint32_t variants_end = 0;
  // Open containers (this value's own included) its shortest value needs; kNoValue: none.
  int32_t min_depth = kNoValue;
  int32_t object_depth = kNoValue;  // ... when it is an object
  int32_t array_depth = kNoValue;   // ... when it is an array
};

struct SchemaProperty {
  std::string name;          // the key as written between the quotes (JSON-escaped)
  int32_t node = 0;          // the value's schema
  bool required = false;
  uint32_t next_required = 0;  // first required property at or after this one (props_end: none)
};

struct CompiledJsonSchema {
  static constexpr int32_t kAnyNode = 0;      // any JSON value (always present)
  static constexpr int32_t kMaxDepth = 32;    // open containers a SchemaMatcher tracks
  static constexpr size_t kMaxNodes = 65535;  // node ids fit the matcher's uint16_t frames

  std::vector<SchemaNode> nodes;            // [num_nodes]
  std::vector<SchemaProperty> properties;   // [num_properties] grouped by object, declared order
  std::vector<std::string> literals;        // [num_literals] grouped by node, sorted per node
  std::vector<int32_t> variant_nodes;       // [num_variants] grouped by tagged union (SchemaNode)
  int32_t root = kAnyNode;
};

// Throws Error (kInvalidRequest) naming the unsupported or invalid construct and its path.
std::shared_ptr<const CompiledJsonSchema> compile_json_schema(const nlohmann::ordered_json& schema);
// The same from JSON text (key order kept); a parse error is an Error too.
std::shared_ptr<const CompiledJsonSchema> compile_json_schema_text(std::string_view schema_text);

}  // namespace dspark
