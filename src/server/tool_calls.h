// Tool calls a model wrote in its chat template's own format, parsed back into OpenAI's
// "tool_calls" (non-streaming chat responses to requests that offered tools).
//
//   hermes   <tool_call>{"name": ..., "arguments": {...}}</tool_call>, one or more, after
//            optional text (Qwen2.5, Hermes 2/3: templates that mention <tool_call>)
//   llama3   the whole reply is {"name": ..., "parameters": {...}} (optionally after
//            <|python_tag|>; Llama 3.1/3.2 templates that describe that JSON format)
//   mistral  [TOOL_CALLS] followed by a JSON list of {"name", "arguments"} (the marker may
//            have been dropped as a special token, leaving the list alone); also what
//            tool_choice "required" constrains any model's reply to (tool_choice.h)
//   forced   tool_choice named a function: the whole reply is that call's arguments
//
// A reply that does not parse as the format's calls is plain content: nothing is lost.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dspark {

enum class ToolCallFormat { kNone, kHermes, kLlama3, kMistral, kForcedFunction };

// A choice whose reply made calls finishes with "tool_calls", except a call the request
// forced by naming its function, which finishes as its reply did ("stop" or "length"), as
// in OpenAI's API.
inline bool calls_finish_as_tool_calls(ToolCallFormat format) { return format != ToolCallFormat::kForcedFunction; }

// The format a chat template asks its model to call tools in, from its source text.
ToolCallFormat tool_call_format(std::string_view template_source);

struct ParsedToolCalls {
  // The text before the first call, without its trailing whitespace (Hermes; text after
  // or between calls is dropped); nullopt when none.
  std::optional<std::string> content;
  nlohmann::json tool_calls;           // [{"id", "type": "function", "function": {"name", "arguments"}}]
};

// nullopt when `text` holds no well-formed call. `make_id` gives each call its id.
// kForcedFunction: one call to forced_function whose arguments are `text` as it stands.
std::optional<ParsedToolCalls> parse_tool_calls(ToolCallFormat format, std::string_view text,
                                                const std::function<std::string()>& make_id,
                                                std::string_view forced_function = {});

}  // namespace dspark
