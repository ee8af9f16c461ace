#include "server/tool_calls.h"

#include <functional>

namespace dspark {
namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::optional<json> parse_json(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// One OpenAI tool call from {"name", <arguments_key>}; arguments are sent as JSON text.
std::optional<json> make_call(const json& call, const char* arguments_key, const std::function<std::string()>& make_id) {
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
  const json arguments = call.contains(arguments_key) ? call[arguments_key] : json::object();
  const std::string text = arguments.is_string() ? arguments.get<std::string>() : arguments.dump();
  return json{{"id", make_id()}, {"type", "function"}, {"function", {{"name", call["name"]}, {"arguments", text}}}};
}

std::optional<ParsedToolCalls> parse_hermes(std::string_view text, const std::function<std::string()>& make_id) {
  static constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  const size_t first = text.find(kOpen);
  if (first == std::string_view::npos) return std::nullopt;
  ParsedToolCalls out;
  out.tool_calls = json::array();
  for (size_t at = first; at != std::string_view::npos; at = text.find(kOpen, at)) {
    const size_t body = at + kOpen.size();
    size_t end = text.find(kClose, body);
    const std::string_view inner = text.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body);
    const std::optional<json> call = parse_json(trim(inner));
    if (!call) return std::nullopt;
    std::optional<json> made = make_call(*call, "arguments", make_id);
    if (!made) return std::nullopt;
    out.tool_calls.push_back(std::move(*made));
    if (end == std::string_view::npos) break;  // the reply ended inside its last call
    at = end + kClose.size();
  }
  // Only the whitespace that ends the text is dropped: a stream (tool_call_stream.h) has
  // sent the text's beginning before it learns that a call follows.
  std::string_view before = text.substr(0, first);
  before = before.substr(0, before.find_last_not_of(" \t\r\n") + 1);
  if (!before.empty()) out.content = std::string(before);
  return out;
}

std::optional<ParsedToolCalls> parse_llama3(std::string_view text, const std::function<std::string()>& make_id) {
  text = trim(text);
  static constexpr std::string_view kPythonTag = "<|python_tag|>";
  if (text.starts_with(kPythonTag)) text = trim(text.substr(kPythonTag.size()));
  const std::optional<json> call = parse_json(text);
  if (!call) return std::nullopt;
  std::optional<json> made = make_call(*call, call->contains("parameters") ? "parameters" : "arguments", make_id);
  if (!made) return std::nullopt;
  return ParsedToolCalls{std::nullopt, json::array({std::move(*made)})};
}

std::optional<ParsedToolCalls> parse_mistral(std::string_view text, const std::function<std::string()>& make_id) {
  text = trim(text);
  static constexpr std::string_view kMarker = "[TOOL_CALLS]";
  if (text.starts_with(kMarker)) text = trim(text.substr(kMarker.size()));
  if (!text.starts_with("[")) return std::nullopt;
  const std::optional<json> calls = parse_json(text);
  if (!calls || !calls->is_array() || calls->empty()) return std::nullopt;
  ParsedToolCalls out;
  out.tool_calls = json::array();
  for (const json& call : *calls) {
    std::optional<json> made = make_call(call, "arguments", make_id);
    if (!made) return std::nullopt;
    out.tool_calls.push_back(std::move(*made));
  }
  return out;
}

}  // namespace

ToolCallFormat tool_call_format(std::string_view source) {
  if (source.find("<tool_call>") != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find("[TOOL_CALLS]") != std::string_view::npos) return ToolCallFormat::kMistral;
  if (source.find("<|python_tag|>") != std::string_view::npos ||
      source.find("\"parameters\": dictionary of argument name") != std::string_view::npos) {
    return ToolCallFormat::kLlama3;
  }
  return ToolCallFormat::kNone;
}

std::optional<ParsedToolCalls> parse_tool_calls(ToolCallFormat format, std::string_view text,
                                                const std::function<std::string()>& make_id,
                                                std::string_view forced_function) {
  switch (format) {
    case ToolCallFormat::kForcedFunction:
      return ParsedToolCalls{std::nullopt, json::array({{{"id", make_id()}, {"type", "function"},
                                                         {"function", {{"name", forced_function}, {"arguments", text}}}}})};
    case ToolCallFormat::kHermes: return parse_hermes(text, make_id);
    case ToolCallFormat::kLlama3: return parse_llama3(text, make_id);
    case ToolCallFormat::kMistral: return parse_mistral(text, make_id);
    case ToolCallFormat::kNone: break;
  }
  return std::nullopt;
}

}  // namespace dspark
