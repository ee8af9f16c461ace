// Request: everything the engine keeps about one generation request — its committed
// tokens, how many of them have KV in the cache, its KV blocks, sampling state, the drafts
// proposed for the current step, and timings (text is made outside, engine/detokenizer.h).
//
// Token bookkeeping (token-flattened, as vLLM v1): tokens = prompt + committed output.
// num_computed counts the leading tokens whose K/V is in the cache. A request whose
// uncomputed tail is longer than one token is still prefilling; once only the last
// committed token is uncomputed, it is decoding, and that token is the anchor x₀ of the
// next verification round. Rejected drafts leave stale K/V beyond num_computed, which the
// next step simply overwrites — rollback is bookkeeping only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"
#include "model/block_allocator.h"
#include "engine/generation.h"
#include "engine/prefix_cache.h"
#include "spec/confidence_calibrator.h"
#include "structured/grammar_constraint.h"
#include "spec/spec_metrics.h"

namespace dspark {

// What Engine::step reports for each request the step changed.
struct RequestOutput {
  int64_t request_id = 0;
  std::string text;                    // newly final text; filled by a Detokenizer (the engine leaves it empty)
  std::vector<int32_t> token_ids;      // newly committed tokens
  std::vector<TokenLogprob> logprobs;  // parallel to token_ids when the request asked for them
  std::vector<TokenLogprob> prompt_logprobs;  // options.prompt_logprobs >= 0: with the first output
  bool finished = false;
  FinishReason finish_reason = FinishReason::kLength;
  std::string error;                   // non-empty when the request failed
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;    // prompt tokens whose KV came from the prefix cache
  int64_t output_tokens = 0;           // total so far
  SpecDecodeMetrics spec_metrics;      // the request's own counts; set when finished
};

enum class RequestState { kWaiting, kRunning, kFinished };

struct Request {
  Request(int64_t id, std::vector<int32_t> prompt, GenerationOptions options);

  int64_t id;
  GenerationOptions options;
  RequestState state = RequestState::kWaiting;
  int32_t slot = -1;                   // proposer slot while running

  int64_t num_prompt_tokens;
  std::vector<int32_t> tokens;         // prompt + committed output
  int64_t num_computed = 0;            // leading tokens whose KV is cached
  BlockTable blocks;
  PrefixKeys prefix_keys;              // prefix caching: the keys of its full blocks
  int64_t num_cached_prompt_tokens = -1;  // prompt positions the cache gave at first admission; -1 before
  int64_t num_unobserved = 0;          // cached positions not yet shown to a hidden-state proposer
  // options.prompt_logprobs >= 0: prompt positions whose next token's log-prob is known
  // (position p gives token p + 1's), and those not yet handed out (the first output takes them).
  int64_t num_prompt_logprobs = 0;
  std::vector<TokenLogprob> prompt_logprobs;

  Rng rng;                             // target sampling and verification
  Rng draft_rng;                       // the drafter's own stream
  std::vector<int32_t> drafts;         // this step's drafts (copied from the proposer)
  // The first draft the step left unverified (cut by the prefix schedule or the token
  // budget), or -1: a round whose verified drafts all survive tells how it would have fared
  // (OutputProcessor::Verdict::unverified_survival, spec/confidence_calibrator.h).
  int32_t unverified_draft = -1;
  const float* draft_probs = nullptr;  // [drafts, vocab] q, or null (one-hot)
  const float* draft_confidence = nullptr;  // [drafts] or null: what the schedule and metrics see
  RequestConfidence confidence;        // this round's corrected confidences (EngineOptions::adapt_confidence)

  std::unique_ptr<GrammarConstraint> grammar;  // a constrained response_format: the output as a grammar prefix
  SpecDecodeMetrics spec_metrics;

  double arrival_time = 0;
  double first_token_time = 0;         // 0 until the first token
  double finish_time = 0;
  FinishReason finish_reason = FinishReason::kLength;

  int64_t num_output_tokens() const { return static_cast<int64_t>(tokens.size()) - num_prompt_tokens; }
  int64_t num_uncomputed() const { return static_cast<int64_t>(tokens.size()) - num_computed; }
  bool is_decoding() const { return num_uncomputed() == 1; }
  // Prompt positions still needing the target's logits for prompt_logprobs.
  bool needs_prompt_logits() const {
    return options.prompt_logprobs >= 0 && num_prompt_logprobs < num_prompt_tokens - 1;
  }
  // Verifies only the first n drafts this step, remembering the first one left out.
  void keep_drafts(size_t n) {
    if (n >= drafts.size()) return;
    unverified_draft = drafts[n];
    drafts.resize(n);
  }
  // No drafts this step (none made yet, verified, or the request preempted).
  void clear_drafts() {
    drafts.clear();
    unverified_draft = -1;
  }
};

}  // namespace dspark
