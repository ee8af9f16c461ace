// Request parsing half of openai_protocol.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "server/openai_protocol.h"
#include "server/request_fields.h"
#include "server/structured_outputs.h"
#include "server/tool_choice.h"
#include "structured/json_schema.h"

namespace dspark {
namespace {

using nlohmann::json;
using request_fields::Fields;
using request_fields::type_name;
using request_fields::unsupported;
using request_fields::wrong_type;

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 1, column
// 5: syntax error while parsing value - invalid literal; last read: '...'": the client
// gets the sentence and the position, neither the library's tag nor an echo of its bytes.
std::string json_error_text(const json::exception& e) {
  std::string_view m(e.what());
  if (m.rfind("[json.exception.", 0) == 0 && m.find("] ") != std::string_view::npos) m.remove_prefix(m.find("] ") + 2);
  if (const size_t last_read = m.find("; last read"); last_read != std::string_view::npos) m = m.substr(0, last_read);
  return std::string(m);
}

std::vector<int32_t> token_ids(const json& list, const std::string& field) {
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (const json& v : list) {
    if (!v.is_number_integer() && !v.is_number_unsigned()) throw wrong_type(field, "a list of token ids (integers)", v);
    const int64_t id = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), 1ull << 40))
                                              : v.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      throw ApiError::bad_request(fmt::format("'{}': token id {} is out of range", field, id), field);
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

void parse_prompt(const json& body, ParsedRequest& r) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) {
    throw ApiError::bad_request("'prompt' is required", "prompt", "missing_required_parameter");
  }
  const json& p = *it;
  if (p.is_string()) {
    r.prompt_text = p.get<std::string>();
    return;
  }
  if (!p.is_array()) throw wrong_type("prompt", "a string or a list of token ids", p);
  if (p.empty()) throw ApiError::bad_request("'prompt' must not be an empty list", "prompt");
  if (p[0].is_string() || p[0].is_array()) {
    // A list of prompts: dspark serves one completion per request.
    if (p.size() != 1) throw unsupported("prompt", "a batch of several prompts");
    if (p[0].is_string()) {
      r.prompt_text = p[0].get<std::string>();
      return;
    }
    r.prompt_ids = token_ids(p[0], "prompt");
  } else {
    r.prompt_ids = token_ids(p, "prompt");
  }
  r.prompt_is_ids = true;
  if (r.prompt_ids.empty()) throw ApiError::bad_request("'prompt' must not be an empty list", "prompt");
}

using ordered_json = nlohmann::ordered_json;

// Content as templates read it: a string, null, or text parts joined with newlines (as
// vLLM does for templates that expect a string).
ordered_json message_content(const ordered_json& content, const std::string& field) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) throw wrong_type(field, "a string or a list of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const ordered_json& part = content[i];
    if (!part.is_object()) throw wrong_type(field, "a list of content parts (objects)", part);
    auto type = part.find("type");
    if (type != part.end() && !(type->is_string() && *type == "text")) {
      throw unsupported(field, fmt::format("content of type {}", type->dump()));
    }
    auto part_text = part.find("text");
    if (part_text == part.end() || !part_text->is_string()) {
      throw ApiError::bad_request(fmt::format("'{}': a text part needs 'text' (a string)", field), field);
    }
    if (i > 0) text += "\n";
    text += part_text->get<std::string>();
  }
  return text;
}

// OpenAI sends a tool call's arguments as JSON text; templates (as in vLLM) get the object.
void parse_tool_call_arguments(ordered_json& message, const std::string& field) {
  auto calls = message.find("tool_calls");
  if (calls == message.end() || calls->is_null()) return;
  if (!calls->is_array()) throw wrong_type(field + ".tool_calls", "a list", *calls);
  for (ordered_json& call : *calls) {
    if (!call.is_object()) throw wrong_type(field + ".tool_calls", "a list of objects", call);
    auto function = call.find("function");
    if (function == call.end() || !function->is_object()) continue;
    auto arguments = function->find("arguments");
    if (arguments == function->end() || !arguments->is_string()) continue;
    ordered_json parsed = ordered_json::parse(arguments->get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) *arguments = std::move(parsed);
  }
}

const char* kRoles[] = {"system", "developer", "user", "assistant", "tool", "function"};

