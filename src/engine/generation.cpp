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
  DSPARK_CHECK_REQUEST(max_spec_tokens >= -1, "max_spec_tokens must be >= 0 (or -1 = the engine's), got {}",
                       max_spec_tokens);
  DSPARK_CHECK_REQUEST(stop.size() <= kMaxStopStrings, "stop: at most {} stop strings, got {}", kMaxStopStrings,
                       stop.size());
  for (const std::string& s : stop) {
    DSPARK_CHECK_REQUEST(s.size() <= kMaxStopStringBytes, "stop: a stop string has at most {} bytes, got {}",
                         kMaxStopStringBytes, s.size());
  }
  sampling.validate();
}

}  // namespace dspark
