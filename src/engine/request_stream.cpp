#include "engine/request_stream.h"

#include "core/clock.h"

namespace dspark {

void StreamUpdate::clear() {
  text.clear();
  token_ids.clear();
  logprobs.clear();
  prompt_logprobs.clear();
  finished = false;
  finish_reason = FinishReason::kLength;
  error.clear();
  prompt_tokens = 0;
  output_tokens = 0;
  spec_metrics = SpecDecodeMetrics();
}

RequestStream::RequestStream(int64_t id, int64_t prompt_tokens, double submit_time) : id_(id) {
  pending_.prompt_tokens = prompt_tokens;
  timing_.submit = submit_time;
}

void RequestStream::push(const RequestOutput& out) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    const double now = now_seconds();
    if (timing_.first_token == 0 && !out.token_ids.empty()) timing_.first_token = now;
    pending_.text += out.text;
    pending_.token_ids.insert(pending_.token_ids.end(), out.token_ids.begin(), out.token_ids.end());
    pending_.logprobs.insert(pending_.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
    pending_.prompt_logprobs.insert(pending_.prompt_logprobs.end(), out.prompt_logprobs.begin(),
                                    out.prompt_logprobs.end());
    pending_.prompt_tokens = out.prompt_tokens;
    pending_.output_tokens = out.output_tokens;
    if (out.finished) {
      pending_.finished = true;
      pending_.finish_reason = out.error.empty() ? out.finish_reason : FinishReason::kError;
      pending_.error = out.error;
      pending_.cached_prompt_tokens = out.cached_prompt_tokens;
      pending_.spec_metrics = out.spec_metrics;
      finished_ = true;
      timing_.finish = now;
    }
    has_pending_ = true;
  }
  cv_.notify_all();
}

bool RequestStream::next(StreamUpdate& update, std::chrono::milliseconds timeout) {
  update.clear();
  std::unique_lock lock(mu_);
  if (delivered_final_) return false;
  if (!cv_.wait_for(lock, timeout, [&] { return has_pending_; })) return false;
  std::swap(update, pending_);
  // Counts stay cumulative in the pending record.
  pending_.prompt_tokens = update.prompt_tokens;
  pending_.output_tokens = update.output_tokens;
  has_pending_ = false;
  if (update.finished) delivered_final_ = true;
  return true;
}

bool RequestStream::wait_finished(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return finished_; });
}

bool RequestStream::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

int64_t RequestStream::prompt_tokens() const {
  std::lock_guard lock(mu_);
  return pending_.prompt_tokens;
}

int64_t RequestStream::output_tokens() const {
  std::lock_guard lock(mu_);
  return pending_.output_tokens;
}

RequestTiming RequestStream::timing() const {
  std::lock_guard lock(mu_);
  return timing_;
}

}  // namespace dspark