void parse_messages(const ordered_json& body, ParsedRequest& r) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) {
    throw ApiError::bad_request("'messages' is required", "messages", "missing_required_parameter");
  }
  if (!it->is_array()) throw wrong_type("messages", "a list of messages", *it);
  if (it->empty()) throw ApiError::bad_request("'messages' must not be empty", "messages");
  for (size_t i = 0; i < it->size(); ++i) {
    ordered_json m = (*it)[i];
    const std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) throw wrong_type(field, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || role->is_null()) {
      throw ApiError::bad_request(fmt::format("'{}.role' is required", field), field + ".role",
                                  "missing_required_parameter");
    }
    if (!role->is_string()) throw wrong_type(field + ".role", "a string", *role);
    const std::string name = role->get<std::string>();
    if (std::find(std::begin(kRoles), std::end(kRoles), name) == std::end(kRoles)) {
      throw ApiError::bad_request(fmt::format("'{}.role': unsupported role '{}'", field, name), field + ".role");
    }
    if (name == "developer") *role = "system";  // OpenAI's newer name; templates know "system"
    auto content = m.find("content");
    m["content"] = content == m.end() ? ordered_json(nullptr) : message_content(*content, field + ".content");
    parse_tool_call_arguments(m, field);
    r.chat.messages.push_back(std::move(m));
  }
  if (auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) {
    if (!tools->is_array()) throw wrong_type("tools", "a list of tools", *tools);
    for (const ordered_json& tool : *tools) {
      if (!tool.is_object()) throw wrong_type("tools", "a list of tool objects", tool);
    }
    if (!tools->empty()) r.chat.tools = *tools;
  }
  // tool_choice (tool_choice.h): "none" withholds the tools; a forced call is a JSON schema
  // the reply follows.
  const auto choice = body.find("tool_choice");
  bool parallel_calls = true;
  if (auto parallel = body.find("parallel_tool_calls"); parallel != body.end() && !parallel->is_null()) {
    if (!parallel->is_boolean()) throw wrong_type("parallel_tool_calls", "a boolean", *parallel);
    parallel_calls = parallel->get<bool>();
  }
  ParsedToolChoice tool_choice =
      parse_tool_choice(choice == body.end() ? nullptr : &*choice, r.chat.tools, parallel_calls);
  if (tool_choice.choice == ToolChoice::kNone) r.chat.tools = nullptr;
  if (tool_choice.schema) {
    r.options.response_format = ResponseFormat::kJsonSchema;
    r.options.json_schema = std::move(tool_choice.schema);
  }
  r.tool_choice = tool_choice.choice;
  r.forced_function = std::move(tool_choice.function);
  if (auto kwargs = body.find("chat_template_kwargs"); kwargs != body.end() && !kwargs->is_null()) {
    if (!kwargs->is_object()) throw wrong_type("chat_template_kwargs", "an object", *kwargs);
    r.chat.template_kwargs = *kwargs;
  }
  if (auto add = body.find("add_generation_prompt"); add != body.end() && !add->is_null()) {
    if (!add->is_boolean()) throw wrong_type("add_generation_prompt", "a boolean", *add);
    r.chat.add_generation_prompt = add->get<bool>();
  }
}

void parse_stop(const Fields& f, ParsedRequest& r) {
  const json* v = f.get("stop");
  if (!v) return;
  auto add = [&](const json& s) {
    if (!s.is_string()) throw wrong_type("stop", "a string or a list of strings", s);
    std::string text = s.get<std::string>();
    if (text.empty()) throw ApiError::bad_request("'stop' strings must not be empty", "stop");
    if (text.size() > kMaxStopStringBytes) {
      throw ApiError::bad_request(
          fmt::format("'stop' strings have at most {} bytes, got {}", kMaxStopStringBytes, text.size()), "stop");
    }
    r.options.stop.push_back(std::move(text));
  };
  if (v->is_array()) {
    // Bounded before anything is copied (GenerationOptions: matching runs on the engine thread).
    if (v->size() > kMaxStopStrings) {
      throw ApiError::bad_request(fmt::format("'stop' has at most {} strings, got {}", kMaxStopStrings, v->size()),
                                  "stop");
    }
    for (const json& s : *v) add(s);
  } else {
    add(*v);
  }
}

