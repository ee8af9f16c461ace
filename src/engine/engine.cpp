#include "engine/engine.h"

#include <algorithm>
#include <exception>

#include <fmt/ranges.h>

#include "core/check.h"
#include "core/clock.h"
#include "engine/token_logprobs.h"

namespace dspark {
namespace {

// max_positions: the context plus the drafts one verification may write past it.
int64_t default_num_blocks(const EngineOptions& o, int64_t max_positions) {
  const int64_t per_sequence = (max_positions + o.block_size - 1) / o.block_size + 1;
  return o.max_running * per_sequence;
}

KvPoolOptions kv_pool_options(const EngineOptions& o, int64_t max_positions) {
  KvPoolOptions kv;
  kv.block_size = o.block_size;
  kv.num_blocks = o.num_kv_blocks > 0 ? o.num_kv_blocks : default_num_blocks(o, max_positions);
  kv.dtype = o.kv_dtype;
  return kv;
}

}  // namespace

void EngineOptions::validate(const Transformer& model) const {
  DSPARK_CHECK(max_running >= 1, "max_running must be >= 1, got {}", max_running);
  DSPARK_CHECK(max_running <= model.options().max_sequences,
               "max_running {} exceeds the model's max_sequences {}", max_running, model.options().max_sequences);
  DSPARK_CHECK(max_batch_tokens >= max_running,
               "max_batch_tokens ({}) must be >= max_running ({}): every running request needs a token per step",
               max_batch_tokens, max_running);
  DSPARK_CHECK(max_batch_tokens <= model.options().max_batch_tokens,
               "max_batch_tokens {} exceeds the model's max_batch_tokens {}", max_batch_tokens,
               model.options().max_batch_tokens);
  DSPARK_CHECK(prefill_chunk >= 1, "prefill_chunk must be >= 1, got {}", prefill_chunk);
  DSPARK_CHECK(block_size >= 1, "block_size must be >= 1, got {}", block_size);
  DSPARK_CHECK(num_kv_blocks >= 0, "num_kv_blocks must be >= 0, got {}", num_kv_blocks);
  DSPARK_CHECK(max_waiting >= 1, "max_waiting must be >= 1, got {}", max_waiting);
  DSPARK_CHECK(spec_schedule != SpecSchedule::kAdaptive || step_cost != nullptr,
               "the adaptive speculation schedule needs a step-cost profile (SPS table)");
}

Engine::Engine(Transformer& model, const Tokenizer& tokenizer, const EngineOptions& options,
               std::unique_ptr<Proposer> proposer)
    : model_(model),
      tokenizer_(tokenizer),
      options_((options.validate(model), options)),
      proposer_(std::move(proposer)),
      kv_(model.config(),
          kv_pool_options(options_, model.max_model_len() + (proposer_ ? proposer_->num_speculative_tokens() : 0))),
      allocator_(kv_.num_blocks()),
      logits_processor_(model.config().vocab_size),
      rejection_sampler_(model.config().vocab_size),
      spec_metrics_(proposer_ ? proposer_->num_speculative_tokens() : 0) {
  const int64_t vocab = model.config().vocab_size;
  const int64_t k = proposer_ ? proposer_->num_speculative_tokens() : 0;
  DSPARK_CHECK(kv_.num_blocks() * kv_.block_size() >= model.max_model_len() + k,
               "the KV cache ({} blocks of {}) cannot hold one sequence of the context length {}", kv_.num_blocks(),
               kv_.block_size(), model.max_model_len());
  for (int32_t s = static_cast<int32_t>(options_.max_running) - 1; s >= 0; --s) free_slots_.push_back(s);
  scheduled_.reserve(options_.max_running);
  batch_tokens_.reserve(options_.max_batch_tokens);
  batch_slices_.reserve(options_.max_running);
  batch_logit_rows_.reserve(options_.max_batch_tokens);
  probs_.resize((k + 1) * vocab);
  logprob_probs_.resize(vocab);
  history_.reserve(model.max_model_len() + k);
  draft_requests_.reserve(options_.max_running);
  draft_results_.resize(options_.max_running);
  draft_owners_.reserve(options_.max_running);
  committed_.reserve(options_.max_running);
  running_.reserve(options_.max_running);
  schedule_metrics_.verified_length_counts.assign(k + 1, 0);
  survival_.assign(options_.max_running, std::vector<double>(k));
  expected_survival_.assign(k, 0.0);
  survival_views_.reserve(options_.max_running);
  chosen_lengths_.reserve(options_.max_running);
  deciding_.reserve(options_.max_running);
  drafter_cost_ = DrafterCost(options_.max_running);
  const bool observes = proposer_ && proposer_->capabilities().needs_target_hidden_states;
  if (observes) {
    DSPARK_CHECK(model.options().capture_layers == proposer_->target_layers(),
                 "the proposer needs the target's hidden states of layers [{}], but the target captures [{}]",
                 fmt::join(proposer_->target_layers(), ", "), fmt::join(model.options().capture_layers, ", "));
  }
  if (options_.enable_prefix_caching) {
    prefix_cache_ = std::make_unique<PrefixCache>(kv_.num_blocks(), kv_.block_size());
    if (observes) {
      captured_states_ = std::make_unique<CapturedStates>(
          kv_.num_blocks(), kv_.block_size(), static_cast<int64_t>(model.options().capture_layers.size()),
          model.config().hidden_size);
    }
  }
}

Engine::~Engine() = default;

int64_t Engine::add_request(std::vector<int32_t> prompt, const GenerationOptions& options, OutputCallback on_output) {
  options.validate();
  DSPARK_CHECK(!prompt.empty(), "the prompt is empty (no tokens to condition on)");
  DSPARK_CHECK(static_cast<int64_t>(prompt.size()) < model_.max_model_len(),
               "the prompt has {} tokens; the context is {} tokens and at least one must be left to generate",
               prompt.size(), model_.max_model_len());
  const int64_t vocab = model_.config().vocab_size;
  for (int32_t id : prompt) DSPARK_CHECK(id >= 0 && id < vocab, "prompt token id {} outside the vocabulary [0, {})", id, vocab);
  DSPARK_CHECK(static_cast<int64_t>(waiting_.size()) < options_.max_waiting, "the queue is full ({} waiting requests)",
               waiting_.size());
  auto request = std::make_unique<Request>(next_request_id_++, std::move(prompt), options, tokenizer_, std::move(on_output));
  request->arrival_time = now_seconds();
  if (proposer_) request->spec_metrics = SpecDecodeMetrics(proposer_->num_speculative_tokens());
  const int64_t id = request->id;
  waiting_.push_back(std::move(request));
  return id;
}

void Engine::cancel(int64_t request_id) { cancel_requests_.push_back(request_id); }

EngineStats Engine::stats() const {
  EngineStats s = counters_;
  s.num_running = static_cast<int64_t>(running_.size());
  s.num_waiting = static_cast<int64_t>(waiting_.size());
  s.kv_blocks_used = allocator_.num_used();
  s.kv_blocks_total = allocator_.num_blocks();
  s.kv_blocks_cached = allocator_.num_cached();
  return s;
}

bool Engine::step() {
  drop_cancelled();
  if (!has_unfinished()) return false;
  propose_drafts();
  if (options_.spec_schedule == SpecSchedule::kAdaptive) choose_verified_lengths();
  schedule();
  if (scheduled_.empty()) return false;
  run_forward_and_commit();
  ++counters_.num_steps;
  ++schedule_metrics_.steps;
  return true;
}

void Engine::drop_cancelled() {
  if (cancel_requests_.empty()) return;
  for (int64_t id : cancel_requests_) {
    auto matches = [id](const std::unique_ptr<Request>& r) { return r->id == id; };
    if (auto it = std::find_if(running_.begin(), running_.end(), matches); it != running_.end()) {
      RequestOutput out;
      finish(**it, FinishReason::kCancelled, out);
      (*it)->on_output(out);
      running_.erase(it);
    } else if (auto wit = std::find_if(waiting_.begin(), waiting_.end(), matches); wit != waiting_.end()) {
      RequestOutput out;
      finish(**wit, FinishReason::kCancelled, out);
      (*wit)->on_output(out);
      waiting_.erase(wit);
    }
  }
  cancel_requests_.clear();
}

void Engine::propose_drafts() {
  for (auto& r : running_) {
    r->drafts.clear();
    r->draft_probs = nullptr;
    r->draft_confidence = nullptr;
  }
  if (!proposer_) return;
  draft_requests_.clear();
  draft_owners_.clear();
  // Adaptive: never draft what the scheduler could not admit at this load, even if every
  // draft were certain to be accepted; and skip drafting when the acceptance measured so
  // far says that the drafts, with the drafter's own time, cannot beat plain decoding at
  // this load (drafting for a busy machine is pure loss).
  int32_t budget = proposer_->num_speculative_tokens();
  if (options_.spec_schedule == SpecSchedule::kAdaptive) {
    int64_t decoding = 0;
    for (const auto& r : running_) decoding += r->is_decoding() ? 1 : 0;
    const StepCostTable& cost = *options_.step_cost;
    const double draft_seconds = drafter_cost_.seconds(decoding);
    budget = PrefixScheduler::max_useful_drafts(decoding, budget, cost, draft_seconds);
    expected_survival(expected_survival_);
    const int32_t useful = PrefixScheduler::expected_useful_drafts(decoding, budget, expected_survival_, cost);
    budget = PrefixScheduler::expected_useful_drafts(decoding, budget, expected_survival_, cost, draft_seconds);
    // When only the drafter's measured time says no, draft now and then anyway, so that a
    // stale or unlucky measurement cannot switch the drafter off for good.
    constexpr int64_t kRemeasureEvery = 64;
    if (budget == 0 && useful > 0 && ++steps_without_drafting_ >= kRemeasureEvery) budget = useful;
    if (budget > 0) steps_without_drafting_ = 0;
  }
  for (auto& r : running_) {
    if (!r->is_decoding()) continue;
    // Never draft past what could be committed: max_tokens and the context both bound it.
    const int64_t room_tokens = r->options.max_tokens - r->num_output_tokens() - 1;
    const int64_t room_context = model_.max_model_len() - static_cast<int64_t>(r->tokens.size()) - 1;
    const int64_t cap = r->options.max_spec_tokens >= 0 ? std::min<int64_t>(budget, r->options.max_spec_tokens) : budget;
    const int64_t max_drafts = std::clamp<int64_t>(std::min(room_tokens, room_context), 0, cap);
    DraftRequest dr;
    dr.slot = r->slot;
    dr.tokens = r->tokens;
    dr.num_prompt_tokens = r->num_prompt_tokens;
    dr.sampling = &r->options.sampling;
    dr.rng = &r->draft_rng;
    dr.max_drafts = static_cast<int32_t>(max_drafts);
    draft_requests_.push_back(dr);
    draft_owners_.push_back(r.get());
  }
  if (draft_requests_.empty()) return;
  std::span<Draft> results(draft_results_.data(), draft_requests_.size());
  int64_t drafting = 0;
  for (const DraftRequest& dr : draft_requests_) drafting += dr.max_drafts > 0 ? 1 : 0;
  const double catch_up_start = now_seconds();
  proposer_->catch_up(draft_requests_);
  const double start = now_seconds();
  schedule_metrics_.context_seconds += start - catch_up_start;
  proposer_->propose(draft_requests_, results);
  const double seconds = now_seconds() - start;
  schedule_metrics_.draft_seconds += seconds;
  if (drafting > 0) drafter_cost_.record(drafting, seconds);
  for (size_t i = 0; i < draft_owners_.size(); ++i) {
    Request& r = *draft_owners_[i];
    const Draft& d = results[i];
    DSPARK_CHECK(static_cast<int64_t>(d.tokens.size()) <= draft_requests_[i].max_drafts,
                 "proposer returned {} drafts, more than the {} asked for", d.tokens.size(), draft_requests_[i].max_drafts);
    r.drafts.assign(d.tokens.begin(), d.tokens.end());
    r.draft_probs = d.probs;
    r.draft_confidence = d.confidence;
  }
}

double Engine::acceptance_estimate(size_t position) const {
  // The pass rate measured at this position (accepted once every earlier draft was; not
  // accepted / drafted, which is already the survival through it and would compound in
  // the product). Until a position has been reached often enough, assume its drafts
  // survive (optimistic), so that drafting at a busy start still gathers the
  // measurements. The drafter budget and the admission must agree on this: a budget that
  // drafts positions the admission then never verifies would pay for the drafter and
  // never measure it.
  constexpr int64_t kMinObservations = 32;
  const auto& reached = spec_metrics_.reached_per_position;
  const bool measured = position < reached.size() && reached[position] >= kMinObservations;
  return measured ? spec_metrics_.position_pass_rate(static_cast<int32_t>(position)) : 1.0;
}

void Engine::expected_survival(std::vector<double>& out) const {
  double a = 1.0;
  for (size_t i = 0; i < out.size(); ++i) {
    a *= acceptance_estimate(i);
    out[i] = a;
  }
}

void Engine::survival_of(const Request& r, std::vector<double>& out) const {
  const size_t n = r.drafts.size();
  double a = 1.0;
  for (size_t i = 0; i < n; ++i) {
    const double c = r.draft_confidence ? static_cast<double>(r.draft_confidence[i]) : acceptance_estimate(i);
    a *= std::clamp(c, 0.0, 1.0);
    out[i] = a;
  }
}

void Engine::choose_verified_lengths() {
  deciding_.clear();
  survival_views_.clear();
  int64_t decoding = 0;
  for (auto& r : running_) {
    if (!r->is_decoding()) continue;
    ++decoding;
    if (r->drafts.empty()) continue;
    std::vector<double>& a = survival_[deciding_.size()];
    survival_of(*r, a);
    survival_views_.emplace_back(a.data(), r->drafts.size());
    deciding_.push_back(r.get());
  }
  if (decoding == 0) return;
  // Requests without drafts still verify their anchor: they count in R with no candidates.
  for (int64_t i = static_cast<int64_t>(deciding_.size()); i < decoding; ++i) survival_views_.emplace_back();
  chosen_lengths_.assign(survival_views_.size(), 0);
  // The drafter has run for the requests that drafted: its time is the step's overhead.
  const double predicted = prefix_scheduler_.choose(survival_views_, *options_.step_cost, chosen_lengths_,
                                                    drafter_cost_.seconds(static_cast<int64_t>(deciding_.size())));
  schedule_metrics_.predicted_accepted += predicted;
  for (size_t i = 0; i < deciding_.size(); ++i) deciding_[i]->drafts.resize(chosen_lengths_[i]);
}

void Engine::preempt(Request& victim) {
  release(victim);
  victim.num_computed = 0;
  victim.drafts.clear();
  victim.state = RequestState::kWaiting;
  ++counters_.num_preemptions;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &victim; });
  // Preempted requests go back to the front of the queue, ahead of new arrivals.
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

