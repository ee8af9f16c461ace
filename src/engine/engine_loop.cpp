#include "engine/engine_loop.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/threads.h"
#include "engine/request_validation.h"
#include "structured/regex_dfa.h"
#include "structured/regex_token_masks.h"
#include "structured/token_bytes.h"

namespace dspark {
namespace {

// What a client is told of a failure: an Error's sentence without its source location
// (which goes to the log).
std::string client_text(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) return error->message();
  return e.what();
}

EngineOptions with_queue_room(EngineOptions o, const EngineLoopOptions& loop) {
  DSPARK_CHECK(loop.max_waiting >= 0, "max_waiting must be >= 0, got {}", loop.max_waiting);
  // The loop enforces the queue limit itself; the engine's own must never refuse what the
  // loop admitted (preemption can push running requests back into the engine's queue).
  o.max_waiting = std::max(o.max_waiting, o.max_running + loop.max_waiting + 1);
  return o;
}

}  // namespace

EngineLoop::EngineLoop(Transformer& model, const Tokenizer& tokenizer, const EngineOptions& engine_options,
                       std::unique_ptr<Proposer> proposer, EngineLoopOptions options)
    : model_(model),
      tokenizer_(tokenizer),
      options_(std::move(options)),
      max_running_(engine_options.max_running),
      has_speculator_(proposer != nullptr),
      regex_lookahead_bytes_(regex_lookahead_bytes(
          max_text_token_bytes(token_bytes(tokenizer, model.config().vocab_size, tokenizer.eos_ids())))) {
  engine_ = std::make_unique<Engine>(model, tokenizer, with_queue_room(engine_options, options_), std::move(proposer));
  publish_stats();
  if (engine_->step_cost()) stats_.step_cost = engine_->step_cost()->values();
  taken_.reserve(16);
  running_.reserve(static_cast<size_t>(max_running_ + options_.max_waiting + 1));
  output_thread_ = std::thread([this] { run_outputs(); });
  thread_ = std::thread([this, threads = num_threads()] { run(threads); });
}

EngineLoop::~EngineLoop() { stop(); }

std::shared_ptr<RequestStream> EngineLoop::submit(std::vector<int32_t> prompt, const GenerationOptions& options) {
  validate_request(prompt, options, model_.config().vocab_size, model_.max_model_len());
  // A regex's mask classes for this vocabulary (structured/regex_token_masks.h), computed on
  // the caller's thread rather than in the engine's step; the engine then finds them made.
  if (options.regex) options.regex->lookahead_classes(regex_lookahead_bytes_);

  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard lock(mu_);
    if (!accepting_) throw ShuttingDownError("the server is shutting down and accepts no new requests");
    if (in_flight_ >= max_running_ + options_.max_waiting) {
      {
        std::lock_guard stats_lock(stats_mu_);
        ++stats_.num_rejected;
      }
      throw QueueFullError(fmt::format("the server is at capacity ({} running, {} waiting); retry later", max_running_,
                                       options_.max_waiting));
    }
    stream = std::make_shared<RequestStream>(next_id_++, static_cast<int64_t>(prompt.size()), now_seconds());
    stream->detokenizer_ =
        std::make_unique<Detokenizer>(tokenizer_, options.stop, options.include_stop_str_in_output);
    ++in_flight_;
    inbox_.push_back(Submission{stream, std::move(prompt), options});
  }
  wake_.notify_one();
  return stream;
}

void EngineLoop::cancel(const std::shared_ptr<RequestStream>& stream) {
  if (!stream || stream->finished()) return;
  if (stream->cancel_requested_.exchange(true)) return;
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(stream);
  }
  wake_.notify_one();
}

void EngineLoop::pause() {
  std::lock_guard lock(mu_);
  paused_ = true;
}

void EngineLoop::resume() {
  {
    std::lock_guard lock(mu_);
    paused_ = false;
  }
  wake_.notify_one();
}

void EngineLoop::stop_accepting() {
  std::lock_guard lock(mu_);
  accepting_ = false;
}

bool EngineLoop::drain(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [&] { return in_flight_ == 0; });
}

void EngineLoop::stop() {
  {
    std::lock_guard lock(mu_);
    accepting_ = false;
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (output_thread_.joinable()) output_thread_.join();
}

EngineLoopStats EngineLoop::stats() const {
  int64_t in_flight = 0;
  {
    std::lock_guard lock(mu_);
    in_flight = in_flight_;
  }
  std::lock_guard lock(stats_mu_);
  EngineLoopStats s = stats_;
  s.in_flight = in_flight;  // current, even while the engine thread is paused
  return s;
}

void EngineLoop::run(int omp_threads) {
  set_num_threads(omp_threads);
  bool cancelled_all = false;
  while (true) {
    bool stopping = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] {
        return stopping_ || (!paused_ && (!running_.empty() || !inbox_.empty() || !cancels_.empty()));
      });
      stopping = stopping_;
      if (stopping && inbox_.empty() && cancels_.empty() && running_.empty()) break;
      std::swap(taken_, inbox_);
      std::swap(taken_cancels_, cancels_);
    }
    for (Submission& s : taken_) {
      if (stopping) s.stream->cancel_requested_ = true;
      admit(s);
    }
    taken_.clear();
    for (const auto& stream : taken_cancels_) {
      if (running_.contains(stream->engine_id_)) engine_->cancel(stream->engine_id_);
    }
    taken_cancels_.clear();
    if (stopping && !cancelled_all) {
      for (const auto& [id, stream] : running_) engine_->cancel(id);
      cancelled_all = true;
    }

    bool stepped = false;
    try {
      stepped = engine_->step(outputs_);
    } catch (const std::exception& e) {
      logger().error("engine step failed, failing {} requests: {}", running_.size(), e.what());
      outputs_.clear();
      fail_all(client_text(e));
    }
    // Before the hand-over: a client that sees its request end (drain() included) must
    // see the engine's counters after the step that ended it (its blocks freed).
    publish_stats();
    hand_over();
    if (!stepped && !running_.empty()) {
      // Work exists but nothing could be scheduled this step: wait a little for news
      // instead of spinning.
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stopping_ || !inbox_.empty() || !cancels_.empty(); });
    }
  }
  publish_stats();
  {
    std::lock_guard lock(out_mu_);
    engine_done_ = true;
  }
  out_ready_.notify_one();
}