// vLLM's extensions around stopping: stop_token_ids (ids that end the output as EOS does),
// include_stop_str_in_output, and min_tokens (EOS and the stop ids masked until the output
// has that many tokens; checked against max_tokens by the engine's validation).
void parse_stop_tokens(const Fields& f, ParsedRequest& r) {
  if (const json* ids = f.get("stop_token_ids")) {
    if (!ids->is_array()) throw wrong_type("stop_token_ids", "a list of token ids", *ids);
    if (ids->size() > kMaxStopTokenIds) {
      throw ApiError::bad_request(
          fmt::format("'stop_token_ids' has at most {} ids, got {}", kMaxStopTokenIds, ids->size()), "stop_token_ids");
    }
    r.options.stop_token_ids = token_ids(*ids, "stop_token_ids");
  }
  if (auto keep = f.boolean("include_stop_str_in_output")) r.options.include_stop_str_in_output = *keep;
  if (auto n = f.integer("min_tokens")) {
    if (*n < 0) throw ApiError::bad_request(fmt::format("'min_tokens' must be >= 0, got {}", *n), "min_tokens");
    r.options.min_tokens = *n;
  }
}

// Completions: "logprobs": n (the top n alternatives, 0..20). Chat: "logprobs": true and
// "top_logprobs": n (0..20; needs logprobs).
void parse_logprobs(const Fields& f, ParsedRequest& r) {
  auto check_range = [](const char* key, int64_t n) {
    if (n < 0 || n > kMaxTopLogprobs) {
      throw ApiError::bad_request(fmt::format("'{}' must be in [0, {}], got {}", key, kMaxTopLogprobs, n), key);
    }
  };
  if (r.endpoint == Endpoint::kCompletions) {
    if (auto n = f.integer("logprobs")) {
      check_range("logprobs", *n);
      r.options.logprobs = static_cast<int32_t>(*n);
    }
    return;
  }
  const bool on = f.boolean("logprobs").value_or(false);
  if (auto n = f.integer("top_logprobs")) {
    check_range("top_logprobs", *n);
    if (!on && *n > 0) throw ApiError::bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    r.options.logprobs = static_cast<int32_t>(*n);
  }
  if (on) r.options.logprobs = std::max<int32_t>(r.options.logprobs, 0);
  else r.options.logprobs = -1;
}

// echo (completions): the prompt before the completion, with its logprobs when the request
// asks for logprobs (the first token has none), as OpenAI's legacy API does. vLLM's
// prompt_logprobs (both endpoints): the prompt's own log-probs and top n, whole responses
// only (the prompt is not a stream). After parse_logprobs.
void parse_prompt_logprobs(const Fields& f, ParsedRequest& r) {
  if (r.endpoint == Endpoint::kCompletions && f.boolean("echo").value_or(false)) {
    r.echo = true;
    r.options.prompt_logprobs = r.options.logprobs;
  }
  auto n = f.integer("prompt_logprobs");
  if (!n) return;
  if (*n < 0 || *n > kMaxTopLogprobs) {
    throw ApiError::bad_request(fmt::format("'prompt_logprobs' must be in [0, {}], got {}", kMaxTopLogprobs, *n),
                                "prompt_logprobs");
  }
  if (r.options.prompt_logprobs >= 0 && r.options.prompt_logprobs != *n) {
    throw ApiError::bad_request("'prompt_logprobs' must equal 'logprobs' when echo asks for the prompt's logprobs",
                                "prompt_logprobs");
  }
  if (f.boolean("stream").value_or(false)) throw unsupported("prompt_logprobs", "prompt_logprobs with stream");
  r.reports_prompt_logprobs = true;
  r.options.prompt_logprobs = static_cast<int32_t>(*n);
}

// logit_bias: {"token id": bias, ...}, OpenAI's form (ids as decimal strings, biases in
// [-100, 100]), into the sorted pairs SamplingParams holds. Ids past the vocabulary are
// refused by the engine's request validation, which knows it.
void parse_logit_bias(const Fields& f, SamplingParams& s) {
  const char* key = "logit_bias";
  const json* bias = f.get(key);
  if (!bias) return;
  if (!bias->is_object()) throw wrong_type(key, "an object mapping token ids to biases", *bias);
  s.logit_bias.clear();
  s.logit_bias.reserve(bias->size());
  for (const auto& [text, value] : bias->items()) {
    const std::string shown = text.size() <= 24 ? text : text.substr(0, 24) + "...";
    const bool digits = !text.empty() && text.size() <= 10 &&
                        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t id = digits ? std::stoll(text) : -1;
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      throw ApiError::bad_request(fmt::format("'logit_bias' keys must be token ids (integers >= 0), got \"{}\"", shown),
                                  key);
    }
    const std::string field = fmt::format("logit_bias.{}", shown);
    if (!value.is_number()) throw wrong_type(field, "a number", value);
    const double b = value.get<double>();
    if (!(b >= -100 && b <= 100)) {
      throw ApiError::bad_request(fmt::format("'{}' must be in [-100, 100], got {}", field, b), field);
    }
    s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
  }
  if (const int32_t twice = s.sort_logit_bias(); twice >= 0) {
    throw ApiError::bad_request(fmt::format("'logit_bias' names token {} twice", twice), key);
  }
}