void Engine::schedule() {
  scheduled_.clear();
  int64_t budget = options_.max_batch_tokens;
  int32_t row = 0;
  // Running requests first, in admission order. When KV blocks run out, the most
  // recently admitted request is preempted (its blocks freed, recomputed later); if that
  // is the request being scheduled itself, it goes back to the queue.
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Request& r = *running_[i];
    const int64_t uncomputed = r.num_uncomputed();
    const int64_t num_real = std::min({uncomputed, options_.prefill_chunk, budget});
    int64_t num_drafts = 0;
    if (num_real == uncomputed) num_drafts = std::min<int64_t>(static_cast<int64_t>(r.drafts.size()), budget - num_real);
    bool preempted_self = false;
    while (!r.blocks.reserve(r.num_computed + num_real + num_drafts, kv_.block_size(), allocator_)) {
      if (running_.size() > i + 1) {
        preempt(*running_.back());
      } else {
        preempt(r);
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;
    r.drafts.resize(num_drafts);
    scheduled_.push_back({&r, static_cast<int32_t>(num_real), static_cast<int32_t>(num_drafts), row});
    row += static_cast<int32_t>(num_real + num_drafts);
    budget -= num_real + num_drafts;
  }
  // Then admit waiting requests (FIFO) while there is budget, a free slot and KV room.
  while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(running_.size()) < options_.max_running) {
    Request& r = *waiting_.front();
    if (prefix_cache_ && awaits_shared_prefill(r)) break;
    const int64_t num_real = admit(r, budget);
    if (num_real == 0) break;  // no preemption for admission
    r.state = RequestState::kRunning;
    r.slot = free_slots_.back();
    free_slots_.pop_back();
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    scheduled_.push_back({&r, static_cast<int32_t>(num_real), 0, row});
    row += static_cast<int32_t>(num_real);
    budget -= num_real;
  }
}

