// compile_json_schema: every unsupported construct and every malformed schema is an
// invalid-request Error whose message names the construct and its JSON pointer; the
// supported forms compile (including what pydantic and zod emit).
#include "structured/json_schema.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "structured/schema_samples.h"

namespace dspark {
namespace {

// The error's message, or "" when the schema compiles.
std::string compile_error(const std::string& text) {
  try {
    compile_json_schema_text(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidRequest) << text;
    return e.message();
  }
  return "";
}

TEST(JsonSchema, SamplesCompile) {
  for (const auto& s : test::sample_schemas()) {
    EXPECT_EQ(compile_error(s.text), "") << s.name;
  }
}

TEST(JsonSchema, UnsupportedAndInvalidSchemasNameTheConstructAndItsPath) {
  struct Bad {
    const char* schema;
    std::vector<const char*> words;  // all must appear in the message
  };
  const std::vector<Bad> cases = {
      {R"({"type": "object", "properties": {"id": {"type": "string", "pattern": "^a"}}})",
       {"'pattern'", "/properties/id/pattern", "not supported"}},
      {R"({"type": "string", "format": "date-time"})", {"'format'", "/format"}},
      {R"({"type": "object", "patternProperties": {"a": {}}})", {"'patternProperties'"}},
      {R"({"not": {"type": "null"}})", {"'not'"}},
      {R"({"if": {}, "then": {}, "else": {}})", {"'if'"}},
      {R"({"type": "integer", "minimum": 0})", {"'minimum'"}},
      {R"({"type": "array", "uniqueItems": true})", {"'uniqueItems'"}},
      {R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})", {"'allOf'", "exactly one"}},
      {R"({"$ref": "https://example.com/s.json"})", {"'$ref'", "local", "/$ref"}},
      {R"({"$ref": "#/$defs/missing"})", {"does not resolve", "#/$defs/missing"}},
      {R"({"type": "strng"})", {"unknown type", "strng", "/type"}},
      {R"({"type": []})", {"'type'"}},
      {R"({"type": 3})", {"'type'"}},
      {R"({"enum": []})", {"'enum'", "non-empty", "/enum"}},
      {R"({"enum": [{"a": 1}]})", {"objects or arrays", "/enum/0"}},
      {R"({"type": "integer", "enum": ["a"]})", {"'type'", "/enum"}},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", {"\"b\"", "/required/0"}},
      {R"({"type": "object", "required": "a"})", {"'required'", "/required"}},
      {R"({"type": "object", "properties": []})", {"'properties'"}},
      {R"({"type": "object", "additionalProperties": 1})", {"'additionalProperties'"}},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", {"minLength"}},
      {R"({"type": "string", "minLength": -1})", {"minLength"}},
      {R"({"type": "array", "minItems": 3, "maxItems": 1})", {"minItems"}},
      {R"({"type": "array", "items": [{"type": "string"}]})", {"tuple", "/items"}},
      {R"({"anyOf": []})", {"'anyOf'", "/anyOf"}},
      {R"({"type": "object", "properties": {"a": {"anyOf": [{"type": "object"}, {"type": "object", "properties": {"b": {}}}]}}})",
       {"tagged union", "declares no properties", "/properties/a/anyOf"}},
      {R"({"anyOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"u": {"const": "b"}}, "required": ["u"]}]})",
       {"tagged union", "\"t\" and \"u\" differ"}},
      {R"({"anyOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}}]})",
       {"tagged union", "not required"}},
      {R"({"anyOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]}, {"properties": {"t": {"type": "string"}}, "required": ["t"]}]})",
       {"tagged union", "not a const or enum"}},
      {R"({"anyOf": [{"properties": {"t": {"const": 1}}, "required": ["t"]}, {"properties": {"t": {"const": 2}}, "required": ["t"]}]})",
       {"tagged union", "not a string"}},
      {R"({"anyOf": [{"properties": {"t": {"enum": ["a", "b"]}}, "required": ["t"]}, {"properties": {"t": {"const": "b"}}, "required": ["t"]}]})",
       {"tagged union", "\"b\" is in two alternatives"}},
      {R"({"anyOf": [{"type": "array"}, {"type": "array"}]})", {"more than one array"}},
      {R"({"anyOf": [{"type": "string", "maxLength": 1}, {"type": "string"}]})", {"minLength/maxLength"}},
      {R"({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"const": 1.5}]}}})", {"1.5", "integer"}},
      {R"({"type": "string", "$ref": "#"})", {"'type' beside '$ref'"}},
      {R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})", {"refers to itself"}},
      {R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"})", {"refers back"}},
      {R"({"type": "object", "properties": {"me": {"$ref": "#"}}, "required": ["me"]})", {"no value nested"}},
      {R"({"type": "integer"})", {"top-level number"}},
      {R"({"enum": ["a", 1]})", {"top-level number"}},
      {R"(false)", {"'false'"}},
      {R"({"type": "object", "properties": {"a": false}})", {"'false'", "/properties/a"}},
      {R"({"type": "object", "properties": {"a~b/c": {"type": "string", "foo": 1}}})", {"'foo'", "/properties/a~0b~1c/foo"}},
      {R"([1, 2])", {"must be an object"}},
      {R"({"type": )", {"not JSON"}},
      {R"({"nullable": "yes"})", {"'nullable'"}},
  };
  for (const Bad& b : cases) {
    const std::string message = compile_error(b.schema);
    EXPECT_NE(message, "") << b.schema;
    for (const char* word : b.words) EXPECT_NE(message.find(word), std::string::npos) << word << " in: " << message;
  }
}

