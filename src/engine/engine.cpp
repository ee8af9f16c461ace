#include "engine/engine.h"

#include <algorithm>
#include <exception>

#include <fmt/ranges.h>

#include "core/check.h"
#include "core/clock.h"
#include "core/log.h"
#include "engine/detokenizer.h"
#include "engine/request_validation.h"

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

// Tokens of a step in which every request decodes (its anchor and drafts), 0 when any
// request computes part of its prompt: the step-cost profile times decoding steps only.
int64_t decoding_step_tokens(const std::vector<ScheduledRequest>& scheduled) {
  int64_t tokens = 0;
  for (const ScheduledRequest& s : scheduled) {
    if (!s.request->is_decoding()) return 0;
    tokens += s.num_real + s.num_drafts;
  }
  return tokens;
}

// Checks the options against the model and sizes the KV cache for them.
KvPoolOptions checked_kv_options(const EngineOptions& o, const Transformer& model, const Proposer* proposer) {
  o.validate(model);
  const int64_t k = proposer ? proposer->num_speculative_tokens() : 0;
  const KvPoolOptions kv = kv_pool_options(o, model.max_model_len() + k);
  DSPARK_CHECK(kv.num_blocks * kv.block_size >= model.max_model_len() + k,
               "the KV cache ({} blocks of {}) cannot hold one sequence of the context length {}", kv.num_blocks,
               kv.block_size, model.max_model_len());
  if (proposer && proposer->capabilities().needs_target_hidden_states) {
    DSPARK_CHECK(model.options().capture_layers == proposer->target_layers(),
                 "the proposer needs the target's hidden states of layers [{}], but the target captures [{}]",
                 fmt::join(proposer->target_layers(), ", "), fmt::join(model.options().capture_layers, ", "));
  }
  return kv;
}

SchedulerOptions scheduler_options(const EngineOptions& o, const KvPoolOptions& kv) {
  SchedulerOptions s;
  s.max_running = o.max_running;
  s.max_batch_tokens = o.max_batch_tokens;
  s.prefill_chunk = o.prefill_chunk;
  s.num_kv_blocks = kv.num_blocks;
  s.block_size = kv.block_size;
  s.enable_prefix_caching = o.enable_prefix_caching;
  return s;
}