int64_t Engine::admit(Request& r, int64_t budget) {
  if (prefix_cache_) r.num_computed = prefix_cache_->attach(r.tokens, r.blocks, r.prefix_keys, allocator_);
  const int64_t num_real = std::min({r.num_uncomputed(), options_.prefill_chunk, budget});
  if (!r.blocks.reserve(r.num_computed + num_real, kv_.block_size(), allocator_)) {
    r.blocks.release_all(allocator_);
    r.num_computed = 0;
    return 0;
  }
  if (r.num_cached_prompt_tokens < 0) {
    // Counted at the first admission only: a preempted request finding its own blocks
    // again is not a prompt served from the cache.
    r.num_cached_prompt_tokens = std::min(r.num_computed, r.num_prompt_tokens);
    counters_.prefix_cache_queries += r.num_prompt_tokens;
    counters_.prefix_cache_hits += r.num_cached_prompt_tokens;
  }
  r.num_unobserved = r.num_computed;
  return num_real;
}

bool Engine::awaits_shared_prefill(const Request& r) const {
  const int64_t block = kv_.block_size();
  for (const auto& q : running_) {
    if (q->num_computed >= q->num_prompt_tokens) continue;  // not prefilling
    // Whole blocks r could take from q once q has computed them (r's last token excluded).
    const size_t n = std::min(r.tokens.size() - 1, q->tokens.size());
    const auto diverge = std::mismatch(r.tokens.begin(), r.tokens.begin() + static_cast<std::ptrdiff_t>(n), q->tokens.begin());
    const int64_t shared = (diverge.first - r.tokens.begin()) / block * block;
    if (shared > q->num_computed) return true;
  }
  return false;
}

