// Request parsing half of openai_protocol.h.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "server/openai_protocol.h"

namespace dspark {
namespace {

using nlohmann::json;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    default: return "value";
  }
}

ApiError wrong_type(const std::string& field, const char* expected, const json& got) {
  return ApiError::bad_request(fmt::format("'{}' must be {}, got {}", field, expected, type_name(got)), field,
                               "invalid_type");
}

// Reads the optional fields of one JSON object; null counts as absent.
class Fields {
 public:
  Fields(const json& object, std::string prefix = {}) : object_(object), prefix_(std::move(prefix)) {}

  const json* get(const char* key) const {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string name(const char* key) const { return prefix_ + key; }

  std::optional<bool> boolean(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw wrong_type(name(key), "a boolean", *v);
    return v->get<bool>();
  }
  std::optional<double> number(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw wrong_type(name(key), "a number", *v);
    const double d = v->get<double>();
    if (!std::isfinite(d)) throw ApiError::bad_request(fmt::format("'{}' must be finite", name(key)), name(key));
    return d;
  }
  // Integers; a float with an integral value (16.0) is accepted as its integer.
  std::optional<int64_t> integer(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        throw ApiError::bad_request(fmt::format("'{}' is too large", name(key)), name(key));
      }
      return static_cast<int64_t>(u);
    }
    if (v->is_number_integer()) return v->get<int64_t>();
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) return static_cast<int64_t>(d);
    }
    throw wrong_type(name(key), "an integer", *v);
  }
  std::optional<std::string> string(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw wrong_type(name(key), "a string", *v);
    return v->get<std::string>();
  }

 private:
  const json& object_;
  std::string prefix_;
};

ApiError unsupported(const std::string& field, const std::string& what) {
  return ApiError::bad_request(fmt::format("'{}': {} is not supported", field, what), field, "unsupported_parameter");
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

std::string message_content(const json& content, const std::string& field) {
  if (content.is_null()) return {};
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw wrong_type(field, "a string or a list of content parts", content);
  std::string text;
  for (const json& part : content) {
    if (!part.is_object()) throw wrong_type(field, "a list of content parts (objects)", part);
    const Fields f(part, field + ".");
    const auto type = f.string("type");
    if (type && *type != "text") throw unsupported(field, fmt::format("content of type '{}'", *type));
    const auto part_text = f.string("text");
    if (!part_text) throw ApiError::bad_request(fmt::format("'{}': a text part needs 'text'", field), field);
    text += *part_text;
  }
  return text;
}

void parse_messages(const json& body, ParsedRequest& r) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) {
    throw ApiError::bad_request("'messages' is required", "messages", "missing_required_parameter");
  }
  if (!it->is_array()) throw wrong_type("messages", "a list of messages", *it);
  if (it->empty()) throw ApiError::bad_request("'messages' must not be empty", "messages");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) throw wrong_type(field, "an object", m);
    const Fields f(m, field + ".");
    const auto role = f.string("role");
    if (!role) throw ApiError::bad_request(fmt::format("'{}.role' is required", field), field + ".role",
                                           "missing_required_parameter");
    ChatMessage msg;
    if (*role == "system" || *role == "developer") msg.role = "system";
    else if (*role == "user" || *role == "assistant") msg.role = *role;
    else throw ApiError::bad_request(fmt::format("'{}.role': unsupported role '{}'", field, *role), field + ".role");
    auto content = m.find("content");
    msg.content = content == m.end() ? std::string() : message_content(*content, field + ".content");
    r.messages.push_back(std::move(msg));
  }
}

void parse_stop(const Fields& f, ParsedRequest& r) {
  const json* v = f.get("stop");
  if (!v) return;
  auto add = [&](const json& s) {
    if (!s.is_string()) throw wrong_type("stop", "a string or a list of strings", s);
    std::string text = s.get<std::string>();
    if (text.empty()) throw ApiError::bad_request("'stop' strings must not be empty", "stop");
    r.options.stop.push_back(std::move(text));
  };
  if (v->is_array()) {
    for (const json& s : *v) add(s);
  } else {
    add(*v);
  }
}

void refuse_unsupported(const Fields& f, Endpoint endpoint) {
  if (auto n = f.integer("n"); n && *n != 1) {
    throw ApiError::bad_request(fmt::format("'n' must be 1 (one completion per request), got {}", *n), "n");
  }
  if (auto best_of = f.integer("best_of"); best_of && *best_of != 1) throw unsupported("best_of", "best_of > 1");
  if (auto echo = f.boolean("echo"); echo && *echo) throw unsupported("echo", "echo");
  if (const json* lp = f.get("logprobs")) {
    const bool off = (lp->is_boolean() && !lp->get<bool>()) || (lp->is_number_integer() && lp->get<int64_t>() == 0);
    if (!off) throw unsupported("logprobs", "logprobs");
  }
  if (auto top = f.integer("top_logprobs"); top && *top != 0) throw unsupported("top_logprobs", "top_logprobs");
  for (const char* key : {"presence_penalty", "frequency_penalty"}) {
    if (auto p = f.number(key); p && *p != 0.0) throw unsupported(key, "a non-zero value");
  }
  if (const json* bias = f.get("logit_bias"); bias && !bias->empty()) throw unsupported("logit_bias", "logit_bias");
  if (endpoint == Endpoint::kCompletions) {
    if (auto suffix = f.string("suffix"); suffix && !suffix->empty()) throw unsupported("suffix", "suffix");
  } else if (const json* tools = f.get("tools"); tools && !tools->empty()) {
    throw unsupported("tools", "tool calling");
  }
}

}  // namespace

ParsedRequest parse_request(std::string_view text, Endpoint endpoint) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    throw ApiError::bad_request(fmt::format("the request body is not valid JSON: {}", e.what()), {}, "invalid_json");
  }
  if (!body.is_object()) throw ApiError::bad_request("the request body must be a JSON object", {}, "invalid_json");

  ParsedRequest r;
  r.endpoint = endpoint;
  const Fields f(body);
  if (auto model = f.string("model")) r.model = *model;
  if (endpoint == Endpoint::kCompletions) parse_prompt(body, r);
  else parse_messages(body, r);
  refuse_unsupported(f, endpoint);

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
    r.seed_given = true;
  }
  parse_stop(f, r);
  if (auto ignore_eos = f.boolean("ignore_eos")) r.options.ignore_eos = *ignore_eos;
  if (auto stream = f.boolean("stream")) r.stream = *stream;
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    if (auto usage = Fields(*so, "stream_options.").boolean("include_usage")) r.include_usage = *usage;
  }
  return r;
}

}  // namespace dspark