bool observes_hidden_states(const Proposer* proposer) {
  return proposer && proposer->capabilities().needs_target_hidden_states;
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
    : Engine(model, tokenizer, options, std::move(proposer), checked_kv_options(options, model, proposer.get())) {}

Engine::Engine(Transformer& model, const Tokenizer& tokenizer, const EngineOptions& options,
               std::unique_ptr<Proposer>&& proposer, const KvPoolOptions& kv)
    : model_(model),
      tokenizer_(tokenizer),
      options_(options),
      proposer_(std::move(proposer)),
      scheduler_(scheduler_options(options_, kv), proposer_.get()),
      runner_(model, kv, options_.max_batch_tokens, options_.max_running,
              options_.enable_prefix_caching && observes_hidden_states(proposer_.get())),
      output_processor_(model.config().vocab_size, model.max_model_len(),
                        proposer_ ? proposer_->num_speculative_tokens() : 0, tokenizer),
      spec_metrics_(proposer_ ? proposer_->num_speculative_tokens() : 0) {
  const int32_t k = proposer_ ? proposer_->num_speculative_tokens() : 0;
  if (proposer_ && options_.spec_schedule == SpecSchedule::kAdaptive) {
    draft_budget_ = std::make_unique<DraftBudget>(k, options_.max_running, options_.step_cost,
                                                  proposer_->capabilities().drafter_cost);
  }
  draft_requests_.reserve(options_.max_running);
  draft_results_.resize(options_.max_running);
  draft_owners_.reserve(options_.max_running);
  committed_.reserve(options_.max_running);
  deciding_.reserve(options_.max_running);
  candidates_.reserve(options_.max_running);
  chosen_lengths_.reserve(options_.max_running);
  schedule_metrics_.verified_length_counts.assign(k + 1, 0);
}

Engine::~Engine() = default;

int64_t Engine::add_request(std::vector<int32_t> prompt, const GenerationOptions& options) {
  validate_request(prompt, options, model_.config().vocab_size, model_.max_model_len());
  DSPARK_CHECK_CAPACITY(static_cast<int64_t>(scheduler_.num_waiting()) < options_.max_waiting,
                        "the queue is full ({} waiting requests)", scheduler_.num_waiting());
  auto request = std::make_unique<Request>(next_request_id_++, std::move(prompt), options);
  request->arrival_time = now_seconds();
  if (proposer_) request->spec_metrics = SpecDecodeMetrics(proposer_->num_speculative_tokens());
  if (options.response_format != ResponseFormat::kText) {
    if (!token_masker_) {  // one vocabulary masker serves json_object, every schema, regex and grammar
      token_masker_ = std::make_unique<TokenMasker>(
          token_bytes(tokenizer_, model_.config().vocab_size, tokenizer_.eos_ids()));
      grammar_masks_ = std::make_unique<SharedGrammarMasks>(*token_masker_);
      regex_masks_ = std::make_unique<SharedRegexMasks>(*token_masker_);
    }
    switch (options.response_format) {
      case ResponseFormat::kJsonSchema:
        request->grammar = std::make_unique<GrammarConstraint>(*token_masker_, options.json_schema);
        break;
      case ResponseFormat::kRegex: {
        const SharedRegexMasks::Entry shared = regex_masks_->get(options.regex);
        request->grammar = std::make_unique<GrammarConstraint>(*token_masker_, shared.compiled, shared.masks);
        break;
      }
      case ResponseFormat::kGrammar: {
        const SharedGrammarMasks::Entry shared = grammar_masks_->get(options.gbnf_grammar);
        request->grammar = std::make_unique<GrammarConstraint>(*token_masker_, shared.compiled, shared.masks);
        break;
      }
      default: request->grammar = std::make_unique<GrammarConstraint>(*token_masker_);
    }
  }
  const int64_t id = request->id;
  scheduler_.add(std::move(request));
  return id;
}

void Engine::cancel(int64_t request_id) { cancel_requests_.push_back(request_id); }

EngineStats Engine::stats() const {
  EngineStats s;
  s.num_running = static_cast<int64_t>(scheduler_.running().size());
  s.num_waiting = static_cast<int64_t>(scheduler_.num_waiting());
  s.kv_blocks_used = scheduler_.allocator().num_used();
  s.kv_blocks_total = scheduler_.allocator().num_blocks();
  s.kv_blocks_cached = scheduler_.allocator().num_cached();
  s.num_steps = num_steps_;
  s.num_preemptions = scheduler_.stats().num_preemptions;
  s.prefix_cache_queries = scheduler_.stats().prefix_cache_queries;
  s.prefix_cache_hits = scheduler_.stats().prefix_cache_hits;
  return s;
}

bool Engine::step(std::vector<RequestOutput>& outputs) {
  outputs.clear();
  drop_cancelled(outputs);
  if (!has_unfinished()) return false;
  propose_drafts();
  if (draft_budget_) choose_verified_lengths();
  const std::vector<ScheduledRequest>& scheduled = scheduler_.schedule();
  if (scheduled.empty()) return false;
  const double forward_start = now_seconds();
  runner_.execute(scheduled);
  const double forward_seconds = now_seconds() - forward_start;
  schedule_metrics_.forward_seconds += forward_seconds;
  if (draft_budget_) {
    const int64_t tokens = decoding_step_tokens(scheduled);
    if (tokens > 0) draft_budget_->record_target_step(tokens, forward_seconds);
    schedule_metrics_.step_time_ratio = draft_budget_->step_time_ratio();
  }
  commit_step(scheduled, outputs);
  scheduler_.retire_finished();
  ++num_steps_;
  ++schedule_metrics_.steps;
  return true;
}

void Engine::drop_cancelled(std::vector<RequestOutput>& outputs) {
  for (int64_t id : cancel_requests_) {
    std::unique_ptr<Request> r = scheduler_.remove(id);
    if (!r) continue;
    RequestOutput out;
    output_processor_.finish(*r, FinishReason::kCancelled, out);
    scheduler_.release(*r);
    outputs.push_back(std::move(out));
  }
  cancel_requests_.clear();
}

void Engine::propose_drafts() {
  for (const auto& r : scheduler_.running()) {
    r->clear_drafts();
    r->draft_probs = nullptr;
    r->draft_confidence = nullptr;
    r->confidence.forget_round();
  }
  if (!proposer_) return;
  draft_requests_.clear();
  draft_owners_.clear();
  int32_t budget = proposer_->num_speculative_tokens();
  if (draft_budget_) {
    int64_t decoding = 0;
    for (const auto& r : scheduler_.running()) decoding += r->is_decoding() ? 1 : 0;
    budget = draft_budget_->drafts_to_make(decoding, spec_metrics_);
  }
  for (const auto& r : scheduler_.running()) {
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
    dr.grammar = r->grammar.get();
    draft_requests_.push_back(dr);
    draft_owners_.push_back(r.get());
  }
  if (draft_requests_.empty()) return;
  std::span<Draft> results(draft_results_.data(), draft_requests_.size());
  int64_t drafting = 0;
  int32_t max_drafts = 0;
  for (const DraftRequest& dr : draft_requests_) {
    drafting += dr.max_drafts > 0 ? 1 : 0;
    max_drafts = std::max(max_drafts, dr.max_drafts);
  }
  const double catch_up_start = now_seconds();
  proposer_->catch_up(draft_requests_);
  const double start = now_seconds();
  schedule_metrics_.context_seconds += start - catch_up_start;
  proposer_->propose(draft_requests_, results);
  const double seconds = now_seconds() - start;
  schedule_metrics_.draft_seconds += seconds;
  if (draft_budget_) draft_budget_->record_drafting(drafting, max_drafts, seconds);
  for (size_t i = 0; i < draft_owners_.size(); ++i) {
    Request& r = *draft_owners_[i];
    const Draft& d = results[i];
    DSPARK_CHECK(static_cast<int64_t>(d.tokens.size()) <= draft_requests_[i].max_drafts,
                 "proposer returned {} drafts, more than the {} asked for", d.tokens.size(), draft_requests_[i].max_drafts);
    r.drafts.assign(d.tokens.begin(), d.tokens.end());
    // Drafts from the first the output's grammar refuses on could never be accepted (the
    // masked target gives them probability 0): cut them before anyone verifies them.
    if (r.grammar) {
      const auto valid = static_cast<size_t>(r.grammar->valid_prefix_length(r.drafts));
      schedule_metrics_.grammar_cut_drafts += static_cast<int64_t>(r.drafts.size() - valid);
      r.drafts.resize(valid);
    }
    r.draft_probs = d.probs;
    r.draft_confidence = d.confidence;
    if (d.confidence && options_.adapt_confidence) correct_confidence(r, d);
  }
}

void Engine::correct_confidence(Request& r, const Draft& d) {
  r.draft_confidence = r.confidence
                           .correct(confidence_calibrator_, d.confidence_source, r.options.sampling.greedy(),
                                    std::span<const float>(d.confidence, r.drafts.size()))
                           .data();
}

void Engine::choose_verified_lengths() {
  deciding_.clear();
  candidates_.clear();
  int64_t decoding = 0;
  for (const auto& r : scheduler_.running()) {
    if (!r->is_decoding()) continue;
    ++decoding;
    if (r->drafts.empty()) continue;
    candidates_.push_back({static_cast<int32_t>(r->drafts.size()), r->draft_confidence});
    deciding_.push_back(r.get());
  }
  if (decoding == 0) return;
  chosen_lengths_.assign(candidates_.size(), 0);
  schedule_metrics_.predicted_accepted +=
      draft_budget_->choose_lengths(candidates_, decoding, spec_metrics_, chosen_lengths_);
  for (size_t i = 0; i < deciding_.size(); ++i) deciding_[i]->keep_drafts(static_cast<size_t>(chosen_lengths_[i]));
}

void Engine::commit_step(std::span<const ScheduledRequest> scheduled, std::vector<RequestOutput>& outputs) {
  const bool observe = observes_hidden_states(proposer_.get());
  committed_.clear();
  for (size_t i = 0; i < scheduled.size(); ++i) {
    const ScheduledRequest& s = scheduled[i];
    Request& r = *s.request;
    const int32_t start = static_cast<int32_t>(r.num_computed);
    if (const ModelRunner::PromptLogits p = runner_.prompt_logits(i); p.num_rows > 0) {
      output_processor_.gather_prompt_logprobs(r, p.rows, p.first_position, p.num_rows);
    }
    if (const float* logits = runner_.logits(i); logits == nullptr) {
      r.num_computed += s.num_real;  // a prefill chunk; nothing to sample yet
    } else {
      r.num_computed += s.num_real - 1;  // the anchor's KV is accounted for in commit()
      try {
        record_round(r, output_processor_.commit(r, logits, outputs), /*decoding_round=*/s.num_real == 1);
      } catch (const std::exception& e) {
        RequestOutput out;
        // The client gets the sentence; the location goes to the log.
        const auto* error = dynamic_cast<const Error*>(&e);
        out.error = error ? error->message() : e.what();
        logger().error("request {} failed: {}", r.id, e.what());
        output_processor_.finish(r, FinishReason::kError, out);
        outputs.push_back(std::move(out));
      }
    }
    if (r.state == RequestState::kFinished) continue;  // released by retire_finished()
    scheduler_.cache_computed_blocks(r);
    if (observe) {
      if (runner_.captured_states()) show_cached_prefix(r);
      // Rows of this request whose positions are now committed: the fed real tokens and
      // the accepted drafts (num_computed has moved past exactly those).
      CommittedHiddenStates c;
      c.slot = r.slot;
      c.start_position = start;
      c.num_positions = static_cast<int32_t>(r.num_computed) - start;
      c.hidden = runner_.hidden(i);
      c.layer_stride = runner_.result().hidden_stride;
      c.hidden_size = model_.config().hidden_size;
      c.tokens = r.tokens;
      committed_.push_back(c);
    }
  }
  if (!committed_.empty()) {
    const double observe_start = now_seconds();
    proposer_->observe(committed_);
    schedule_metrics_.context_seconds += now_seconds() - observe_start;
  }
}

void Engine::record_round(Request& r, const OutputProcessor::Verdict& verdict, bool decoding_round) {
  // The first cut draft, where the round showed its fate, is one more observation of its
  // position (why: spec/confidence_calibrator.h).
  r.confidence.observe(confidence_calibrator_, verdict.num_drafts, verdict.num_accepted, verdict.unverified_survival);
  if (verdict.num_drafts > 0) {
    const std::span<const float> confidence = r.draft_confidence
                                                  ? std::span<const float>(r.draft_confidence, verdict.num_drafts)
                                                  : std::span<const float>();
    spec_metrics_.record_round(verdict.num_drafts, verdict.num_accepted, confidence);
  }
  if (proposer_ && decoding_round) {
    ScheduleMetrics& sm = schedule_metrics_;
    ++sm.request_rounds;
    sm.verified_drafts += verdict.num_drafts;
    sm.realized_accepted += verdict.num_accepted;
    if (static_cast<size_t>(verdict.num_drafts) < sm.verified_length_counts.size()) {
      ++sm.verified_length_counts[verdict.num_drafts];
    }
  }
}

void Engine::show_cached_prefix(Request& r) {
  if (r.num_unobserved == 0) return;
  for (int64_t b = 0; b < r.num_unobserved / scheduler_.block_size(); ++b) {
    committed_.push_back(runner_.captured_states()->block(r.slot, r.blocks, b));
    committed_.back().tokens = r.tokens;
  }
  r.num_unobserved = 0;
}

GenerationResult generate_one(Engine& engine, std::vector<int32_t> prompt, const GenerationOptions& options,
                              const std::function<void(std::string_view)>& on_text) {
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  const double start = now_seconds();
  bool done = false;
  Detokenizer detokenizer(engine.tokenizer(), options.stop, options.include_stop_str_in_output);
  const int64_t id = engine.add_request(std::move(prompt), options);
  std::vector<RequestOutput> outputs;
  auto take = [&](RequestOutput& out) {
    if (out.request_id != id) return;
    if (detokenizer.process(out)) engine.cancel(id);  // a stop string: the rest is not wanted
    if (result.tokens.empty() && !out.token_ids.empty()) result.ttft_seconds = now_seconds() - start;
    result.tokens.insert(result.tokens.end(), out.token_ids.begin(), out.token_ids.end());
    result.logprobs.insert(result.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
    result.prompt_logprobs.insert(result.prompt_logprobs.end(), out.prompt_logprobs.begin(), out.prompt_logprobs.end());
    result.text += out.text;
    if (on_text && !out.text.empty()) on_text(out.text);
    if (out.finished) {
      done = true;
      result.finish_reason = out.finish_reason;
      result.error = out.error;
      result.cached_prompt_tokens = out.cached_prompt_tokens;
      result.spec_metrics = out.spec_metrics;
    }
  };
  while (!done) {
    const bool stepped = engine.step(outputs);
    for (RequestOutput& out : outputs) take(out);
    if (!stepped) break;
  }
  DSPARK_CHECK(done, "the engine stopped before the request finished (KV cache too small?)");
  if (result.ttft_seconds == 0) result.ttft_seconds = now_seconds() - start;
  result.total_seconds = now_seconds() - start;
  return result;
}

}  // namespace dspark
