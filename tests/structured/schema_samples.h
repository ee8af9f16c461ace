// Test inputs for the JSON Schema constraint: schemas exercising each supported construct,
// and an oracle validator that reads the schema JSON directly (not the compiled graph),
// so that the matcher's outputs are checked against JSON Schema semantics independently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dspark::test {

struct SampleSchema {
  const char* name;
  const char* text;
};

inline const std::vector<SampleSchema>& sample_schemas() {
  static const std::vector<SampleSchema> schemas = {
      {"person", R"({
        "type": "object",
        "properties": {
          "name": {"type": "string", "minLength": 1, "maxLength": 8},
          "age": {"type": "integer", "description": "years"},
          "email": {"type": ["string", "null"]},
          "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
                   "minItems": 1, "maxItems": 3},
          "status": {"enum": ["active", "inactive", 1, 2.5, null, true]},
          "score": {"type": "number"}
        },
        "required": ["name", "age", "tags"],
        "additionalProperties": false})"},
      {"tree", R"({
        "$defs": {"node": {"type": "object",
                           "properties": {"value": {"type": "integer"},
                                          "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                           "required": ["value", "children"]}},
        "$ref": "#/$defs/node"})"},
      {"unions", R"({
        "type": "object",
        "properties": {
          "x": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"},
                          {"type": "array", "items": {"type": "boolean"}},
                          {"type": "object", "properties": {"k": {"const": "v"}}, "required": ["k"]}]},
          "y": {"oneOf": [{"const": "one"}, {"type": "number"}]},
          "z": {"allOf": [{"$ref": "#/definitions/flag"}], "description": "wrapped ref"},
          "w": {"type": "string", "nullable": true, "maxLength": 2}
        },
        "required": ["x", "y"],
        "definitions": {"flag": {"type": "boolean"}}})"},
      {"maps", R"({
        "type": "object",
        "properties": {"free": {"type": "object"},
                       "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                       "anything": {},
                       "list": {"type": "array"}},
        "required": ["free", "counts"]})"},
      {"root_array", R"({"type": "array", "maxItems": 2,
        "items": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}})"},
      {"root_enum", R"({"enum": ["x", "y\"z", "\u00e9t\u00e9"]})"},
      {"linked", R"({"type": "object", "properties": {"next": {"$ref": "#"}, "v": {"type": "null"}}})"},
      // What tool_choice "required" asks for: a list of calls, each object decided by its
      // tag ("get" is a prefix of the others' names but not of their JSON texts).
      {"tagged_union", R"({"type": "array", "minItems": 1, "maxItems": 3, "items": {"anyOf": [
        {"type": "object", "required": ["name", "arguments"], "properties": {"name": {"const": "get_weather"},
          "arguments": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 6},
                                                         "days": {"type": "integer"}}, "required": ["city"]}}},
        {"type": "object", "required": ["name", "arguments"], "properties": {"name": {"enum": ["get_time", "get_date"]},
          "arguments": {"type": "object", "properties": {"zone": {"enum": ["utc", "cet"]}}, "required": ["zone"],
                        "additionalProperties": false}}},
        {"type": "object", "required": ["name"], "properties": {"name": {"const": "get"},
          "arguments": {"$ref": "#/$defs/none"}}},
        {"type": "string", "maxLength": 2}], "description": "a call"},
        "$defs": {"none": {"type": "object", "additionalProperties": false}}})"},
      {"odd_keys", R"({"type": "object",
        "properties": {"a\"b": {"type": "boolean"}, "\u00e9": {"type": "null"}, "a": {"type": "string", "maxLength": 0}},
        "required": ["a\"b"]})"},
  };
  return schemas;
}

// JSON Schema semantics for the supported keywords, straight from the schema JSON.
class SchemaOracle {
 public:
  explicit SchemaOracle(nlohmann::ordered_json schema) : root_(std::move(schema)) {}

  bool valid(const nlohmann::json& value) const { return valid(value, root_, 0); }

 private:
  static uint64_t code_points(const std::string& s) {
    uint64_t n = 0;
    for (const char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
    return n;
  }

  static bool has_type(const nlohmann::json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "number") return v.is_number();
    if (t == "integer") {
      return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
    }
    return false;
  }

  static nlohmann::json plain(const nlohmann::ordered_json& v) { return nlohmann::json::parse(v.dump()); }

  bool valid(const nlohmann::json& v, const nlohmann::ordered_json& s, int level) const {
    if (level > 200) return false;
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("$ref")) {
      const std::string ref = s["$ref"].get<std::string>();
      return valid(v, root_.at(nlohmann::ordered_json::json_pointer(ref.substr(1))), level + 1);
    }
    if (s.contains("anyOf")) {
      for (const auto& alt : s["anyOf"]) if (valid(v, alt, level + 1)) return true;
      return false;
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const auto& alt : s["oneOf"]) n += valid(v, alt, level + 1);
      return n == 1;
    }
    if (s.contains("allOf")) {
      for (const auto& alt : s["allOf"]) if (!valid(v, alt, level + 1)) return false;
      return true;
    }
    if (s.contains("const") && v != plain(s["const"])) return false;
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found |= v == plain(e);
      if (!found) return false;
    }
    if (s.contains("type")) {
      std::vector<std::string> types;
      if (s["type"].is_string()) types.push_back(s["type"].get<std::string>());
      else for (const auto& t : s["type"]) types.push_back(t.get<std::string>());
      if (s.value("nullable", false)) types.push_back("null");
      bool ok = false;
      for (const auto& t : types) ok |= has_type(v, t);
      if (!ok) return false;
    }
    if (v.is_object()) {
      if (s.contains("required")) {
        for (const auto& r : s["required"]) if (!v.contains(r.get<std::string>())) return false;
      }
      for (const auto& [key, value] : v.items()) {
        if (s.contains("properties") && s["properties"].contains(key)) {
          if (!valid(value, s["properties"][key], level + 1)) return false;
        } else if (s.contains("additionalProperties") && !valid(value, s["additionalProperties"], level + 1)) {
          return false;
        }
      }
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
      if (s.contains("items")) {
        for (const auto& item : v) if (!valid(item, s["items"], level + 1)) return false;
      }
    }
    if (v.is_string()) {
      const uint64_t n = code_points(v.get<std::string>());
      if (s.contains("minLength") && n < s["minLength"].get<uint64_t>()) return false;
      if (s.contains("maxLength") && n > s["maxLength"].get<uint64_t>()) return false;
    }
    return true;
  }

  nlohmann::ordered_json root_;
};

}  // namespace dspark::test
