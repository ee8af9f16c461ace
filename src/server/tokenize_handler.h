// POST /tokenize and POST /detokenize, as vLLM serves them:
//
//   /tokenize    {"prompt": "..."} (add_special_tokens, default true), or {"messages":
//                [...]} rendered by the chat format as /v1/chat/completions renders them
//                (add_generation_prompt, default true; tools; chat_template_kwargs)
//                -> {"count", "max_model_len", "tokens": [...]}
//   /detokenize  {"tokens": [...]} -> {"prompt": "..."}
//
// "model", when given, must be the served name (404 otherwise). Errors are ApiErrors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "server/chat_format.h"

namespace dspark {

struct TokenizeContext {
  const Tokenizer& tokenizer;
  const ChatFormat& chat_format;
  std::string model_name;
  int64_t max_model_len = 0;
  int64_t vocab_size = 0;
};

nlohmann::json tokenize(std::string_view body, const TokenizeContext& ctx);
nlohmann::json detokenize(std::string_view body, const TokenizeContext& ctx);

}  // namespace dspark
