// Engine: the token-flattened step machine (DESIGN §3). It owns the request queue, the
// paged KV cache and the proposer, and runs the target model one step at a time:
//
//   1. propose   drafts for every decoding request, in one batched proposer call;
//   2. schedule  a token budget: running requests first (their uncomputed tokens, or for
//                a decoding one its anchor + drafts), then waiting ones (prompt chunks:
//                chunked prefill, so a long prompt never stalls running decodes); KV
//                blocks are reserved for everything fed, and when they run out the most
//                recently admitted request is preempted (freed, recomputed later);
//   3. forward   one target pass over the concatenation of all scheduled tokens;
//   4. verify    per request: the target's p at every fed draft position, the rejection
//                sampler (greedy or sampled), commit accepted + recovered/bonus tokens,
//                stop at EOS, stop strings, max_tokens or the context limit;
//   5. report    new text and tokens through each request's callback; release finished
//                requests' blocks and proposer slots.
//
// Single-threaded: one thread owns an Engine (no locks inside). Invalid requests are
// rejected by add_request with an Error; a failure while serving one request finishes
// that request with an error and leaves the others running.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/captured_states.h"
#include "engine/generation.h"
#include "engine/prefix_cache.h"
#include "engine/request.h"
#include "kernels/sampling.h"
#include "model/kv_pool.h"
#include "model/tokenizer.h"
#include "model/transformer.h"
#include "spec/drafter_cost.h"
#include "spec/prefix_scheduler.h"
#include "spec/proposer.h"
#include "spec/rejection_sampler.h"
#include "spec/spec_metrics.h"

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
  // Where step time goes (wall seconds, summed over steps).
  double forward_seconds = 0;                   // target forwards
  double draft_seconds = 0;                     // proposer propose() calls
  double context_seconds = 0;                   // proposer observe() and catch_up() calls (drafter context)

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
  int64_t add_request(std::vector<int32_t> prompt, const GenerationOptions& options, OutputCallback on_output);
  // Finishes the request at the next step (kCancelled) and frees its blocks. Unknown or
  // finished ids are ignored.
  void cancel(int64_t request_id);

  // Runs one step; returns false when there was nothing to run.
  bool step();
  bool has_unfinished() const { return !running_.empty() || !waiting_.empty(); }

  const SpecDecodeMetrics& spec_metrics() const { return spec_metrics_; }
  const ScheduleMetrics& schedule_metrics() const { return schedule_metrics_; }
  const StepCostTable* step_cost() const { return options_.step_cost.get(); }
  EngineStats stats() const;
  const Transformer& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  Proposer* proposer() { return proposer_.get(); }

 private:
  struct Scheduled {
    Request* request;
    int32_t num_real;    // committed tokens fed (prefill chunk, or the anchor)
    int32_t num_drafts;  // drafts fed after them (only when num_real reaches the end)
    int32_t first_row;   // row of its first token in the flat batch
  };

  void drop_cancelled();
  void propose_drafts();
  // kAdaptive: cut each decoding request's drafts to the prefix scheduler's length.
  void choose_verified_lengths();
  // Survival estimates a_{r,1..n} for one request's drafts, into `out`.
  void survival_of(const Request& request, std::vector<double>& out) const;
  // Survival factor of a position for proposers without confidences: the measured pass
  // rate once the position has enough observations, 1 before.
  double acceptance_estimate(size_t position) const;
  void expected_survival(std::vector<double>& out) const;
  void schedule();
  void preempt(Request& victim);
  // Admission of a waiting request (it holds no blocks): takes the longest cached prefix
  // of its tokens (with prefix caching) and reserves KV for its first chunk of at most
  // `budget` tokens. Returns the chunk's length, or 0 (holding nothing) when it does not fit.
  int64_t admit(Request& request, int64_t budget);
  // Whether a running request is prefilling whole blocks of this one's prefix that it has
  // not computed yet. Admission then waits (in queue order) for them to be cached instead
  // of computing them twice: the n choices of one prompt, or requests that arrive together
  // with one system prompt, prefill it once.
  bool awaits_shared_prefill(const Request& request) const;
  // The request's cached-prefix positions, replayed to a hidden-state proposer before its
  // first computed rows.
  void show_cached_prefix(Request& request);
  void run_forward_and_commit();
  // logits: [num_drafts + 1, vocab]. decoding_round: the request fed only its anchor (and
  // drafts), as opposed to the last chunk of a prefill.
  void commit(Request& request, const float* logits, bool decoding_round);
  // Appends one token; returns true when the request finished.
  bool append_token(Request& request, int32_t token, RequestOutput& out);
  // The log-probabilities reported for `token`, emitted from one row of the target:
  // logits [vocab] and probs [vocab] (p under the request's transform); history as for
  // that row's p. A greedy request's p is one-hot, so its report is the log-softmax of
  // the penalised logits instead.
  TokenLogprob token_logprob(const float* logits, const float* probs, int32_t token, const Request& request,
                             std::span<const int32_t> history);
  void finish(Request& request, FinishReason reason, RequestOutput& out);
  void release(Request& request);

  Transformer& model_;
  const Tokenizer& tokenizer_;
  EngineOptions options_;
  std::unique_ptr<Proposer> proposer_;
  KvPool kv_;
  BlockAllocator allocator_;
  std::unique_ptr<PrefixCache> prefix_cache_;        // null without prefix caching
  std::unique_ptr<CapturedStates> captured_states_;  // prefix caching for a hidden-state proposer
  LogitsProcessor logits_processor_;
  RejectionSampler rejection_sampler_;
  SpecDecodeMetrics spec_metrics_;
  ScheduleMetrics schedule_metrics_;
  PrefixScheduler prefix_scheduler_;

  int64_t next_request_id_ = 1;
  std::deque<std::unique_ptr<Request>> waiting_;
  std::vector<std::unique_ptr<Request>> running_;  // admission order
  std::vector<int32_t> free_slots_;
  std::vector<int64_t> cancel_requests_;
  EngineStats counters_;

  // Per-step buffers, sized once.
  std::vector<Scheduled> scheduled_;
  std::vector<int32_t> batch_tokens_;      // [max_batch_tokens]
  std::vector<SequenceSlice> batch_slices_;  // [max_running]
  std::vector<int32_t> batch_logit_rows_;  // [max_batch_tokens]
  std::vector<float> probs_;               // [max drafts + 1, vocab] target p of one request
  std::vector<int32_t> history_;           // committed + drafts, for the penalties
  std::vector<float> logprob_probs_;       // [vocab] a greedy request's untruncated p (logprobs)
  std::vector<DraftRequest> draft_requests_;
  std::vector<Draft> draft_results_;
  std::vector<Request*> draft_owners_;
  std::vector<CommittedHiddenStates> committed_;  // [max_running] for hidden-state proposers
  std::vector<Request*> deciding_;                // decoding requests with drafts this step
  std::vector<std::vector<double>> survival_;     // [max_running][K] a_{r,i}
  std::vector<double> expected_survival_;          // [K] drafter budget estimate
  std::vector<std::span<const double>> survival_views_;
  std::vector<int32_t> chosen_lengths_;           // [max_running]
  DrafterCost drafter_cost_;                      // measured propose() time (adaptive budget)
  int64_t steps_without_drafting_ = 0;            // steps the drafter's cost alone kept it idle
};

// Runs one request to completion on an otherwise idle engine (the CLI's generate and
// eval use this); on_text receives final text pieces as they arrive.
GenerationResult generate_one(Engine& engine, std::vector<int32_t> prompt, const GenerationOptions& options,
                              const std::function<void(std::string_view)>& on_text = {});

}  // namespace dspark
