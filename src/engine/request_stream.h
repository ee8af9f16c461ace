// RequestStream: the hand-over point between EngineLoop and the one thread that serves a
// request (an HTTP handler). EngineLoop's output thread pushes RequestOutputs; the
// consumer takes everything that arrived since its last call, blocking on a condition
// variable until there is news or a timeout passes. Text and token ids of several engine
// outputs coalesce, so a slow consumer never makes the engine wait and never loses text.
//
// Thread-safety: push is called by EngineLoop's output thread only, next/wait_finished/
// timing by any thread; every member behind the mutex. engine_id, the cancel flag and the
// detokenizer belong to EngineLoop.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/detokenizer.h"
#include "engine/generation.h"
#include "engine/request.h"

namespace dspark {

// What a consumer takes in one call: everything new since the previous one.
struct StreamUpdate {
  std::string text;                 // newly final text
  std::vector<int32_t> token_ids;   // newly committed tokens
  std::vector<TokenLogprob> logprobs;  // parallel to token_ids when the request asked for them
  std::vector<TokenLogprob> prompt_logprobs;  // prompt tokens 1.. (GenerationOptions::prompt_logprobs), once
  bool finished = false;            // the request is over; nothing will follow
  FinishReason finish_reason = FinishReason::kLength;
  std::string error;                // non-empty when the request failed
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0; // of those, served from the prefix cache; set when finished
  int64_t output_tokens = 0;        // total so far
  SpecDecodeMetrics spec_metrics;   // the request's own drafts and acceptances; set when finished

  void clear();
};

// Wall-clock instants (now_seconds()) of one request.
struct RequestTiming {
  double submit = 0;       // accepted by EngineLoop::submit
  double first_token = 0;  // first committed token; 0 when none
  double finish = 0;       // finished; 0 while running
};

class RequestStream {
 public:
  RequestStream(int64_t id, int64_t prompt_tokens, double submit_time);

  int64_t id() const { return id_; }

  // Output thread. Ignored once a finishing output was pushed.
  void push(const RequestOutput& output);

  // Consumer. Waits up to `timeout` for news; returns false when nothing arrived (the
  // update is left empty). After the finishing update, returns false forever.
  bool next(StreamUpdate& update, std::chrono::milliseconds timeout);
  // Blocks until the request finished (true) or the timeout passed (false).
  bool wait_finished(std::chrono::milliseconds timeout);
  bool finished() const;
  RequestTiming timing() const;
  int64_t prompt_tokens() const;
  int64_t output_tokens() const;  // committed so far (as reported by the engine)

 private:
  friend class EngineLoop;

  const int64_t id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  StreamUpdate pending_;          // accumulated since the consumer's last next()
  bool has_pending_ = false;
  bool finished_ = false;         // engine side: the finishing output was pushed
  bool delivered_final_ = false;  // consumer side: the finishing update was taken
  RequestTiming timing_;

  // Owned by EngineLoop: the engine id by its engine thread, the detokenizer by its
  // output thread.
  int64_t engine_id_ = 0;
  std::atomic<bool> cancel_requested_{false};
  std::unique_ptr<Detokenizer> detokenizer_;
};

}  // namespace dspark