void Engine::show_cached_prefix(Request& r) {
  if (r.num_unobserved == 0) return;
  for (int64_t b = 0; b < r.num_unobserved / kv_.block_size(); ++b) {
    committed_.push_back(captured_states_->block(r.slot, r.blocks, b));
  }
  r.num_unobserved = 0;
}

void Engine::run_forward_and_commit() {
  batch_tokens_.clear();
  batch_slices_.clear();
  batch_logit_rows_.clear();
  for (Scheduled& s : scheduled_) {
    Request& r = *s.request;
    s.first_row = static_cast<int32_t>(batch_tokens_.size());
    batch_tokens_.insert(batch_tokens_.end(), r.tokens.begin() + r.num_computed,
                         r.tokens.begin() + r.num_computed + s.num_real);
    batch_tokens_.insert(batch_tokens_.end(), r.drafts.begin(), r.drafts.begin() + s.num_drafts);
    batch_slices_.push_back({s.num_real + s.num_drafts, static_cast<int32_t>(r.num_computed), r.blocks.data()});
    if (r.num_computed + s.num_real == static_cast<int64_t>(r.tokens.size())) {
      // Reaches the end of the committed tokens: logits for the last one and every draft.
      for (int32_t j = 0; j <= s.num_drafts; ++j) batch_logit_rows_.push_back(s.first_row + s.num_real - 1 + j);
    }
  }
  const double forward_start = now_seconds();
  const ForwardResult result = model_.forward(ForwardBatch{batch_tokens_, batch_slices_, batch_logit_rows_}, kv_);
  schedule_metrics_.forward_seconds += now_seconds() - forward_start;

  const int64_t vocab = model_.config().vocab_size;
  const bool observe = proposer_ && proposer_->capabilities().needs_target_hidden_states;
  committed_.clear();
  int64_t logit_row = 0;
  for (const Scheduled& s : scheduled_) {
    Request& r = *s.request;
    const int32_t start = static_cast<int32_t>(r.num_computed);
    const int32_t slot = r.slot;
    const bool reaches_end = r.num_computed + s.num_real == static_cast<int64_t>(r.tokens.size());
    if (captured_states_) {
      // Every fed row, drafts too: rejected ones lie beyond num_computed, where they are
      // overwritten before any block holding them is cached (as for the K/V).
      captured_states_->store(r.blocks, start, s.num_real + s.num_drafts,
                              result.hidden_layer(0) + static_cast<int64_t>(s.first_row) * model_.config().hidden_size,
                              result.hidden_stride);
    }
    if (!reaches_end) {
      r.num_computed += s.num_real;  // a prefill chunk; nothing to sample yet
    } else {
      r.num_computed += s.num_real - 1;  // the anchor's KV is accounted for in commit()
      try {
        commit(r, result.logits + logit_row * vocab, /*decoding_round=*/s.num_real == 1);
      } catch (const std::exception& e) {
        RequestOutput out;
        out.error = e.what();
        finish(r, FinishReason::kError, out);
        r.on_output(out);
      }
      logit_row += s.num_drafts + 1;
    }
    if (prefix_cache_ && r.state != RequestState::kFinished) {
      prefix_cache_->insert(r.tokens, r.num_computed, r.blocks, r.prefix_keys, allocator_);
    }
    if (observe && r.state != RequestState::kFinished) {
      if (captured_states_) show_cached_prefix(r);
      // Rows of this request whose positions are now committed: the fed real tokens and
      // the accepted drafts (num_computed has moved past exactly those).
      CommittedHiddenStates c;
      c.slot = slot;
      c.start_position = start;
      c.num_positions = static_cast<int32_t>(r.num_computed) - start;
      c.hidden = result.hidden_layer(0) + static_cast<int64_t>(s.first_row) * model_.config().hidden_size;
      c.layer_stride = result.hidden_stride;
      c.hidden_size = model_.config().hidden_size;
      committed_.push_back(c);
    }
  }
  if (!committed_.empty()) {
    const double observe_start = now_seconds();
    proposer_->observe(committed_);
    schedule_metrics_.context_seconds += now_seconds() - observe_start;
  }
  // Retire finished requests.
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->state == RequestState::kFinished) it = running_.erase(it);
    else ++it;
  }
}

