// EngineLoop: one thread that owns an Engine and steps it while there is work (DESIGN §3),
// and a second that turns its outputs into what clients see. Other threads never touch the
// Engine: submit() validates a request on the caller's thread and puts it into a locked
// inbox; cancel() puts a cancellation there; the engine thread drains the inbox between
// steps and hands each step's outputs (token ids) over whole. The output thread
// detokenizes them and matches stop strings (engine/detokenizer.h; a stop string cancels
// the request in the engine), accounts for finished requests, and pushes into each
// request's RequestStream, so text work never delays a step. With nothing to do both
// threads sleep on condition variables.
//
// Admission: at most max_running requests run (hold KV blocks) at once and at most
// max_waiting more may wait for a place; submit() beyond that throws QueueFullError, so
// overload is refused at the door instead of growing an unbounded queue.
//
// A request that fails inside the engine finishes with FinishReason::kError and leaves the
// others running. If a whole step throws (a fault that cannot be pinned on one request),
// every in-flight request finishes with that error and the loop carries on.
//
// Shutdown: stop_accepting() makes submit() throw ShuttingDownError; drain() waits for
// in-flight requests to finish; stop() (and the destructor) cancels what is left,
// delivers the cancellations, and joins both threads.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "engine/engine.h"
#include "engine/request_stream.h"
#include "spec/confidence_calibrator.h"

namespace dspark {

// Refused for lack of room (kCapacity: the server answers 429, retry later).
class QueueFullError : public Error {
 public:
  explicit QueueFullError(const std::string& message) : Error(message, ErrorKind::kCapacity) {}
};

// Refused because the loop is stopping (kInternal by kind; the server answers 503 for this
// type in particular).
class ShuttingDownError : public Error {
 public:
  using Error::Error;
};

// One finished request, as the metrics see it.
struct FinishedRequest {
  FinishReason finish_reason = FinishReason::kLength;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  RequestTiming timing;
};

struct EngineLoopOptions {
  int64_t max_waiting = 64;  // requests queued beyond the running ones; more are refused
  // Called on the output thread for every finished request, before its client sees the
  // end (keep it cheap); may be empty.
  std::function<void(const FinishedRequest&)> on_finished;
};

// A consistent copy of the loop's counters, taken after a step.
struct EngineLoopStats {
  EngineStats engine;                // running, waiting, KV blocks, steps, preemptions
  SpecDecodeMetrics spec;            // all requests so far
  ScheduleMetrics schedule;          // verified lengths chosen, predicted vs realized acceptance
  std::vector<double> step_cost;     // SPS(B) for B = 1.. (adaptive schedule), else empty
  ConfidenceCalibrator confidence;   // draft confidence offsets learned from verified rounds
  std::array<int64_t, 5> finished{};  // per FinishReason (indexed by its value)
  int64_t num_rejected = 0;          // refused by submit() (queue full)
  int64_t prompt_tokens = 0;         // of finished requests
  int64_t generation_tokens = 0;     // of finished requests
  int64_t in_flight = 0;             // submitted and not yet finished
};

class EngineLoop {
 public:
  // Builds the Engine (throws Error for invalid options) and starts its thread. The model,
  // tokenizer and proposer must outlive the loop. The OpenMP thread count of the calling
  // thread is carried over to the engine thread.
  EngineLoop(Transformer& model, const Tokenizer& tokenizer, const EngineOptions& engine_options,
             std::unique_ptr<Proposer> proposer, EngineLoopOptions options = {});
  ~EngineLoop();
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Queues a request and returns its stream. Throws Error (kInvalidRequest, from
  // validate_request: empty prompt, prompt without room in the context, ids outside the
  // vocabulary, invalid options), QueueFullError (kCapacity) when max_running + max_waiting
  // requests are in flight, and ShuttingDownError after stop_accepting().
  std::shared_ptr<RequestStream> submit(std::vector<int32_t> prompt, const GenerationOptions& options);
  // Finishes the request (kCancelled) at the next step and frees its KV blocks. Safe to
  // call for finished requests and more than once.
  void cancel(const std::shared_ptr<RequestStream>& stream);

  // Holds the engine thread between steps until resume(): submissions and cancellations
  // queue up, nothing runs (maintenance, and tests that need requests to stay in flight).
  // stop() ends a pause.
  void pause();
  void resume();

  void stop_accepting();
  // Waits until nothing is in flight; false when the timeout passed first.
  bool drain(std::chrono::milliseconds timeout);
  // Cancels everything in flight, waits for the cancellations to be delivered, joins.
  void stop();

  EngineLoopStats stats() const;
  int64_t max_running() const { return max_running_; }
  int64_t max_waiting() const { return options_.max_waiting; }
  const Transformer& model() const { return model_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  bool has_speculator() const { return has_speculator_; }

 private:
  struct Submission {
    std::shared_ptr<RequestStream> stream;
    std::vector<int32_t> prompt;
    GenerationOptions options;
  };

  // An output on its way from the engine thread to the output thread.
  struct Delivery {
    std::shared_ptr<RequestStream> stream;
    RequestOutput output;
  };

  // Engine thread.
  void run(int omp_threads);
  void admit(Submission& s);
  // Queues this step's outputs for the output thread (the engine's own for requests whose
  // stream is gone are dropped).
  void hand_over();
  void fail_all(const std::string& error);
  void publish_stats();
  // Output thread.
  void run_outputs();
  void deliver(const std::shared_ptr<RequestStream>& stream, RequestOutput& out);

  const Transformer& model_;
  const Tokenizer& tokenizer_;
  const EngineLoopOptions options_;
  const int64_t max_running_;
  bool has_speculator_ = false;
  int32_t regex_lookahead_bytes_ = 0;  // the vocabulary's, for regex requests' mask classes
  std::unique_ptr<Engine> engine_;  // touched by the engine thread only (after construction)

  // Inbox, guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable wake_;       // engine thread: new work or stop
  std::condition_variable idle_;       // drain(): in_flight reached 0
  std::vector<Submission> inbox_;
  std::vector<std::shared_ptr<RequestStream>> cancels_;
  bool accepting_ = true;
  bool stopping_ = false;
  bool paused_ = false;
  int64_t in_flight_ = 0;
  int64_t next_id_ = 1;

  // Engine-thread state.
  std::vector<Submission> taken_;                       // inbox swapped out
  std::vector<std::shared_ptr<RequestStream>> taken_cancels_;
  std::unordered_map<int64_t, std::shared_ptr<RequestStream>> running_;  // engine id -> stream, until the engine finishes it
  std::vector<RequestOutput> outputs_;                  // of the last step
  std::vector<Delivery> batch_;                         // this step's deliveries

  // Engine thread -> output thread, guarded by out_mu_.
  std::mutex out_mu_;
  std::condition_variable out_ready_;
  std::vector<Delivery> out_queue_;
  bool engine_done_ = false;                            // the engine thread ended: nothing more comes

  // Output-thread state.
  std::vector<Delivery> delivering_;                    // out_queue_ swapped out

  mutable std::mutex stats_mu_;
  EngineLoopStats stats_;

  std::thread thread_;
  std::thread output_thread_;
};

}  // namespace dspark
