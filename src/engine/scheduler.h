// Scheduler: which requests run in a step and with how many tokens (DESIGN §3), and the KV
// blocks they hold. It owns the queues (waiting FIFO; running in admission order), the
// block allocator, the prefix cache and the proposer slots, and describes each step as a
// plain list for the model runner; it never runs a model.
//
//   running requests first: the uncomputed tokens of each (a prefill chunk) or, for a
//     decoding one, its anchor and the drafts it was given; KV blocks are reserved for
//     everything fed, and when they run out the most recently admitted request is
//     preempted (its blocks freed, back to the front of the queue, recomputed later);
//   then waiting requests, FIFO, while there is budget, a free slot and KV room, each
//     starting from the longest cached prefix of its tokens (engine/prefix_cache.h).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/prefix_cache.h"
#include "engine/request.h"
#include "model/block_allocator.h"
#include "spec/proposer.h"

namespace dspark {

struct SchedulerOptions {
  int64_t max_running = 16;       // requests admitted at once
  int64_t max_batch_tokens = 256; // tokens per step
  int64_t prefill_chunk = 256;    // prompt tokens of one request per step at most
  int64_t num_kv_blocks = 0;      // > 0
  int64_t block_size = 16;        // positions per KV block
  bool enable_prefix_caching = true;
};

// One request's share of a step.
struct ScheduledRequest {
  Request* request = nullptr;
  int32_t num_real = 0;    // committed tokens fed from num_computed on (prefill chunk, or the anchor)
  int32_t num_drafts = 0;  // drafts fed after them (only when the real tokens reach the end)
};

struct SchedulerStats {
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;  // prompt tokens of admitted requests (once each)
  int64_t prefix_cache_hits = 0;     // of those, tokens whose KV came from the cache
};

class Scheduler {
 public:
  // proposer: told when a slot's request ends (release); may be null.
  Scheduler(const SchedulerOptions& options, Proposer* proposer);

  void add(std::unique_ptr<Request> request) { waiting_.push_back(std::move(request)); }
  // Takes a running or waiting request out of the scheduler (its blocks and slot still
  // held: finish it, then release()). Null for unknown ids.
  std::unique_ptr<Request> remove(int64_t request_id);

  // Plans the step. A decoding request's drafts are cut to what fits (resized in place).
  const std::vector<ScheduledRequest>& schedule();

  // Registers the request's newly computed whole blocks in the prefix cache (no-op
  // without prefix caching).
  void cache_computed_blocks(Request& request);
  // Frees the request's KV blocks (caching what it computed, unless it failed) and its
  // proposer slot.
  void release(Request& request);
  // Releases and drops the running requests that finished.
  void retire_finished();

  const std::vector<std::unique_ptr<Request>>& running() const { return running_; }
  size_t num_waiting() const { return waiting_.size(); }
  bool has_unfinished() const { return !running_.empty() || !waiting_.empty(); }
  const BlockAllocator& allocator() const { return allocator_; }
  int64_t block_size() const { return options_.block_size; }
  const SchedulerStats& stats() const { return stats_; }

 private:
  void preempt(Request& victim);
  // Admission of a waiting request (it holds no blocks): takes the longest cached prefix
  // of its tokens and reserves KV for its first chunk of at most `budget` tokens. Returns
  // the chunk's length, or 0 (holding nothing) when it does not fit.
  int64_t admit(Request& request, int64_t budget);
  // Whether a running request is prefilling whole blocks of this one's prefix that it has
  // not computed yet. Admission then waits (in queue order) for them to be cached instead
  // of computing them twice: the n choices of one prompt, or requests that arrive together
  // with one system prompt, prefill it once.
  bool awaits_shared_prefill(const Request& request) const;

  SchedulerOptions options_;
  Proposer* proposer_;
  BlockAllocator allocator_;
  std::unique_ptr<PrefixCache> prefix_cache_;  // null without prefix caching
  std::deque<std::unique_ptr<Request>> waiting_;
  std::vector<std::unique_ptr<Request>> running_;  // admission order
  std::vector<int32_t> free_slots_;
  std::vector<ScheduledRequest> scheduled_;        // [max_running] this step's plan
  SchedulerStats stats_;
};

}  // namespace dspark
