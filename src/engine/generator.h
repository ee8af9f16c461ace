// Generator: runs one request to completion on a Transformer — chunked prefill of the
// prompt, then token-by-token decoding with the request's sampling parameters, stopping
// at EOS, a stop string or max_tokens. Streams final text through a callback. This is the
// engine behind `dspark generate`; the serving engine batches many of these.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/block_allocator.h"
#include "kernels/sampling.h"
#include "model/kv_pool.h"
#include "model/tokenizer.h"
#include "model/transformer.h"

namespace dspark {

enum class FinishReason { kLength, kStop, kEos };
std::string_view finish_reason_name(FinishReason reason);  // "length", "stop" (EOS too)

struct GenerationOptions {
  int64_t max_tokens = 128;             // generated tokens at most
  SamplingParams sampling;              // temperature 0 = greedy
  std::vector<std::string> stop;        // stop strings (not included in the output)
  bool ignore_eos = false;              // keep going past EOS (benchmarks)
  int64_t prefill_chunk = 0;            // prompt tokens per forward; 0 = max_batch_tokens
};

struct GenerationResult {
  std::vector<int32_t> tokens;          // generated ids (EOS excluded)
  std::string text;                     // decoded, cut at a stop string
  FinishReason finish_reason = FinishReason::kLength;
  int64_t prompt_tokens = 0;
  double ttft_seconds = 0;              // start -> first generated token sampled
  double total_seconds = 0;
};

class Generator {
 public:
  // The pool must have room for max_model_len positions of one sequence.
  Generator(Transformer& model, const Tokenizer& tokenizer, KvPool& kv);

  // on_text (optional) receives final text pieces as they become available.
  GenerationResult generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                            const std::function<void(std::string_view)>& on_text = {});

 private:
  Transformer& model_;
  const Tokenizer& tokenizer_;
  KvPool& kv_;
  BlockAllocator allocator_;
  LogitsProcessor logits_processor_;
  std::vector<float> probs_;  // [vocab]
};

}  // namespace dspark