TEST(JsonSchema, PydanticAndZodStyleSchemasCompile) {
  // pydantic v2: Optional via anyOf + null, $defs refs, titles, defaults, discriminator.
  EXPECT_EQ(compile_error(R"({
    "$defs": {"Pet": {"properties": {"kind": {"const": "cat", "title": "Kind"}, "lives": {"type": "integer"}},
                      "required": ["kind", "lives"], "title": "Pet", "type": "object"}},
    "properties": {"name": {"title": "Name", "type": "string"},
                   "pet": {"anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}], "default": null},
                   "color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
                   "nick": {"allOf": [{"$ref": "#/$defs/Pet"}], "description": "x"}},
    "required": ["name"], "title": "Owner", "type": "object"})"), "");
  // zod-to-json-schema / OpenAI strict: additionalProperties false, $schema, definitions.
  EXPECT_EQ(compile_error(R"({
    "$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
    "properties": {"steps": {"type": "array", "items": {"$ref": "#/definitions/step"}}},
    "required": ["steps"], "additionalProperties": false,
    "definitions": {"step": {"type": "object", "properties": {"explanation": {"type": "string"},
                    "output": {"type": "string"}}, "required": ["explanation", "output"],
                    "additionalProperties": false}}})"), "");
}

TEST(JsonSchema, CompiledShape) {
  const auto s = compile_json_schema_text(R"({"type": "object", "properties": {"b": {"type": "string"},
      "a": {"type": ["integer", "null"]}}, "required": ["a"]})");
  const SchemaNode& root = s->nodes[s->root];
  EXPECT_EQ(root.kinds, SchemaNode::kObject);
  EXPECT_FALSE(root.map);
  ASSERT_EQ(root.props_end - root.props_begin, 2u);
  EXPECT_EQ(s->properties[root.props_begin].name, "b");  // declared order, not sorted
  EXPECT_FALSE(s->properties[root.props_begin].required);
  EXPECT_EQ(s->properties[root.props_begin].next_required, root.props_begin + 1);
  const SchemaNode& a = s->nodes[s->properties[root.props_begin + 1].node];
  EXPECT_EQ(a.kinds, SchemaNode::kInteger);
  ASSERT_EQ(a.literals_end - a.literals_begin, 1u);
  EXPECT_EQ(s->literals[a.literals_begin], "null");
  EXPECT_EQ(root.min_depth, 1);
}

}  // namespace
}  // namespace dspark
