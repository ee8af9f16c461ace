// LoadGenerator: drives any OpenAI-compatible server (dspark serve, vLLM, ...) with
// streaming requests and measures what a user sees (bench_report.h has the metrics).
//
// Every request is POST {url}/v1/completions (prompt) or /v1/chat/completions (one user
// message) with "stream": true and stream_options.include_usage, so TTFT and the gaps
// between chunks are timed on the client, and output tokens come from the usage block
// (or, from a server that sends none, the number of text chunks).
//
// Load levels:
//   closed loop  N workers, each sending its next request as soon as the previous one
//                ended (concurrency N);
//   open loop    requests start at Poisson arrival times with mean rate R per second,
//                however many are in flight.
// A level sends num_requests requests taking prompts in a fixed shuffled order (seeded),
// the same order for every level. The server's Prometheus page is read before and after
// each level for the mean acceptance length tau and the prefix-cache hit rate.
// send() and send_chat() are single requests for other drivers (bench/multi_turn.h); each
// record keeps the generated text.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/bench_report.h"

namespace dspark {

struct LoadOptions {
  std::string url = "http://127.0.0.1:8000";  // scheme://host:port, optionally a path ending in /v1
  std::string endpoint = "completions";       // "completions" or "chat"
  std::string model;                          // empty = the first model of GET /v1/models
  int64_t max_tokens = 128;                   // per request
  double temperature = 0.0;                   // 0 = greedy
  bool ignore_eos = false;                    // ask the server to run to max_tokens
  double timeout_s = 600;                     // per request (read timeout)
  uint64_t seed = 0;                          // prompt order and Poisson arrivals

  void validate() const;  // throws Error naming the bad field
};

// One message of a chat history (send_chat).
struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

// Counters read from the server's /metrics page; each nullopt when the page lacks them.
struct ServerCounters {
  std::optional<SpecCounters> spec;
  std::optional<PrefixCacheCounters> prefix_cache;
};

// Called after every finished request of a level: (done, failed, total).
using ProgressCallback = std::function<void(int64_t done, int64_t failed, int64_t total)>;

class LoadGenerator {
 public:
  // Throws Error for invalid options or no prompts.
  LoadGenerator(LoadOptions options, std::vector<std::string> prompts);

  // Fills options.model from GET /v1/models when empty; throws Error when the server
  // cannot be reached or lists no model.
  void resolve_model();
  // One request, not measured, so that first-use costs stay out of the levels.
  RequestRecord warm_up();

  LevelResult run_closed_loop(int64_t concurrency, int64_t num_requests, const ProgressCallback& progress = {});
  LevelResult run_open_loop(double rate, int64_t num_requests, const ProgressCallback& progress = {});

  // One streaming request (blocking) on a fresh connection; never throws. With the chat
  // endpoint the prompt is sent as one user message.
  RequestRecord send(const std::string& prompt) const;
  // One streaming request with a whole chat history to the chat endpoint (whatever
  // options.endpoint says); never throws.
  RequestRecord send_chat(const std::vector<ChatMessage>& messages) const;
  // The server's counters; both nullopt when it has no /metrics page.
  ServerCounters scrape_counters() const;
  // The server's speculative-decoding counters, or nullopt (no /metrics, or none there).
  std::optional<SpecCounters> scrape_spec_counters() const { return scrape_counters().spec; }

  const LoadOptions& options() const { return options_; }

 private:
  std::string request_body(const std::string& prompt) const;
  // The streaming request body around `input` ({"prompt": ...} or {"messages": ...}).
  std::string request_body_with(nlohmann::json input) const;
  // Fills the level's rates from the counters scraped before and after it.
  static void add_counters(LevelResult& result, const ServerCounters& before, const ServerCounters& after);
  const std::string& prompt_at(int64_t i) const;

  LoadOptions options_;
  std::vector<std::string> prompts_;
  std::vector<size_t> order_;   // shuffled prompt indices
  std::string host_;            // scheme://host:port
  std::string api_base_;        // path prefix up to and including /v1
};

}  // namespace dspark
