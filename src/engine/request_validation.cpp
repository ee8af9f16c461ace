#include "engine/request_validation.h"

#include <fmt/format.h>

namespace dspark {

void validate_prompt(std::span<const int32_t> prompt, int64_t vocab_size, int64_t max_model_len) {
  DSPARK_CHECK_REQUEST(!prompt.empty(), "the prompt is empty (no tokens to condition on)");
  // Length before ids: a prompt far too long is reported as such, whatever its contents.
  const auto length = static_cast<int64_t>(prompt.size());
  if (length >= max_model_len) {
    // OpenAI's sentence, which client libraries show as is.
    throw ContextLengthError(
        source_location(__FILE__, __LINE__),
        fmt::format("This model's maximum context length is {} tokens, but the prompt has {} tokens (at least one "
                    "must be left to generate)",
                    max_model_len, length));
  }
  for (const int32_t id : prompt) {
    DSPARK_CHECK_REQUEST(id >= 0 && id < vocab_size, "token id {} is outside the vocabulary [0, {})", id, vocab_size);
  }
}

void validate_request(std::span<const int32_t> prompt, const GenerationOptions& options, int64_t vocab_size,
                      int64_t max_model_len) {
  options.validate();
  validate_prompt(prompt, vocab_size, max_model_len);
  for (const int32_t id : options.stop_token_ids) {
    DSPARK_CHECK_REQUEST(id < vocab_size, "stop_token_ids: token id {} is outside the vocabulary [0, {})", id,
                         vocab_size);
  }
  for (const auto& [id, bias] : options.sampling.logit_bias) {
    DSPARK_CHECK_REQUEST(id < vocab_size, "logit_bias token id {} is outside the vocabulary [0, {})", id, vocab_size);
  }
}

}  // namespace dspark