void Engine::commit(Request& r, const float* logits, bool decoding_round) {
  const int64_t vocab = model_.config().vocab_size;
  const int32_t num_drafts = static_cast<int32_t>(r.drafts.size());
  const SamplingParams& sp = r.options.sampling;
  // Target distributions p_0..p_L under the request's transform; the repetition penalty
  // at draft position j sees the drafts before it, exactly as plain decoding would.
  const bool penalised = sp.uses_history();
  if (penalised) {
    history_.assign(r.tokens.begin(), r.tokens.end());
    history_.insert(history_.end(), r.drafts.begin(), r.drafts.end());
  }
  for (int32_t j = 0; j <= num_drafts; ++j) {
    const std::span<const int32_t> history =
        penalised ? std::span<const int32_t>(history_.data(), r.tokens.size() + j) : std::span<const int32_t>();
    logits_processor_.to_probs(logits + j * vocab, probs_.data() + j * vocab, sp, history, r.num_prompt_tokens);
  }
  VerifyInput in;
  in.draft_tokens = r.drafts;
  in.draft_probs = r.draft_probs;
  in.target_probs = probs_.data();
  in.vocab_size = vocab;
  in.greedy = sp.greedy();
  in.position_keyed = sp.position_keyed;
  in.seed = sp.seed;
  in.first_position = static_cast<int64_t>(r.tokens.size());  // where row 0's token goes
  const VerifyResult verdict = rejection_sampler_.verify(in, r.rng);
  if (num_drafts > 0) {
    const std::span<const float> confidence =
        r.draft_confidence ? std::span<const float>(r.draft_confidence, num_drafts) : std::span<const float>();
    r.spec_metrics.record_round(num_drafts, verdict.num_accepted, confidence);
    spec_metrics_.record_round(num_drafts, verdict.num_accepted, confidence);
  }
  if (proposer_ && decoding_round) {
    ScheduleMetrics& sm = schedule_metrics_;
    ++sm.request_rounds;
    sm.verified_drafts += num_drafts;
    sm.realized_accepted += verdict.num_accepted;
    if (static_cast<size_t>(num_drafts) < sm.verified_length_counts.size()) ++sm.verified_length_counts[num_drafts];
  }
  // The anchor and the accepted drafts now have valid KV; the new token does not yet.
  r.num_computed += 1 + verdict.num_accepted;

  RequestOutput out;
  bool finished = false;
  // Row j of the target's distributions decided the token emitted at draft position j;
  // its history is everything committed before that token.
  auto emit = [&](int32_t j, int32_t token) {
    const size_t history_length = r.tokens.size();
    const size_t before = out.token_ids.size();
    finished = append_token(r, token, out);
    if (r.options.logprobs >= 0 && out.token_ids.size() > before) {
      const std::span<const int32_t> history =
          penalised ? std::span<const int32_t>(history_.data(), history_length) : std::span<const int32_t>();
      out.logprobs.push_back(token_logprob(logits + j * vocab, probs_.data() + j * vocab, token, r, history));
    }
  };
  for (int32_t j = 0; j < verdict.num_accepted && !finished; ++j) emit(j, r.drafts[j]);
  if (!finished) emit(verdict.num_accepted, verdict.next_token);
  r.drafts.clear();
  if (!out.token_ids.empty() || !out.text.empty() || out.finished) {
    out.request_id = r.id;
    out.prompt_tokens = r.num_prompt_tokens;
    out.output_tokens = r.num_output_tokens();
    r.on_output(out);
  }
}

