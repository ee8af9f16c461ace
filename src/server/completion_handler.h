// CompletionHandler: serves one POST /v1/completions or /v1/chat/completions request on
// an HTTP worker thread: parse (openai_protocol.h), build the prompt (ChatFormat for
// chat), tokenize, check the model name and the context, submit to the EngineLoop, then
// either wait for the whole result (one JSON body) or hand the response to an SSE content
// provider that relays the request's RequestStream.
//
// ResponseTracker counts responses still being produced, so that a graceful shutdown can
// wait for every stream to be flushed before the listening socket (and with it every
// chunked response in cpp-httplib) is closed. Internal to the server.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>

#include <httplib.h>

#include "engine/engine_loop.h"
#include "server/chat_format.h"
#include "server/openai_protocol.h"

namespace dspark {

class ResponseTracker {
 public:
  void begin();
  void end();
  bool wait_idle(std::chrono::milliseconds timeout);
  void set_shutting_down() { shutting_down_ = true; }
  bool shutting_down() const { return shutting_down_; }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  int64_t open_ = 0;
  std::atomic<bool> shutting_down_{false};
};

struct SseChoice;
struct SseState;

class CompletionHandler {
 public:
  CompletionHandler(EngineLoop& loop, ChatFormat chat_format, std::string model_name, double heartbeat_seconds,
                    ResponseTracker& tracker);

  void handle(const httplib::Request& request, httplib::Response& response, Endpoint endpoint);

 private:
  std::vector<int32_t> prompt_tokens(const ParsedRequest& r) const;
  // n choices: streams[i] is choice i.
  void respond_whole(httplib::Response& response, const std::vector<std::shared_ptr<RequestStream>>& streams,
                     const ResponseContext& ctx);
  void respond_stream(httplib::Response& response, std::vector<std::shared_ptr<RequestStream>> streams,
                      const ResponseContext& ctx, bool include_usage);
  // Blocks until there is something to write for this response, writes it; false when the
  // client is gone.
  bool write_next_event(SseState& state, httplib::DataSink& sink);
  // Appends the events of choice `index`'s latest update to state.out; true when that
  // choice failed (the response ends with its error).
  bool append_choice_events(SseState& state, size_t index);
  // Completions with echo: the prompt's chunk before the choice's first, and the joint
  // (echo_joint) before its first text.
  void echo_prompt(SseState& state, SseChoice& choice, int64_t index);
  // The same for a chat choice whose reply is parsed for tool calls as it streams.
  bool append_tool_call_events(SseState& state, size_t index);
  // A choice's finishing update: keeps its usage; for a failure appends the error event
  // and returns true (the response ends there).
  bool end_choice(SseState& state, SseChoice& choice);
  // Gives tool calls their ids ("call_" and 16 hex digits).
  std::function<std::string()> call_id_maker();
  uint64_t random_seed();
  std::string make_id(Endpoint endpoint);

  EngineLoop& loop_;
  const ChatFormat chat_format_;
  const std::string model_name_;
  const double heartbeat_seconds_;
  ResponseTracker& tracker_;
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
};

// Writes an OpenAI error body with its status.
void set_error(httplib::Response& response, const ApiError& error);

}  // namespace dspark
