#include "engine/generation.h"

#include "core/check.h"

namespace dspark {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return "length";
    case FinishReason::kStop:
    case FinishReason::kEos: return "stop";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "stop";
}

void GenerationOptions::validate() const {
  DSPARK_CHECK_REQUEST(max_tokens >= 0, "max_tokens must be >= 0, got {}", max_tokens);
  DSPARK_CHECK_REQUEST(logprobs >= -1 && logprobs <= kMaxTopLogprobs,
                       "logprobs must be in [0, {}] (or -1 = off), got {}", kMaxTopLogprobs, logprobs);
  DSPARK_CHECK_REQUEST(prompt_logprobs >= -1 && prompt_logprobs <= kMaxTopLogprobs,
                       "prompt_logprobs must be in [0, {}] (or -1 = off), got {}", kMaxTopLogprobs, prompt_logprobs);
  DSPARK_CHECK_REQUEST(max_spec_tokens >= -1, "max_spec_tokens must be >= 0 (or -1 = the engine's), got {}",
                       max_spec_tokens);
  DSPARK_CHECK_REQUEST(stop.size() <= kMaxStopStrings, "stop: at most {} stop strings, got {}", kMaxStopStrings,
                       stop.size());
  for (const std::string& s : stop) {
    DSPARK_CHECK_REQUEST(s.size() <= kMaxStopStringBytes, "stop: a stop string has at most {} bytes, got {}",
                         kMaxStopStringBytes, s.size());
  }
  DSPARK_CHECK_REQUEST(stop_token_ids.size() <= kMaxStopTokenIds, "stop_token_ids: at most {} ids, got {}",
                       kMaxStopTokenIds, stop_token_ids.size());
  for (const int32_t id : stop_token_ids) DSPARK_CHECK_REQUEST(id >= 0, "stop_token_ids: a negative id {}", id);
  DSPARK_CHECK_REQUEST(min_tokens >= 0 && min_tokens <= max_tokens, "min_tokens must be in [0, max_tokens = {}], got {}",
                       max_tokens, min_tokens);
  DSPARK_CHECK_REQUEST(min_tokens == 0 || response_format == ResponseFormat::kText,
                       "min_tokens cannot be combined with a constrained output format (its grammar says where "
                       "the output ends)");
  DSPARK_CHECK_REQUEST(!ignore_eos || (response_format != ResponseFormat::kRegex &&
                                       response_format != ResponseFormat::kGrammar),
                       "ignore_eos cannot be combined with a regex, choice or grammar format (the output may end "
                       "at any full match)");
  DSPARK_CHECK_REQUEST(response_format != ResponseFormat::kJsonSchema || json_schema,
                       "response_format json_schema without a compiled schema");
  DSPARK_CHECK_REQUEST(response_format != ResponseFormat::kRegex || regex, "a regex format without a compiled regex");
  DSPARK_CHECK_REQUEST(response_format != ResponseFormat::kGrammar || gbnf_grammar,
                       "a grammar format without a compiled grammar");
  sampling.validate();
}

}  // namespace dspark
