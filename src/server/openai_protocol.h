// The OpenAI wire protocol as dspark serves it: parsing /v1/completions and
// /v1/chat/completions request bodies into a ParsedRequest, and building the response
// bodies, stream chunks and error bodies.
//
// Parsing follows vLLM's rules: unknown top-level fields are accepted and ignored; a
// known field with the wrong JSON type, or a value outside its range, is an ApiError
// (status 400) that names the field in "param". null counts as absent. Features that are
// recognised but not supported (best_of, echo on chat, suffix) are refused with 400 rather
// than silently ignored.
//
// Supported fields: model, prompt (string, [string], token ids, [[token ids]]) or
// messages (role system/developer/user/assistant/tool/function; content a string, null,
// or text parts joined with newlines; tool_calls whose JSON-text arguments are parsed for
// the template; other fields passed to the template as sent), tools (passed to the chat
// template), tool_choice ("auto", "none", "required" or a named function: tool_choice.h),
// add_generation_prompt (default true),
// chat_template_kwargs (further template variables, as vLLM),
// max_tokens / max_completion_tokens (>= 1), temperature (>= 0), top_p (0, 1],
// top_k (-1 or 0 = off, else >= 1), min_p [0, 1], repetition_penalty (> 0), seed
// (any integer), stop (string or list of at most kMaxStopStrings non-empty strings of at most kMaxStopStringBytes), ignore_eos, stream,
// stream_options.include_usage, stop_token_ids, include_stop_str_in_output and min_tokens
// (vLLM's), echo (completions: the prompt and, with logprobs, its logprobs before the
// completion), prompt_logprobs (vLLM's, 0..20; not streamed), n (1..kMaxChoices),
// presence_penalty and frequency_penalty
// [-2, 2], logit_bias ({"token id": bias in [-100, 100]}), logprobs (completions: 0..20
// alternatives; chat: a boolean, with top_logprobs 0..20), and dspark's
// num_speculative_tokens (>= 0: at most this many drafts verified per round for this
// request; 0 turns speculation off for it).
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "engine/generation.h"
#include "server/chat_format.h"
#include "server/tool_calls.h"
#include "server/tool_choice.h"

namespace dspark {

// An error as the client sees it: HTTP status plus OpenAI's
// {"error": {"message", "type", "param", "code"}} body.
class ApiError : public std::exception {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = {}, std::string code = {});

  int status() const { return status_; }
  const std::string& message() const { return message_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }  // empty = null
  const std::string& code() const { return code_; }    // empty = null
  const char* what() const noexcept override { return message_.c_str(); }

  nlohmann::json body() const;

  static ApiError bad_request(std::string message, std::string param = {}, std::string code = "invalid_value");
  static ApiError not_found(std::string message, std::string param = {}, std::string code = {});
  // 404 for a request naming a model other than the served one.
  static ApiError model_not_found(const std::string& requested, const std::string& served);
  // An engine error as the client sees it: status from its kind (http_status), its
  // message() (never the source location), and OpenAI's type and code for it
  // ("context_length_exceeded" for a ContextLengthError, "queue_full" for capacity,
  // "shutting_down" with 503 for a ShuttingDownError). param names the field when known.
  static ApiError from_error(const Error& error, std::string param = {});

 private:
  int status_;
  std::string message_, type_, param_, code_;
};

// invalid request 400, capacity 429, not found 404, internal 500.
int http_status(ErrorKind kind);

enum class Endpoint { kCompletions, kChat };

// The most choices one request may ask for (n); the server may allow fewer (its batch).
inline constexpr int64_t kMaxChoices = 16;

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;                 // empty when not given
  std::string prompt_text;           // completions, text prompt
  std::vector<int32_t> prompt_ids;   // completions, token-id prompt
  bool prompt_is_ids = false;
  ChatConversation chat;             // chat
  ToolChoice tool_choice = ToolChoice::kAuto;  // chat: kRequired / kFunction set options' json_schema
  std::string forced_function;       // kFunction: the function the reply calls
  GenerationOptions options;         // seed and max_tokens filled only when given
  bool max_tokens_given = false;
  bool seed_given = false;
  int64_t n = 1;                     // choices: independent samples of the same prompt
  bool stream = false;
  bool include_usage = false;        // stream_options.include_usage
  bool echo = false;                 // completions: the prompt goes before the completion
  bool reports_prompt_logprobs = false;  // vLLM's prompt_logprobs field (options.prompt_logprobs its n)
};

// Throws ApiError (400) for malformed JSON, a body that is not an object, and any invalid
// field. temperature defaults to 1 as in OpenAI's API.
ParsedRequest parse_request(std::string_view body, Endpoint endpoint);

// What every response of one request shares.
struct ResponseContext {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  bool logprobs = false;  // the request asked for logprobs
  ToolCallFormat tool_call_format = ToolCallFormat::kNone;  // chat with tools: how the model calls them
  std::string forced_function;  // kForcedFunction: the function the reply's arguments are for
  // Completions with echo: the prompt as sent (or decoded from its ids), written before each
  // choice's text.
  std::optional<std::string> echo_text;
  bool reports_prompt_logprobs = false;  // the response carries vLLM's "prompt_logprobs"
  std::vector<int32_t> prompt_tokens;   // with echo or prompt_logprobs: the prompt
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // usage.prompt_tokens_details.cached_tokens (prefix cache)
  // The request's speculative decoding, reported as usage.spec_decode (num_drafts,
  // num_draft_tokens, num_accepted_tokens, mean_acceptance_length) when not null.
  const SpecDecodeMetrics* spec = nullptr;
};

// Non-streaming response body.
// logprobs: the choice's "logprobs" object (openai_logprobs.h), or null. tool_calls (chat):
// the calls parsed from the reply, which then become message.tool_calls with
// finish_reason "tool_calls".
nlohmann::json make_response(const ResponseContext& ctx, const std::string& text, FinishReason reason,
                             const Usage& usage, const nlohmann::json& logprobs = nullptr,
                             const ParsedToolCalls* tool_calls = nullptr);
// The same with several choices (n > 1): each from make_choice, with its index.
nlohmann::json make_choice(const ResponseContext& ctx, int64_t index, const std::string& text, FinishReason reason,
                           const nlohmann::json& logprobs = nullptr, const ParsedToolCalls* tool_calls = nullptr);
nlohmann::json make_response(const ResponseContext& ctx, nlohmann::json choices, const Usage& usage);
// One stream chunk: new text and, on the last one, the finish reason. For chat, `first`
// adds "role": "assistant" to the delta.
nlohmann::json make_chunk(const ResponseContext& ctx, const std::string& text, std::optional<FinishReason> reason,
                          bool first, const nlohmann::json& logprobs = nullptr, int64_t index = 0);
// A chat stream chunk whose delta the caller built (tool-call deltas, tool_call_stream.h),
// with finish_reason as given (null but on the last chunk). `first` adds "role":
// "assistant", and "content": "" to a delta that has neither content nor tool calls.
nlohmann::json make_chat_chunk(const ResponseContext& ctx, nlohmann::json delta, const nlohmann::json& finish_reason,
                               bool first, const nlohmann::json& logprobs = nullptr, int64_t index = 0);
// The final usage-only chunk (stream_options.include_usage): "choices": [].
nlohmann::json make_usage_chunk(const ResponseContext& ctx, const Usage& usage);

// "data: {json}\n\n". Invalid UTF-8 in strings is replaced, never thrown.
std::string sse_event(const nlohmann::json& payload);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
// A JSON body as text, with the same UTF-8 replacement.
std::string dump_json(const nlohmann::json& value);

}  // namespace dspark