void EngineLoop::admit(Submission& s) {
  const std::shared_ptr<RequestStream>& stream = s.stream;
  RequestOutput out;
  out.prompt_tokens = static_cast<int64_t>(s.prompt.size());
  if (stream->cancel_requested_) {
    out.finished = true;
    out.finish_reason = FinishReason::kCancelled;
  } else {
    try {
      stream->engine_id_ = engine_->add_request(std::move(s.prompt), s.options);
      running_.emplace(stream->engine_id_, stream);
      return;
    } catch (const std::exception& e) {
      out.finished = true;
      out.finish_reason = FinishReason::kError;
      logger().error("request {} could not be added to the engine: {}", stream->id(), e.what());
      out.error = client_text(e);
    }
  }
  // Never reached the engine: its end goes out with this step's outputs.
  batch_.push_back(Delivery{stream, std::move(out)});
}

void EngineLoop::hand_over() {
  for (RequestOutput& out : outputs_) {
    const auto it = running_.find(out.request_id);
    if (it == running_.end()) continue;  // failed by fail_all: its end was delivered
    std::shared_ptr<RequestStream> stream = it->second;
    if (out.finished) running_.erase(it);
    batch_.push_back(Delivery{std::move(stream), std::move(out)});
  }
  outputs_.clear();
  if (batch_.empty()) return;
  {
    std::lock_guard lock(out_mu_);
    if (out_queue_.empty()) {
      std::swap(out_queue_, batch_);
    } else {
      for (Delivery& d : batch_) out_queue_.push_back(std::move(d));
      batch_.clear();
    }
  }
  out_ready_.notify_one();
}

void EngineLoop::fail_all(const std::string& error) {
  for (const auto& [id, stream] : running_) {
    RequestOutput out;
    out.finished = true;
    out.finish_reason = FinishReason::kError;
    out.error = error;
    out.prompt_tokens = stream->prompt_tokens();
    out.output_tokens = stream->output_tokens();
    batch_.push_back(Delivery{stream, std::move(out)});
    // Frees its blocks at the next step; the cancellation's own report finds no stream
    // and is dropped.
    engine_->cancel(id);
  }
  running_.clear();
}

void EngineLoop::publish_stats() {
  int64_t in_flight = 0;
  {
    std::lock_guard lock(mu_);
    in_flight = in_flight_;
  }
  std::lock_guard lock(stats_mu_);
  stats_.engine = engine_->stats();
  stats_.spec = engine_->spec_metrics();
  stats_.schedule = engine_->schedule_metrics();
  stats_.confidence = engine_->confidence_calibrator();  // reuses the vectors' memory after the first rounds
  stats_.in_flight = in_flight;
}

void EngineLoop::run_outputs() {
  while (true) {
    {
      std::unique_lock lock(out_mu_);
      out_ready_.wait(lock, [&] { return !out_queue_.empty() || engine_done_; });
      if (out_queue_.empty()) break;  // engine_done_: nothing more will come
      std::swap(delivering_, out_queue_);
    }
    for (Delivery& d : delivering_) deliver(d.stream, d.output);
    delivering_.clear();
  }
}

void EngineLoop::deliver(const std::shared_ptr<RequestStream>& stream, RequestOutput& out) {
  if (stream->finished()) return;
  // A stop string ends the request here; the engine is told to drop the rest.
  if (stream->detokenizer_->process(out)) cancel(stream);
  if (!out.finished) {
    if (!out.token_ids.empty() || !out.text.empty()) stream->push(out);
    return;
  }
  // Account for the request before its client can see the end, so that whatever the
  // client does next (read /metrics, submit again) sees it finished.
  FinishedRequest done;
  done.finish_reason = out.error.empty() ? out.finish_reason : FinishReason::kError;
  done.prompt_tokens = out.prompt_tokens;
  done.output_tokens = out.output_tokens;
  done.timing = stream->timing();
  done.timing.finish = now_seconds();
  if (done.timing.first_token == 0 && !out.token_ids.empty()) done.timing.first_token = done.timing.finish;
  int64_t in_flight = 0;
  {
    std::lock_guard lock(mu_);
    in_flight = --in_flight_;
  }
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.finished[static_cast<size_t>(done.finish_reason)];
    stats_.prompt_tokens += done.prompt_tokens;
    stats_.generation_tokens += done.output_tokens;
    stats_.in_flight = in_flight;
  }
  if (options_.on_finished) options_.on_finished(done);
  stream->push(out);
  idle_.notify_all();
}

}  // namespace dspark
