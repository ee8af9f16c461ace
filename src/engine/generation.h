// The vocabulary of one generation request, shared by the engine, the CLI and the server:
// what the caller asks for (GenerationOptions) and what it gets back (GenerationResult).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/sampling.h"
#include "spec/spec_metrics.h"

namespace dspark {

enum class FinishReason { kLength, kStop, kEos, kCancelled, kError };
// OpenAI's names: "length", "stop" (stop strings and EOS), "cancelled", "error".
std::string_view finish_reason_name(FinishReason reason);

struct GenerationOptions {
  int64_t max_tokens = 128;             // generated tokens at most
  SamplingParams sampling;              // temperature 0 = greedy
  std::vector<std::string> stop;        // stop strings (not included in the output)
  bool ignore_eos = false;              // keep going past EOS (benchmarks)

  void validate() const;                // throws Error naming the bad field
};

struct GenerationResult {
  std::vector<int32_t> tokens;          // generated ids (EOS excluded)
  std::string text;                     // decoded, cut at a stop string
  FinishReason finish_reason = FinishReason::kLength;
  std::string error;                    // set when finish_reason is kError
  int64_t prompt_tokens = 0;
  double ttft_seconds = 0;              // arrival -> first generated token
  double total_seconds = 0;             // arrival -> finished
  SpecDecodeMetrics spec_metrics;       // this request's drafts and acceptances

  // Decode speed: tokens after the first, per second after the first.
  double decode_tokens_per_second() const {
    const double t = total_seconds - ttft_seconds;
    return tokens.size() > 1 && t > 0 ? static_cast<double>(tokens.size() - 1) / t : 0.0;
  }
};

}  // namespace dspark
