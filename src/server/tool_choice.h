// tool_choice on /v1/chat/completions, OpenAI's four forms:
//
//   "auto" (the default)   the template offers the tools; the reply calls them or not
//                          (tool_calls.h reads calls back in the template's format)
//   "none"                 the tools are withheld from the template
//   "required"             the reply must call at least one tool: it is constrained to a
//                          JSON list [{"name": ..., "arguments": {...}}, ...] (at least one
//                          call; each "arguments" valid under its tool's "parameters"),
//                          which is ToolCallFormat::kMistral's list, read back as the calls
//                          (parallel_tool_calls false: exactly one call)
//   {"type": "function", "function": {"name": N}}
//                          the reply is constrained to N's "parameters" schema and is the
//                          arguments of one call to N (ToolCallFormat::kForcedFunction)
//
// The forced forms are constrained decoding (structured/json_schema.h), so the arguments
// always follow the tool's schema, and a "parameters" schema outside the supported subset
// is refused (400 naming tools[i].function.parameters and the keyword's pointer) rather
// than half applied. Both keep the tools in the prompt, and exclude response_format.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "structured/json_schema.h"

namespace dspark {

enum class ToolChoice { kAuto, kNone, kRequired, kFunction };

struct ParsedToolChoice {
  ToolChoice choice = ToolChoice::kAuto;
  std::string function;                              // kFunction: the named function
  std::shared_ptr<const CompiledJsonSchema> schema;  // kRequired / kFunction: what the reply follows
};

// tool_choice (null or absent: "auto") against the request's tools (null when none);
// parallel_calls: the request's parallel_tool_calls (default true). Throws ApiError (400)
// naming tool_choice, or tools[i].* for a tool a forced choice cannot use (not a function,
// no name, a repeated name, parameters that are not a supported schema).
ParsedToolChoice parse_tool_choice(const nlohmann::ordered_json* tool_choice, const nlohmann::ordered_json& tools,
                                   bool parallel_calls = true);

}  // namespace dspark