void refuse_unsupported(const Fields& f, Endpoint endpoint) {
  if (auto best_of = f.integer("best_of"); best_of && *best_of != 1) throw unsupported("best_of", "best_of > 1");
  if (auto echo = f.boolean("echo"); echo && *echo && endpoint == Endpoint::kChat) {
    throw unsupported("echo", "echo on chat completions");
  }
  if (endpoint == Endpoint::kCompletions) {
    if (auto suffix = f.string("suffix"); suffix && !suffix->empty()) throw unsupported("suffix", "suffix");
  }
}

// response_format {"type": "json_schema", "json_schema": {"name", "schema", "strict",
// "description"}}. Every error names the field and answers param "response_format".
// `strict` is read but changes nothing: the output always follows the schema.
void parse_json_schema_format(const json& format, std::string_view text, ParsedRequest& r) {
  const char* param = "response_format";
  const json* spec = Fields(format, "response_format.").get("json_schema");
  if (!spec || !spec->is_object()) {
    throw ApiError::bad_request("'response_format.json_schema' is required for type json_schema: an object with "
                                "'name' and 'schema'", param);
  }
  const Fields fields(*spec, "response_format.json_schema.");
  std::optional<std::string> name;
  try {
    name = fields.string("name");
    (void)fields.string("description");
    (void)fields.boolean("strict");
  } catch (const ApiError& e) {
    throw ApiError::bad_request(e.message(), param, "invalid_type");
  }
  // OpenAI's rule for the name: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'.
  if (!name) throw ApiError::bad_request("'response_format.json_schema.name' is required", param);
  const bool name_ok = !name->empty() && name->size() <= 64 &&
                       std::all_of(name->begin(), name->end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                c == '_' || c == '-';
                       });
  if (!name_ok) {
    throw ApiError::bad_request("'response_format.json_schema.name' must be 1 to 64 letters, digits, '_' or '-'",
                                param);
  }
  const json* schema = fields.get("schema");
  if (!schema) throw ApiError::bad_request("'response_format.json_schema.schema' is required", param);
  if (!schema->is_object()) {
    throw ApiError::bad_request(fmt::format("'response_format.json_schema.schema' must be an object, got {}",
                                            type_name(schema->type())),
                                param, "invalid_type");
  }
  // Properties are generated in the declared order, which `json` (sorted keys) has lost:
  // the schema is read again from the text with its key order kept.
  const nlohmann::ordered_json body = nlohmann::ordered_json::parse(text);
  r.options.json_schema = compile_request_schema(body["response_format"]["json_schema"]["schema"],
                                                 "response_format.json_schema.schema", param);
  r.options.response_format = ResponseFormat::kJsonSchema;
}

}  // namespace

