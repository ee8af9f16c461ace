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
  DSPARK_CHECK(max_tokens >= 0, "max_tokens must be >= 0, got {}", max_tokens);
  sampling.validate();
}

}  // namespace dspark
