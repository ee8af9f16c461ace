// Engine: the token-flattened step machine (DESIGN §3), in three parts with the engine
// as their conductor. One step:
//
//   1. propose   drafts for every decoding request, in one batched proposer call; with
//                the adaptive schedule, DraftBudget (spec/draft_budget.h) first says how
//                many drafts are worth making and afterwards how many of each to verify;
//   2. schedule  Scheduler (engine/scheduler.h): which requests run with how many tokens
//                (running ones first, then admissions; chunked prefill; KV blocks with
//                prefix caching; preemption when blocks run out), as a plain list;
//   3. run       ModelRunner (engine/model_runner.h): one target forward over the
//                concatenation of all scheduled tokens;
//   4. commit    OutputProcessor (engine/output_processor.h): per request reaching the end
//                of its tokens, verification of its drafts, committed tokens, text, stop
//                conditions; the step's RequestOutputs;
//   5. observe   the committed positions' hidden states to a proposer that needs them;
//                finished requests' blocks and proposer slots released.
//
// step() returns the outputs; nothing calls back into the engine while it runs.
// Single-threaded: one thread owns an Engine (no locks inside). Invalid requests are
// rejected by add_request with an Error; a failure while serving one request finishes
// that request with an error and leaves the others running.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/generation.h"
#include "engine/model_runner.h"
#include "engine/output_processor.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "spec/draft_budget.h"
#include "spec/prefix_scheduler.h"
#include "spec/proposer.h"
#include "spec/spec_metrics.h"
#include "structured/shared_token_masks.h"

namespace dspark {

// How many drafted tokens each request verifies per step.
enum class SpecSchedule {
  kFixed,     // every draft the proposer made (up to num_speculative_tokens)
  kAdaptive,  // the prefix scheduler's choice given predicted survival and SPS(B)
};

struct EngineOptions {
  int64_t max_running = 16;        // requests admitted (holding KV) at once
  int64_t max_batch_tokens = 256;  // tokens per step; must fit the model's max_batch_tokens
  int64_t prefill_chunk = 256;     // prompt tokens of one request per step at most
  int64_t block_size = 16;         // positions per KV block
  int64_t num_kv_blocks = 0;       // 0 = enough for max_running sequences of full length
  DType kv_dtype = DType::kF32;    // KV cache storage
  int64_t max_waiting = 1024;      // queue limit; add_request refuses beyond it
  bool enable_prefix_caching = true;  // share computed KV blocks between requests (engine/prefix_cache.h)
  SpecSchedule spec_schedule = SpecSchedule::kFixed;
  // Correct the drafter's confidences by what verified rounds taught
  // (spec/confidence_calibrator.h); off: the drafter's calibrated confidences as they are.
  bool adapt_confidence = true;
  std::shared_ptr<const StepCostTable> step_cost;  // SPS(B); required for kAdaptive

  void validate(const Transformer& model) const;
};

// What the speculation schedule chose, how its predictions fared, and where step time went.
struct ScheduleMetrics {
  std::vector<int64_t> verified_length_counts;  // [K + 1] request-rounds that verified L drafts
  int64_t steps = 0;                            // steps with at least one decoding request
  int64_t request_rounds = 0;                   // decoding requests summed over those steps
  int64_t verified_drafts = 0;                  // drafts sent to the target
  double predicted_accepted = 0;                // the scheduler's expected accepted drafts
  int64_t realized_accepted = 0;                // accepted drafts among those verified
  int64_t grammar_cut_drafts = 0;               // drafts an output's grammar refused, cut before verification
  // Where step time goes (wall seconds, summed over steps).
  double forward_seconds = 0;                   // target forwards
  double draft_seconds = 0;                     // proposer propose() calls
  double context_seconds = 0;                   // proposer observe() and catch_up() calls (drafter context)
  // Adaptive schedule: the target's decoding steps, measured over the step-cost profile's
  // time for them (spec/step_time_ratio.h); 1 until measured.
  double step_time_ratio = 1;

  double mean_verified_length() const {
    return request_rounds ? static_cast<double>(verified_drafts) / static_cast<double>(request_rounds) : 0.0;
  }
};

struct EngineStats {
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  int64_t num_steps = 0;
  int64_t num_preemptions = 0;
  int64_t kv_blocks_cached = 0;      // blocks holding a cached prefix (in use or evictable)
  int64_t prefix_cache_queries = 0;  // prompt tokens of admitted requests (looked up once each)
  int64_t prefix_cache_hits = 0;     // of those, tokens whose KV came from the cache
};

class Engine {
 public:
  Engine(Transformer& model, const Tokenizer& tokenizer, const EngineOptions& options,
         std::unique_ptr<Proposer> proposer = nullptr);
  ~Engine();

