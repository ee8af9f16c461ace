// Response-building half of openai_protocol.h.
#include "server/openai_protocol.h"

#include <fmt/format.h>

#include "engine/engine_loop.h"
#include "engine/request_validation.h"

namespace dspark {
namespace {

using nlohmann::json;

json null_or(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json usage_json(const Usage& u) {
  json usage = {{"prompt_tokens", u.prompt_tokens},
                {"completion_tokens", u.completion_tokens},
                {"total_tokens", u.prompt_tokens + u.completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", u.cached_prompt_tokens}}}};
  if (u.spec) {
    usage["spec_decode"] = {{"num_drafts", u.spec->num_drafts},
                            {"num_draft_tokens", u.spec->num_draft_tokens},
                            {"num_accepted_tokens", u.spec->num_accepted_tokens},
                            {"mean_acceptance_length", u.spec->mean_acceptance_length()}};
  }
  return usage;
}

json envelope(const ResponseContext& ctx, const char* object) {
  return {{"id", ctx.id}, {"object", object}, {"created", ctx.created}, {"model", ctx.model}};
}

}  // namespace

ApiError::ApiError(int status, std::string message, std::string type, std::string param, std::string code)
    : status_(status), message_(std::move(message)), type_(std::move(type)), param_(std::move(param)),
      code_(std::move(code)) {}

json ApiError::body() const {
  return {{"error", {{"message", message_}, {"type", type_}, {"param", null_or(param_)}, {"code", null_or(code_)}}}};
}

ApiError ApiError::bad_request(std::string message, std::string param, std::string code) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param), std::move(code));
}

ApiError ApiError::not_found(std::string message, std::string param, std::string code) {
  return ApiError(404, std::move(message), "invalid_request_error", std::move(param), std::move(code));
}

ApiError ApiError::model_not_found(const std::string& requested, const std::string& served) {
  return not_found(fmt::format("The model '{}' does not exist; this server serves '{}'", requested, served), "model",
                   "model_not_found");
}

int http_status(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidRequest: return 400;
    case ErrorKind::kCapacity: return 429;
    case ErrorKind::kNotFound: return 404;
    case ErrorKind::kInternal: return 500;
  }
  return 500;
}

ApiError ApiError::from_error(const Error& error, std::string param) {
  if (dynamic_cast<const ShuttingDownError*>(&error)) {
    return ApiError(503, error.message(), "server_error", {}, "shutting_down");
  }
  switch (error.kind()) {
    case ErrorKind::kInvalidRequest:
      return bad_request(error.message(), std::move(param),
                         dynamic_cast<const ContextLengthError*>(&error) ? "context_length_exceeded" : "invalid_value");
    case ErrorKind::kCapacity: return ApiError(429, error.message(), "rate_limit_error", {}, "queue_full");
    case ErrorKind::kNotFound: return not_found(error.message(), std::move(param));
    case ErrorKind::kInternal: break;
  }
  return ApiError(http_status(error.kind()), error.message(), "server_error");
}

json make_choice(const ResponseContext& ctx, int64_t index, const std::string& text, FinishReason reason,
                 const json& logprobs, const ParsedToolCalls* tool_calls) {
  const std::string finish = tool_calls && calls_finish_as_tool_calls(ctx.tool_call_format)
                                 ? "tool_calls"
                                 : std::string(finish_reason_name(reason));
  if (ctx.endpoint != Endpoint::kChat) {
    return {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish}};
  }
  json message = {{"role", "assistant"}, {"content", text}};
  if (tool_calls) {
    message["content"] = tool_calls->content ? json(*tool_calls->content) : json(nullptr);
    message["tool_calls"] = tool_calls->tool_calls;
  }
  return {{"index", index}, {"message", std::move(message)}, {"logprobs", logprobs}, {"finish_reason", finish}};
}

json make_response(const ResponseContext& ctx, json choices, const Usage& usage) {
  json body = envelope(ctx, ctx.endpoint == Endpoint::kChat ? "chat.completion" : "text_completion");
  body["choices"] = std::move(choices);
  body["usage"] = usage_json(usage);
  return body;
}

json make_response(const ResponseContext& ctx, const std::string& text, FinishReason reason, const Usage& usage,
                   const json& logprobs, const ParsedToolCalls* tool_calls) {
  return make_response(ctx, json::array({make_choice(ctx, 0, text, reason, logprobs, tool_calls)}), usage);
}

json make_chunk(const ResponseContext& ctx, const std::string& text, std::optional<FinishReason> reason, bool first,
                const json& logprobs, int64_t index) {
  const json finish = reason ? json(std::string(finish_reason_name(*reason))) : json(nullptr);
  if (ctx.endpoint == Endpoint::kChat) {
    json delta = json::object();
    if (!text.empty()) delta["content"] = text;
    return make_chat_chunk(ctx, std::move(delta), finish, first, logprobs, index);
  }
  json body = envelope(ctx, "text_completion");
  body["choices"] = json::array({{{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", finish}}});
  return body;
}

json make_chat_chunk(const ResponseContext& ctx, json delta, const json& finish_reason, bool first, const json& logprobs,
                     int64_t index) {
  if (first) {
    delta["role"] = "assistant";
    if (!delta.contains("content") && !delta.contains("tool_calls")) delta["content"] = "";
  }
  json body = envelope(ctx, "chat.completion.chunk");
  body["choices"] = json::array(
      {{{"index", index}, {"delta", std::move(delta)}, {"logprobs", logprobs}, {"finish_reason", finish_reason}}});
  return body;
}

json make_usage_chunk(const ResponseContext& ctx, const Usage& usage) {
  json body = envelope(ctx, ctx.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  body["choices"] = json::array();
  body["usage"] = usage_json(usage);
  return body;
}

std::string dump_json(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& payload) { return "data: " + dump_json(payload) + "\n\n"; }

}  // namespace dspark