ParsedRequest parse_request(std::string_view text, Endpoint endpoint) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    throw ApiError::bad_request(fmt::format("the request body is not valid JSON: {}", json_error_text(e)), {},
                                "invalid_json");
  }
  if (!body.is_object()) throw ApiError::bad_request("the request body must be a JSON object", {}, "invalid_json");

  ParsedRequest r;
  r.endpoint = endpoint;
  const Fields f(body);
  if (auto model = f.string("model")) r.model = *model;
  if (endpoint == Endpoint::kCompletions) parse_prompt(body, r);
  else parse_messages(ordered_json::parse(text), r);  // key order kept: templates print tools and arguments
  refuse_unsupported(f, endpoint);
  if (auto n = f.integer("n")) {
    if (*n < 1 || *n > kMaxChoices) {
      throw ApiError::bad_request(fmt::format("'n' must be in [1, {}], got {}", kMaxChoices, *n), "n");
    }
    r.n = *n;
  }
  // JSON mode and JSON schemas are constrained decoding (the output is always a prefix of
  // a JSON object / of a value the schema accepts); a schema outside the supported subset
  // is refused: ignoring part of it would hand the client JSON of the wrong shape.
  if (const json* format = f.get("response_format")) {
    if (!format->is_object()) throw wrong_type("response_format", "an object", *format);
    if (r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kFunction) {
      throw ApiError::bad_request("'response_format' cannot be combined with a forced 'tool_choice' (the reply is "
                                  "the call's JSON)", "response_format");
    }
    const json* type = Fields(*format, "response_format.").get("type");
    if (!type || !type->is_string()) {
      throw ApiError::bad_request("'response_format.type' is required", "response_format.type");
    }
    if (*type == "json_object") {
      r.options.response_format = ResponseFormat::kJsonObject;
    } else if (*type == "json_schema") {
      parse_json_schema_format(*format, text, r);
    } else if (*type != "text") {
      throw unsupported("response_format", fmt::format("response_format {}", type->dump()));
    }
  }
  parse_structured_outputs(body, text, r);

  // max_completion_tokens supersedes the older max_tokens (both are accepted).
  const char* max_key = f.get("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (auto max_tokens = f.integer(max_key)) {
    if (*max_tokens < 1) throw ApiError::bad_request(fmt::format("'{}' must be >= 1, got {}", max_key, *max_tokens), max_key);
    r.options.max_tokens = *max_tokens;
    r.max_tokens_given = true;
  }
  SamplingParams& s = r.options.sampling;
  s.temperature = 1.0f;
  if (auto t = f.number("temperature")) {
    if (*t < 0) throw ApiError::bad_request(fmt::format("'temperature' must be >= 0, got {}", *t), "temperature");
    s.temperature = static_cast<float>(*t);
  }
  if (auto p = f.number("top_p")) {
    if (!(*p > 0 && *p <= 1)) throw ApiError::bad_request(fmt::format("'top_p' must be in (0, 1], got {}", *p), "top_p");
    s.top_p = static_cast<float>(*p);
  }
  if (auto k = f.integer("top_k")) {
    if (*k < -1) throw ApiError::bad_request(fmt::format("'top_k' must be -1 or 0 (off) or >= 1, got {}", *k), "top_k");
    s.top_k = static_cast<int32_t>(std::clamp<int64_t>(*k, 0, std::numeric_limits<int32_t>::max()));
  }
  if (auto p = f.number("min_p")) {
    if (!(*p >= 0 && *p <= 1)) throw ApiError::bad_request(fmt::format("'min_p' must be in [0, 1], got {}", *p), "min_p");
    s.min_p = static_cast<float>(*p);
  }
  if (auto p = f.number("repetition_penalty")) {
    if (!(*p > 0)) {
      throw ApiError::bad_request(fmt::format("'repetition_penalty' must be > 0, got {}", *p), "repetition_penalty");
    }
    s.repetition_penalty = static_cast<float>(*p);
  }
  if (auto seed = f.integer("seed")) {
    s.seed = static_cast<uint64_t>(*seed);
    s.position_keyed = true;  // a given seed must reproduce whatever the speculation schedule
    r.seed_given = true;
  }
  for (auto [key, target] : {std::pair{"presence_penalty", &s.presence_penalty},
                              std::pair{"frequency_penalty", &s.frequency_penalty}}) {
    if (auto p = f.number(key)) {
      if (!(*p >= -2 && *p <= 2)) throw ApiError::bad_request(fmt::format("'{}' must be in [-2, 2], got {}", key, *p), key);
      *target = static_cast<float>(*p);
    }
  }
  parse_logit_bias(f, s);
  parse_logprobs(f, r);
  parse_prompt_logprobs(f, r);
  if (auto k = f.integer("num_speculative_tokens")) {
    if (*k < 0) {
      throw ApiError::bad_request(fmt::format("'num_speculative_tokens' must be >= 0 (0 = no speculation), got {}", *k),
                                  "num_speculative_tokens");
    }
    r.options.max_spec_tokens = static_cast<int32_t>(std::min<int64_t>(*k, std::numeric_limits<int32_t>::max()));
  }
  parse_stop(f, r);
  parse_stop_tokens(f, r);
  if (auto ignore_eos = f.boolean("ignore_eos")) r.options.ignore_eos = *ignore_eos;
  if (auto stream = f.boolean("stream")) r.stream = *stream;
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    if (auto usage = Fields(*so, "stream_options.").boolean("include_usage")) r.include_usage = *usage;
  }
  return r;
}

}  // namespace dspark
