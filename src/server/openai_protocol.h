// The OpenAI wire protocol as dspark serves it: parsing /v1/completions and
// /v1/chat/completions request bodies into a ParsedRequest, and building the response
// bodies, stream chunks and error bodies.
//
// Parsing follows vLLM's rules: unknown top-level fields are accepted and ignored; a
// known field with the wrong JSON type, or a value outside its range, is an ApiError
// (status 400) that names the field in "param". null counts as absent. Features that are
// recognised but not supported (n != 1, best_of, echo, logprobs, presence/frequency
// penalties, logit_bias, suffix, tools) are refused with 400 rather than silently ignored.
//
// Supported fields: model, prompt (string, [string], token ids, [[token ids]]) or
// messages (role + content as a string or a list of {"type": "text", "text"} parts),
// max_tokens / max_completion_tokens (>= 1), temperature (>= 0), top_p (0, 1],
// top_k (-1 or 0 = off, else >= 1), min_p [0, 1], repetition_penalty (> 0), seed
// (any integer), stop (string or list of non-empty strings), ignore_eos, stream,
// stream_options.include_usage, n (1 only).
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/generation.h"
#include "server/chat_format.h"

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

 private:
  int status_;
  std::string message_, type_, param_, code_;
};

enum class Endpoint { kCompletions, kChat };

struct ParsedRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;                 // empty when not given
  std::string prompt_text;           // completions, text prompt
  std::vector<int32_t> prompt_ids;   // completions, token-id prompt
  bool prompt_is_ids = false;
  std::vector<ChatMessage> messages; // chat
  GenerationOptions options;         // seed and max_tokens filled only when given
  bool max_tokens_given = false;
  bool seed_given = false;
  bool stream = false;
  bool include_usage = false;        // stream_options.include_usage
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
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// Non-streaming response body.
nlohmann::json make_response(const ResponseContext& ctx, const std::string& text, FinishReason reason,
                             const Usage& usage);
// One stream chunk: new text and, on the last one, the finish reason. For chat, `first`
// adds "role": "assistant" to the delta.
nlohmann::json make_chunk(const ResponseContext& ctx, const std::string& text, std::optional<FinishReason> reason,
                          bool first);
// The final usage-only chunk (stream_options.include_usage): "choices": [].
nlohmann::json make_usage_chunk(const ResponseContext& ctx, const Usage& usage);

// "data: {json}\n\n". Invalid UTF-8 in strings is replaced, never thrown.
std::string sse_event(const nlohmann::json& payload);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";
// A JSON body as text, with the same UTF-8 replacement.
std::string dump_json(const nlohmann::json& value);

}  // namespace dspark