TokenLogprob Engine::token_logprob(const float* logits, const float* probs, int32_t token, const Request& r,
                                   std::span<const int32_t> history) {
  const int64_t vocab = model_.config().vocab_size;
  const SamplingParams& sp = r.options.sampling;
  if (sp.greedy()) {
    SamplingParams softmax = sp;
    softmax.temperature = 1.0f;
    softmax.top_k = 0;
    softmax.top_p = 1.0f;
    softmax.min_p = 0.0f;
    logits_processor_.to_probs(logits, logprob_probs_.data(), softmax, history, r.num_prompt_tokens);
    probs = logprob_probs_.data();
  }
  return dspark::token_logprob(probs, vocab, token, std::min<int32_t>(r.options.logprobs, static_cast<int32_t>(vocab)));
}

bool Engine::append_token(Request& r, int32_t token, RequestOutput& out) {
  if (r.first_token_time == 0) r.first_token_time = now_seconds();
  const auto& eos = tokenizer_.eos_ids();
  if (!r.options.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) {
    finish(r, FinishReason::kEos, out);
    return true;
  }
  r.tokens.push_back(token);
  out.token_ids.push_back(token);
  out.text += r.text_stream.append(r.decoder.push(token));
  if (r.text_stream.stopped()) {
    finish(r, FinishReason::kStop, out);
    return true;
  }
  if (r.num_output_tokens() >= r.options.max_tokens ||
      static_cast<int64_t>(r.tokens.size()) >= model_.max_model_len()) {
    finish(r, FinishReason::kLength, out);
    return true;
  }
  return false;
}

