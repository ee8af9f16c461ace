#include "server/tool_choice.h"

#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "server/openai_protocol.h"
#include "server/structured_outputs.h"

namespace dspark {
namespace {

using nlohmann::ordered_json;

ApiError bad(const std::string& message, const std::string& param) { return ApiError::bad_request(message, param); }

struct Tool {
  std::string name;
  ordered_json parameters;  // its JSON Schema; a function without "parameters" takes none: {}
  std::string field;        // "tools[i].function"
};

Tool read_tool(const ordered_json& tool, size_t i) {
  Tool t;
  t.field = fmt::format("tools[{}].function", i);
  if (auto type = tool.find("type"); type != tool.end() && *type != "function") {
    throw bad(fmt::format("'tools[{}].type' must be \"function\", got {}", i, type->dump()),
              fmt::format("tools[{}].type", i));
  }
  const auto function = tool.find("function");
  if (function == tool.end() || !function->is_object()) {
    throw bad(fmt::format("'{}' must be an object with a 'name'", t.field), t.field);
  }
  const auto name = function->find("name");
  if (name == function->end() || !name->is_string() || name->get_ref<const std::string&>().empty()) {
    throw bad(fmt::format("'{}.name' must be a non-empty string", t.field), t.field + ".name");
  }
  t.name = name->get<std::string>();
  const auto parameters = function->find("parameters");
  t.parameters = parameters == function->end() || parameters->is_null()
                     ? ordered_json{{"type", "object"}, {"additionalProperties", false}}
                     : *parameters;
  return t;
}

// The compiled schema; an error names `field` (the client's words for where it came from).
std::shared_ptr<const CompiledJsonSchema> compile(const ordered_json& schema, const std::string& field) {
  return compile_request_schema(schema, field, field);
}

// A tool's schema moved to /$defs/<key> of a larger document: its local refs ("#...")
// point there. (Only string values of "$ref" keys change; a property named "$ref" holds a
// schema, which is walked like any other.)
void move_refs(ordered_json& schema, const std::string& pointer) {
  if (schema.is_array()) {
    for (ordered_json& v : schema) move_refs(v, pointer);
    return;
  }
  if (!schema.is_object()) return;
  for (auto& [key, value] : schema.items()) {
    if (key == "$ref" && value.is_string() && value.get_ref<const std::string&>().starts_with("#")) {
      value = "#" + pointer + value.get<std::string>().substr(1);
    } else {
      move_refs(value, pointer);
    }
  }
}

// tool_choice "required": [{"name": <a tool>, "arguments": <its parameters>}, ...], at
// least one call (and at most one unless parallel); the calls' objects form a tagged union
// on "name" (json_schema.h).
ordered_json call_list_schema(const std::vector<Tool>& tools, bool parallel) {
  ordered_json calls = ordered_json::array();
  ordered_json defs = ordered_json::object();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string key = fmt::format("tool{}", i);
    ordered_json parameters = tools[i].parameters;
    move_refs(parameters, "/$defs/" + key);
    defs[key] = std::move(parameters);
    ordered_json properties = ordered_json::object();
    properties["name"] = {{"const", tools[i].name}};
    properties["arguments"] = {{"$ref", "#/$defs/" + key}};
    calls.push_back({{"type", "object"}, {"properties", std::move(properties)}, {"required", {"name", "arguments"}}});
  }
  ordered_json schema = {{"type", "array"}, {"minItems", 1}};
  if (!parallel) schema["maxItems"] = 1;
  schema["items"] = calls.size() == 1 ? calls[0] : ordered_json{{"anyOf", std::move(calls)}};
  schema["$defs"] = std::move(defs);
  return schema;
}

}  // namespace

ParsedToolChoice parse_tool_choice(const ordered_json* tool_choice, const ordered_json& tools, bool parallel_calls) {
  static constexpr const char* kParam = "tool_choice";
  ParsedToolChoice out;
  if (tool_choice == nullptr || tool_choice->is_null() || *tool_choice == "auto") return out;
  if (*tool_choice == "none") {
    out.choice = ToolChoice::kNone;
    return out;
  }
  if (*tool_choice == "required") {
    out.choice = ToolChoice::kRequired;
  } else if (tool_choice->is_object()) {
    const ordered_json* name = nullptr;
    const auto function = tool_choice->find("function");
    const auto type = tool_choice->find("type");
    if (type != tool_choice->end() && *type == "function" && function != tool_choice->end() && function->is_object()) {
      if (const auto it = function->find("name"); it != function->end() && it->is_string()) name = &*it;
    }
    if (name == nullptr) {
      throw bad(fmt::format("'tool_choice' as an object must be {{\"type\": \"function\", \"function\": {{\"name\": "
                            "...}}}}, got {}", tool_choice->dump()), kParam);
    }
    out.choice = ToolChoice::kFunction;
    out.function = name->get<std::string>();
  } else {
    throw bad(fmt::format("'tool_choice' must be \"auto\", \"none\", \"required\" or {{\"type\": \"function\", "
                          "\"function\": {{\"name\": ...}}}}, got {}", tool_choice->dump()), kParam);
  }
  if (tools.is_null() || tools.empty()) {
    throw bad(fmt::format("'tool_choice' {} needs 'tools'", tool_choice->dump()), kParam);
  }
  std::vector<Tool> list;
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    Tool t = read_tool(tools[i], i);
    if (!names.insert(t.name).second) {
      throw bad(fmt::format("'{}.name': \"{}\" names two tools", t.field, t.name), t.field + ".name");
    }
    list.push_back(std::move(t));
  }
  if (out.choice == ToolChoice::kFunction) {
    for (const Tool& t : list) {
      if (t.name == out.function) out.schema = compile(t.parameters, t.field + ".parameters");
    }
    if (!out.schema) {
      throw bad(fmt::format("'tool_choice' names the function \"{}\", which is not in 'tools'", out.function), kParam);
    }
    return out;
  }
  // Each tool's schema alone first, so that an error names the tool.
  for (const Tool& t : list) compile(t.parameters, t.field + ".parameters");
  out.schema = compile(call_list_schema(list, parallel_calls), "tools");
  return out;
}

}  // namespace dspark
