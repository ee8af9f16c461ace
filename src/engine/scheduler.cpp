#include "engine/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

Scheduler::Scheduler(const SchedulerOptions& options, Proposer* proposer)
    : options_(options), proposer_(proposer), allocator_(options.num_kv_blocks) {
  if (options_.enable_prefix_caching) {
    prefix_cache_ = std::make_unique<PrefixCache>(options_.num_kv_blocks, options_.block_size);
  }
  for (int32_t s = static_cast<int32_t>(options_.max_running) - 1; s >= 0; --s) free_slots_.push_back(s);
  running_.reserve(options_.max_running);
  scheduled_.reserve(options_.max_running);
}

std::unique_ptr<Request> Scheduler::remove(int64_t id) {
  auto matches = [id](const std::unique_ptr<Request>& r) { return r->id == id; };
  std::unique_ptr<Request> out;
  if (auto it = std::find_if(running_.begin(), running_.end(), matches); it != running_.end()) {
    out = std::move(*it);
    running_.erase(it);
  } else if (auto wit = std::find_if(waiting_.begin(), waiting_.end(), matches); wit != waiting_.end()) {
    out = std::move(*wit);
    waiting_.erase(wit);
  }
  return out;
}

const std::vector<ScheduledRequest>& Scheduler::schedule() {
  scheduled_.clear();
  int64_t budget = options_.max_batch_tokens;
  // Running requests first, in admission order. When KV blocks run out, the most
  // recently admitted request is preempted; if that is the request being scheduled
  // itself, it goes back to the queue.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Request& r = *running_[i];
    const int64_t uncomputed = r.num_uncomputed();
    const int64_t num_real = std::min({uncomputed, options_.prefill_chunk, budget});
    int64_t num_drafts = 0;
    if (num_real == uncomputed) num_drafts = std::min<int64_t>(static_cast<int64_t>(r.drafts.size()), budget - num_real);
    bool preempted_self = false;
    while (!r.blocks.reserve(r.num_computed + num_real + num_drafts, options_.block_size, allocator_)) {
      if (running_.size() > i + 1) {
        preempt(*running_.back());
      } else {
        preempt(r);
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;
    r.keep_drafts(static_cast<size_t>(num_drafts));
    scheduled_.push_back({&r, static_cast<int32_t>(num_real), static_cast<int32_t>(num_drafts)});
    budget -= num_real + num_drafts;
  }
  // Then admit waiting requests (FIFO) while there is budget, a free slot and KV room.
  while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(running_.size()) < options_.max_running) {
    Request& r = *waiting_.front();
    if (prefix_cache_ && !r.needs_prompt_logits() && awaits_shared_prefill(r)) break;
    const int64_t num_real = admit(r, budget);
    if (num_real == 0) break;  // no preemption for admission
    r.state = RequestState::kRunning;
    r.slot = free_slots_.back();
    free_slots_.pop_back();
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    scheduled_.push_back({&r, static_cast<int32_t>(num_real), 0});
    budget -= num_real;
  }
  return scheduled_;
}

void Scheduler::preempt(Request& victim) {
  release(victim);
  victim.num_computed = 0;
  victim.clear_drafts();
  victim.state = RequestState::kWaiting;
  ++stats_.num_preemptions;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &victim; });
  // Preempted requests go back to the front of the queue, ahead of new arrivals.
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

int64_t Scheduler::admit(Request& r, int64_t budget) {
  // A request gathering prompt logprobs computes its prompt itself: cached KV has no logits.
  if (prefix_cache_ && !r.needs_prompt_logits()) {
    r.num_computed = prefix_cache_->attach(r.tokens, r.blocks, r.prefix_keys, allocator_);
  }
  const int64_t num_real = std::min({r.num_uncomputed(), options_.prefill_chunk, budget});
  if (!r.blocks.reserve(r.num_computed + num_real, options_.block_size, allocator_)) {
    r.blocks.release_all(allocator_);
    r.num_computed = 0;
    return 0;
  }
  if (r.num_cached_prompt_tokens < 0) {
    // Counted at the first admission only: a preempted request finding its own blocks
    // again is not a prompt served from the cache.
    r.num_cached_prompt_tokens = std::min(r.num_computed, r.num_prompt_tokens);
    stats_.prefix_cache_queries += r.num_prompt_tokens;
    stats_.prefix_cache_hits += r.num_cached_prompt_tokens;
  }
  r.num_unobserved = r.num_computed;
  return num_real;
}

bool Scheduler::awaits_shared_prefill(const Request& r) const {
  const int64_t block = options_.block_size;
  for (const auto& q : running_) {
    if (q->num_computed >= q->num_prompt_tokens) continue;  // not prefilling
    // Whole blocks r could take from q once q has computed them (r's last token excluded).
    const size_t n = std::min(r.tokens.size() - 1, q->tokens.size());
    const auto diverge =
        std::mismatch(r.tokens.begin(), r.tokens.begin() + static_cast<std::ptrdiff_t>(n), q->tokens.begin());
    const int64_t shared = (diverge.first - r.tokens.begin()) / block * block;
    if (shared > q->num_computed) return true;
  }
  return false;
}

void Scheduler::cache_computed_blocks(Request& r) {
  if (prefix_cache_) prefix_cache_->insert(r.tokens, r.num_computed, r.blocks, r.prefix_keys, allocator_);
}

void Scheduler::release(Request& r) {
  // What it computed stays cached for later requests, unless it failed mid-step (its
  // bookkeeping may then be behind what was written).
  const bool failed = r.state == RequestState::kFinished && r.finish_reason == FinishReason::kError;
  if (!failed) cache_computed_blocks(r);
  r.blocks.release_all(allocator_);
  r.prefix_keys.num_offered = 0;
  if (r.slot >= 0) {
    if (proposer_) proposer_->release(r.slot);
    free_slots_.push_back(r.slot);
    r.slot = -1;
  }
}

void Scheduler::retire_finished() {
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->state == RequestState::kFinished) {
      release(**it);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace dspark