  // Queues a request. Throws Error (and queues nothing) for an empty prompt, a prompt that
  // leaves no room in the context, token ids outside the vocabulary, invalid options, or
  // a full queue. Returns the request id.
  int64_t add_request(std::vector<int32_t> prompt, const GenerationOptions& options);
  // Finishes the request at the next step (kCancelled) and frees its blocks. Unknown or
  // finished ids are ignored.
  void cancel(int64_t request_id);

  // Runs one step. outputs (cleared first) receives what changed for every request the
  // step touched, cancelled ones included even when nothing else ran. Returns false when
  // there was nothing to run.
  bool step(std::vector<RequestOutput>& outputs);
  bool has_unfinished() const { return scheduler_.has_unfinished(); }

  const SpecDecodeMetrics& spec_metrics() const { return spec_metrics_; }
  const ScheduleMetrics& schedule_metrics() const { return schedule_metrics_; }
  const StepCostTable* step_cost() const { return options_.step_cost.get(); }
  EngineStats stats() const;
  const Transformer& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  Proposer* proposer() { return proposer_.get(); }
  const ConfidenceCalibrator& confidence_calibrator() const { return confidence_calibrator_; }

 private:
  // The proposer is taken by reference so that the KV options, computed from it first,
  // see it whatever the order in which the delegating call's arguments are evaluated.
  Engine(Transformer& model, const Tokenizer& tokenizer, const EngineOptions& options,
         std::unique_ptr<Proposer>&& proposer, const KvPoolOptions& kv);
  void drop_cancelled(std::vector<RequestOutput>& outputs);
  void propose_drafts();
  // Points the request's draft_confidence at its draft's confidences as calibrated by
  // verified rounds (EngineOptions::adapt_confidence).
  void correct_confidence(Request& request, const Draft& draft);
  // kAdaptive: cut each decoding request's drafts to the prefix scheduler's length.
  void choose_verified_lengths();
  // After the forward: commit what each scheduled request computed, then show a
  // hidden-state proposer the newly committed positions.
  void commit_step(std::span<const ScheduledRequest> scheduled, std::vector<RequestOutput>& outputs);
  void record_round(Request& request, const OutputProcessor::Verdict& verdict, bool decoding_round);
  // The request's cached-prefix positions, shown to a hidden-state proposer before its
  // first computed rows.
  void show_cached_prefix(Request& request);

  Transformer& model_;
  const Tokenizer& tokenizer_;
  EngineOptions options_;
  std::unique_ptr<Proposer> proposer_;
  Scheduler scheduler_;
  ModelRunner runner_;
  OutputProcessor output_processor_;
  std::unique_ptr<DraftBudget> draft_budget_;  // kAdaptive only
  std::unique_ptr<TokenMasker> token_masker_;  // built at the first constrained request
  std::unique_ptr<SharedGrammarMasks> grammar_masks_;  // with it: masks shared by requests of one grammar
  std::unique_ptr<SharedRegexMasks> regex_masks_;      // and of one regex
  ConfidenceCalibrator confidence_calibrator_;  // learned from every request's verified rounds
  SpecDecodeMetrics spec_metrics_;
  ScheduleMetrics schedule_metrics_;
  int64_t num_steps_ = 0;

  int64_t next_request_id_ = 1;
  std::vector<int64_t> cancel_requests_;

  // Per-step buffers, sized once.
  std::vector<DraftRequest> draft_requests_;
  std::vector<Draft> draft_results_;
  std::vector<Request*> draft_owners_;
  std::vector<CommittedHiddenStates> committed_;  // [max_running] for hidden-state proposers
  std::vector<Request*> deciding_;                // decoding requests with drafts this step
  std::vector<DraftBudget::Candidate> candidates_;  // [max_running] their drafts
  std::vector<int32_t> chosen_lengths_;           // [max_running]
};

// Runs one request to completion on an otherwise idle engine (the CLI's generate and
// eval use this); on_text receives final text pieces as they arrive.
GenerationResult generate_one(Engine& engine, std::vector<int32_t> prompt, const GenerationOptions& options,
                              const std::function<void(std::string_view)>& on_text = {});

}  // namespace dspark
