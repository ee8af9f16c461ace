// Fixtures for server tests: a real HttpServer over an EngineLoop on 127.0.0.1 with an
// ephemeral port, serving karpathy's stories260K (real tokenizer, tiny, f32), plus small
// blocking HTTP helpers and the offline reference (generate_one on a private engine).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine_loop.h"
#include "server/http_server.h"
#include "server/server_metrics.h"

namespace dspark::testing {

std::filesystem::path stories_dir();

struct TestServerOptions {
  int64_t max_running = 16;
  int64_t max_waiting = 64;
  int64_t max_batch_tokens = 256;
  std::string speculator;            // "", "ngram" or a model directory
  std::function<std::unique_ptr<Proposer>()> make_proposer;  // overrides speculator when set
  int32_t num_spec_tokens = 4;      // 0 = the speculator's default
  std::shared_ptr<const StepCostTable> step_cost;  // set: the adaptive schedule with this SPS(B)
  std::string served_model_name = "stories";
  size_t max_body_bytes = 1u << 20;
  double heartbeat_seconds = 2.0;
  std::function<void(HttpServerOptions&)> configure_http;  // last word on the server's options
  std::filesystem::path chat_template;            // a Jinja file instead of the model's (none)
  std::filesystem::path chat_template_model_dir;  // its special tokens (tokenizer_config.json)
};

class TestServer {
 public:
  explicit TestServer(TestServerOptions options = {});
  ~TestServer();

  int port() const { return port_; }
  std::string url() const;
  EngineLoop& loop() { return *loop_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  void shutdown(std::chrono::milliseconds grace);

 private:
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  ServerMetrics metrics_;
  std::unique_ptr<EngineLoop> loop_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

// Proposes nothing, until armed: then its next propose() throws (a fault that takes a
// whole engine step down).
class FailingProposer final : public Proposer {
 public:
  std::atomic<bool> armed{false};
  ProposerCapabilities capabilities() const override { return {}; }
  int32_t num_speculative_tokens() const override { return 2; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override;
};

struct HttpReply {
  int status = 0;           // 0 when the request failed at the transport level
  std::string body;
  nlohmann::json json;      // parsed body (discarded when not JSON)
};

HttpReply http_post(int port, const std::string& path, const std::string& body);
HttpReply http_get(int port, const std::string& path);

// A streaming (SSE) response, read chunk by chunk.
struct StreamReply {
  int status = 0;
  std::string text;                      // concatenated text / delta.content
  std::vector<nlohmann::json> chunks;    // every JSON event
  std::string finish_reason;             // of the chunk that carried one
  std::optional<nlohmann::json> usage;   // from the usage chunk
  std::optional<nlohmann::json> error;   // an error event
  bool done = false;                     // saw [DONE]
  int64_t heartbeats = 0;                // ": keep-alive" comments seen (approximate)
};

// on_chunk may return false to drop the connection after that chunk.
StreamReply http_stream(int port, const std::string& path, const std::string& body,
                        const std::function<bool(const nlohmann::json&)>& on_chunk = {});

// The value of one sample line of a Prometheus page ("name" or "name{labels}"); nullopt
// when absent.
std::optional<double> metric(const std::string& page, const std::string& sample);
std::optional<double> server_metric(int port, const std::string& sample);
// Polls /metrics until blocks used, running and waiting are all 0 (true) or timeout.
bool wait_until_idle(int port, std::chrono::milliseconds timeout);

// Offline greedy/sampled reference: generate_one on a fresh single-request engine.
class OfflineReference {
 public:
  OfflineReference();
  ~OfflineReference();
  GenerationResult run(const std::vector<int32_t>& prompt, const GenerationOptions& options);
  std::vector<int32_t> encode(const std::string& text) const;
  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

GenerationOptions greedy_options(int64_t max_tokens, std::vector<std::string> stop = {});

}  // namespace dspark::testing
