// The vocabulary of one generation request, shared by the engine, the CLI and the server:
// what the caller asks for (GenerationOptions) and what it gets back (GenerationResult).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/sampling.h"
#include "spec/spec_metrics.h"

namespace dspark {

struct CompiledJsonSchema;  // structured/json_schema.h
class CompiledRegex;        // structured/regex_dfa.h
class CompiledGrammar;      // structured/gbnf_grammar.h

enum class FinishReason { kLength, kStop, kEos, kCancelled, kError };
// OpenAI's names: "length", "stop" (stop strings and EOS), "cancelled", "error".
std::string_view finish_reason_name(FinishReason reason);

// Stop strings are matched on the engine thread after every step, so one request's list
// is bounded: it costs every other request in the batch time, not only its own.
inline constexpr size_t kMaxStopStrings = 64;
inline constexpr size_t kMaxStopStringBytes = 256;
inline constexpr size_t kMaxStopTokenIds = 64;

// The log-probability of one generated token under the distribution it was drawn from
// (the request's transform: penalties, temperature, top-k/top-p/min-p; for a greedy
// request the log-softmax of the penalised logits), and the most likely alternatives.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;                            // -inf outside the kept set
  int32_t rank = 1;                                // 1 + the tokens more likely than it
  std::vector<std::pair<int32_t, float>> top;      // [top n] (token, logprob), most likely first
};

inline constexpr int32_t kMaxTopLogprobs = 20;

// What shape the output must have (OpenAI's response_format).
enum class ResponseFormat {
  kText,
  kJsonObject,  // a JSON object: the target's logits are masked to tokens that keep the
                // output a prefix of one (structured/grammar_constraint.h); the request
                // finishes ("stop") when the object closes
  kJsonSchema,  // a JSON value valid under GenerationOptions::json_schema, likewise masked
                // (structured/schema_matcher.h); finishes ("stop") when the value is complete
  kRegex,       // a full match of GenerationOptions::regex (vLLM's guided regex and choice), likewise
                // masked; EOS is allowed at every full match, and the output finishes ("stop")
                // where no byte can follow
  kGrammar,     // a string of GenerationOptions::gbnf_grammar (a context-free grammar: vLLM's
                // guided grammar, llama.cpp's grammar), likewise masked; EOS is allowed wherever
                // the output is one, and the output finishes ("stop") where no byte can follow
};

struct GenerationOptions {
  int64_t max_tokens = 128;             // generated tokens at most
  SamplingParams sampling;              // temperature 0 = greedy
  std::vector<std::string> stop;        // stop strings (not included in the output); <= kMaxStopStrings, each <= kMaxStopStringBytes
  bool include_stop_str_in_output = false;  // the text keeps the stop string that ended it
  std::vector<int32_t> stop_token_ids;  // tokens that end the output as EOS does (finish "stop", the token
                                        // not included); <= kMaxStopTokenIds, ids in the vocabulary
  bool ignore_eos = false;              // keep going past EOS (benchmarks); stop_token_ids still stop
  // EOS (unless ignored) and stop_token_ids are masked out of the target's distribution
  // until the output has this many tokens, so it cannot end sooner (max_tokens and the
  // context still can). In [0, max_tokens]; not with a constrained response_format, whose
  // grammar says where the output ends.
  int64_t min_tokens = 0;
  int32_t logprobs = -1;                // -1 = off; n in [0, 20]: each token's log-prob and the top n
  // -1 = off; n in [0, 20]: each prompt token's log-prob after the tokens before it (the
  // first has none) under the target's own distribution (log-softmax of its logits: no
  // sampling transform), and the top n. The prompt is then computed whole, never taken
  // from the prefix cache (a cached block has KV but no logits).
  int32_t prompt_logprobs = -1;
  int32_t max_spec_tokens = -1;         // drafts verified per round at most (0 = no speculation);
                                        // -1 = as the engine's speculator and schedule decide
  ResponseFormat response_format = ResponseFormat::kText;
  // kJsonSchema: the compiled schema (structured/json_schema.h compile_json_schema), shared
  // and immutable; required then, ignored otherwise.
  std::shared_ptr<const CompiledJsonSchema> json_schema;
  // kRegex: the compiled automaton (CompiledRegex::compile), shared and immutable; required
  // then, ignored otherwise.
  std::shared_ptr<const CompiledRegex> regex;
  // kGrammar: the compiled grammar (CompiledGrammar::compile), shared and immutable; required
  // then, ignored otherwise.
  std::shared_ptr<const CompiledGrammar> gbnf_grammar;

  void validate() const;                // throws Error (kInvalidRequest) naming the bad field
};

struct GenerationResult {
  std::vector<int32_t> tokens;          // generated ids (EOS excluded)
  std::vector<TokenLogprob> logprobs;   // parallel to tokens when options.logprobs >= 0
  std::vector<TokenLogprob> prompt_logprobs;  // prompt tokens 1.. when options.prompt_logprobs >= 0
  std::string text;                     // decoded, cut at a stop string
  FinishReason finish_reason = FinishReason::kLength;
  std::string error;                    // set when finish_reason is kError
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;     // of those, served from the prefix cache
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
