#include "server/structured_outputs.h"

#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "server/request_fields.h"
#include "structured/gbnf_grammar.h"
#include "structured/regex_dfa.h"

namespace dspark {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using request_fields::Fields;
using request_fields::unsupported;
using request_fields::wrong_type;

// Where a request's constraint came from, for the message that refuses a second one.
std::string constraint_source(const ParsedRequest& r) {
  if (r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kFunction) return "a forced 'tool_choice'";
  return "'response_format'";
}

std::shared_ptr<const CompiledRegex> compile_regex(const std::string& pattern, const std::string& field) {
  try {
    return CompiledRegex::compile(pattern);
  } catch (const Error& e) {
    std::string_view message = e.message();
    if (message.starts_with("regex: ")) message.remove_prefix(7);
    throw ApiError::bad_request(fmt::format("'{}': {}", field, message), field);
  }
}

std::shared_ptr<const CompiledGrammar> compile_grammar(const json& text, const std::string& field) {
  if (!text.is_string()) throw wrong_type(field, "a string (a grammar in GBNF)", text);
  try {
    return CompiledGrammar::compile(text.get_ref<const std::string&>());
  } catch (const Error& e) {
    std::string_view message = e.message();
    if (message.starts_with("grammar: ")) message.remove_prefix(9);
    throw ApiError::bad_request(fmt::format("'{}': {}", field, message), field);
  }
}

std::vector<std::string> choices(const json& list, const std::string& field) {
  if (!list.is_array() || list.empty()) throw wrong_type(field, "a non-empty list of strings", list);
  std::vector<std::string> out;
  for (const json& c : list) {
    if (!c.is_string() || c.get_ref<const std::string&>().empty()) {
      throw ApiError::bad_request(fmt::format("'{}' must hold non-empty strings, got {}", field, c.dump()), field,
                                  "invalid_type");
    }
    out.push_back(c.get<std::string>());
  }
  return out;
}

enum class Kind { kRegex, kChoice, kGrammar, kJson, kJsonObject };

// One constraint: what it asks, its field name (as the client spelled it) and the JSON path to it.
struct Constraint {
  Kind kind;
  std::string field;          // "structured_outputs.regex", "guided_json", ...
  const json* value;
  std::vector<std::string> path;  // keys from the body to value
};

void apply(const Constraint& c, std::string_view text, ParsedRequest& r) {
  GenerationOptions& o = r.options;
  if (c.kind == Kind::kRegex) {
    if (!c.value->is_string()) throw wrong_type(c.field, "a string", *c.value);
    o.regex = compile_regex(c.value->get<std::string>(), c.field);
    o.response_format = ResponseFormat::kRegex;
  } else if (c.kind == Kind::kGrammar) {
    o.gbnf_grammar = compile_grammar(*c.value, c.field);
    o.response_format = ResponseFormat::kGrammar;
  } else if (c.kind == Kind::kChoice) {
    o.regex = compile_regex(choice_regex(choices(*c.value, c.field)), c.field);
    o.response_format = ResponseFormat::kRegex;
  } else if (c.kind == Kind::kJsonObject) {
    if (!c.value->is_boolean()) throw wrong_type(c.field, "a boolean", *c.value);
    if (c.value->get<bool>()) o.response_format = ResponseFormat::kJsonObject;
  } else {  // kJson: a schema, or its JSON text
    ordered_json schema;
    if (c.value->is_string()) {
      schema = ordered_json::parse(c.value->get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (schema.is_discarded()) {
        throw ApiError::bad_request(fmt::format("'{}' is a string but not a JSON Schema's JSON text", c.field),
                                    c.field);
      }
    } else {
      if (!c.value->is_object()) throw wrong_type(c.field, "a JSON Schema (an object or its JSON text)", *c.value);
      // The key order of the request's own text: properties are generated in that order.
      schema = ordered_json::parse(text);
      for (const std::string& key : c.path) schema = ordered_json(schema[key]);
    }
    if (!schema.is_object()) throw wrong_type(c.field, "a JSON Schema (an object)", schema);
    o.json_schema = compile_request_schema(schema, c.field, c.field);
    o.response_format = ResponseFormat::kJsonSchema;
  }
}

}  // namespace

std::shared_ptr<const CompiledJsonSchema> compile_request_schema(const ordered_json& schema, const std::string& field,
                                                                 const std::string& param) {
  try {
    return compile_json_schema(schema);
  } catch (const Error& e) {
    std::string_view message = e.message();
    if (message.starts_with("json_schema: ")) message.remove_prefix(13);
    throw ApiError::bad_request(fmt::format("'{}': {}", field, message), param);
  }
}

void parse_structured_outputs(const json& body, std::string_view text, ParsedRequest& r) {
  const Fields top(body);
  std::vector<Constraint> found;
  for (const auto& [key, kind] : {std::pair{"guided_regex", Kind::kRegex}, std::pair{"guided_choice", Kind::kChoice},
                                   std::pair{"guided_grammar", Kind::kGrammar}, std::pair{"grammar", Kind::kGrammar},
                                   std::pair{"guided_json", Kind::kJson}}) {
    if (const json* v = top.get(key)) found.push_back({kind, key, v, {key}});
  }
  if (top.get("guided_whitespace_pattern")) throw unsupported("guided_whitespace_pattern", "a whitespace pattern");
  if (const json* so = top.get("structured_outputs")) {
    if (!so->is_object()) throw wrong_type("structured_outputs", "an object", *so);
    const Fields f(*so, "structured_outputs.");
    for (const auto& [key, kind] : {std::pair{"regex", Kind::kRegex}, std::pair{"choice", Kind::kChoice},
                                     std::pair{"grammar", Kind::kGrammar}, std::pair{"json", Kind::kJson},
                                     std::pair{"json_object", Kind::kJsonObject}}) {
      if (const json* v = f.get(key)) found.push_back({kind, f.name(key), v, {"structured_outputs", key}});
    }
    if (f.get("structural_tag")) throw unsupported("structured_outputs.structural_tag", "a structural tag");
    if (f.get("whitespace_pattern")) throw unsupported("structured_outputs.whitespace_pattern", "a whitespace pattern");
    if (f.boolean("disable_any_whitespace").value_or(false)) {
      throw unsupported("structured_outputs.disable_any_whitespace", "JSON without whitespace");
    }
    if (found.empty()) {
      throw ApiError::bad_request(
          "'structured_outputs' needs one of 'regex', 'choice', 'grammar', 'json' or 'json_object'",
          "structured_outputs");
    }
  }
  if (found.empty()) return;
  if (found.size() > 1) {
    throw ApiError::bad_request(fmt::format("'{}' and '{}' both constrain the output; give one", found[0].field,
                                            found[1].field),
                                found[1].field);
  }
  if (r.options.response_format != ResponseFormat::kText) {
    throw ApiError::bad_request(fmt::format("'{}' cannot be combined with {}, which constrains the output too",
                                            found[0].field, constraint_source(r)),
                                found[0].field);
  }
  apply(found[0], text, r);
}

}  // namespace dspark