void Engine::finish(Request& r, FinishReason reason, RequestOutput& out) {
  if (reason != FinishReason::kStop && reason != FinishReason::kCancelled && reason != FinishReason::kError) {
    out.text += r.text_stream.append(r.decoder.flush());
  }
  out.text += r.text_stream.finish();
  r.finish_reason = reason;
  r.finish_time = now_seconds();
  r.state = RequestState::kFinished;
  release(r);
  out.request_id = r.id;
  out.finished = true;
  out.finish_reason = reason;
  out.prompt_tokens = r.num_prompt_tokens;
  out.cached_prompt_tokens = std::max<int64_t>(r.num_cached_prompt_tokens, 0);
  out.output_tokens = r.num_output_tokens();
  out.spec_metrics = &r.spec_metrics;
}

void Engine::release(Request& r) {
  // What it computed stays cached for later requests, unless it failed mid-step (its
  // bookkeeping may then be behind what was written).
  const bool failed = r.state == RequestState::kFinished && r.finish_reason == FinishReason::kError;
  if (prefix_cache_ && !failed) prefix_cache_->insert(r.tokens, r.num_computed, r.blocks, r.prefix_keys, allocator_);
  r.blocks.release_all(allocator_);
  r.prefix_keys.num_offered = 0;
  if (r.slot >= 0) {
    if (proposer_) proposer_->release(r.slot);
    free_slots_.push_back(r.slot);
    r.slot = -1;
  }
}

GenerationResult generate_one(Engine& engine, std::vector<int32_t> prompt, const GenerationOptions& options,
                              const std::function<void(std::string_view)>& on_text) {
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  const double start = now_seconds();
  bool done = false;
  engine.add_request(std::move(prompt), options, [&](const RequestOutput& out) {
    if (result.tokens.empty() && !out.token_ids.empty()) result.ttft_seconds = now_seconds() - start;
    result.tokens.insert(result.tokens.end(), out.token_ids.begin(), out.token_ids.end());
    result.logprobs.insert(result.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
    result.text += out.text;
    if (on_text && !out.text.empty()) on_text(out.text);
    if (out.finished) {
      done = true;
      result.finish_reason = out.finish_reason;
      result.error = out.error;
      result.cached_prompt_tokens = out.cached_prompt_tokens;
      if (out.spec_metrics) result.spec_metrics = *out.spec_metrics;
    }
  });
  while (!done && engine.step()) {
  }
  DSPARK_CHECK(done, "the engine stopped before the request finished (KV cache too small?)");
  if (result.ttft_seconds == 0) result.ttft_seconds = now_seconds() - start;
  result.total_seconds = now_seconds() - start;
  return result;
}

}  // namespace dspark
