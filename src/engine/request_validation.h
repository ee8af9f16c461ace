// The one place that decides whether a generation request can run at all: a prompt that is
// not empty, whose ids are in the vocabulary and which leaves room in the context for at
// least one generated token, with valid options. The engine, the engine loop (on the
// caller's thread, so that the caller gets the error synchronously), the server and the
// CLI all call this, so each rule and its sentence exist once.
//
// Every failure is a dspark::Error of kind kInvalidRequest; a prompt without room in the
// context is a ContextLengthError, so that the server can add OpenAI's
// "context_length_exceeded" code without reading the sentence.
#pragma once

#include <cstdint>
#include <span>

#include "core/check.h"
#include "engine/generation.h"

namespace dspark {

class ContextLengthError : public Error {
 public:
  ContextLengthError(std::string location, std::string message)
      : Error(ErrorKind::kInvalidRequest, std::move(location), std::move(message)) {}
};

// The prompt alone: not empty, every id in [0, vocab_size), fewer than max_model_len tokens.
void validate_prompt(std::span<const int32_t> prompt, int64_t vocab_size, int64_t max_model_len);

// The options (GenerationOptions::validate), then the prompt.
void validate_request(std::span<const int32_t> prompt, const GenerationOptions& options, int64_t vocab_size,
                      int64_t max_model_len);

}  // namespace dspark
