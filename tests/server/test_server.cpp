#include "server/test_server.h"

#include <csignal>
#include <thread>

#include <httplib.h>

#include "loadgen/sse_parser.h"
#include "spec/proposer_factory.h"

namespace dspark::testing {
namespace {

std::unique_ptr<Transformer> load_stories(int64_t max_sequences, int64_t max_batch_tokens,
                                          std::vector<int32_t> capture_layers = {}) {
  TransformerOptions o;
  o.capture_layers = std::move(capture_layers);
  o.compute = DType::kF32;
  o.max_sequences = max_sequences;
  o.max_batch_tokens = max_batch_tokens;
  return Transformer::load(stories_dir(), o);
}

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30);
  c.set_connection_timeout(5);
  return c;
}

nlohmann::json parse_or_discard(const std::string& text) { return nlohmann::json::parse(text, nullptr, false); }

}  // namespace

std::filesystem::path stories_dir() {
  return std::filesystem::path(DSPARK_SHARED_DIR) / "data" / "models" / "stories260K-hf";
}

TestServer::TestServer(TestServerOptions o) {
  std::signal(SIGPIPE, SIG_IGN);
  SpeculatorOptions so;
  so.speculator = o.speculator;
  so.num_speculative_tokens = o.num_spec_tokens;
  so.max_running = o.max_running;
  so.compute = DType::kF32;
  const SpeculatorPlan plan(so, ModelConfig::from_file(stories_dir() / "config.json"));
  model_ = load_stories(o.max_running, o.max_batch_tokens, plan.capture_layers());
  tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_dir(stories_dir()));
  EngineOptions eo;
  eo.max_running = o.max_running;
  eo.max_batch_tokens = o.max_batch_tokens;
  eo.prefill_chunk = o.max_batch_tokens;
  if (o.step_cost) {
    eo.spec_schedule = SpecSchedule::kAdaptive;
    eo.step_cost = o.step_cost;
  }
  EngineLoopOptions lo;
  lo.max_waiting = o.max_waiting;
  lo.on_finished = [this](const FinishedRequest& r) { metrics_.observe(r); };
  loop_ = std::make_unique<EngineLoop>(*model_, *tokenizer_, eo,
                                       o.make_proposer ? o.make_proposer() : plan.build(*model_), lo);
  HttpServerOptions ho;
  ho.port = 0;
  ho.served_model_name = o.served_model_name;
  ho.max_body_bytes = o.max_body_bytes;
  ho.heartbeat_seconds = o.heartbeat_seconds;
  if (o.configure_http) o.configure_http(ho);
  const ChatFormat chat_format = o.chat_template.empty()
                                     ? ChatFormat::from_model_dir(stories_dir())
                                     : ChatFormat::from_template_file(o.chat_template, o.chat_template_model_dir);
  server_ = std::make_unique<HttpServer>(*loop_, metrics_, chat_format, ho);
  port_ = server_->start();
}

void FailingProposer::propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) {
  if (armed.exchange(false)) throw std::runtime_error("the drafter failed");
  for (size_t i = 0; i < requests.size(); ++i) drafts[i] = Draft{};
}

TestServer::~TestServer() { shutdown(std::chrono::milliseconds(0)); }

void TestServer::shutdown(std::chrono::milliseconds grace) { server_->shutdown(grace); }

std::string TestServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

HttpReply http_post(int port, const std::string& path, const std::string& body) {
  auto c = client(port);
  HttpReply reply;
  if (auto r = c.Post(path, body, "application/json")) {
    reply.status = r->status;
    reply.body = r->body;
    reply.json = parse_or_discard(r->body);
  }
  return reply;
}

HttpReply http_get(int port, const std::string& path) {
  auto c = client(port);
  HttpReply reply;
  if (auto r = c.Get(path)) {
    reply.status = r->status;
    reply.body = r->body;
    reply.json = parse_or_discard(r->body);
  }
  return reply;
}

StreamReply http_stream(int port, const std::string& path, const std::string& body,
                        const std::function<bool(const nlohmann::json&)>& on_chunk) {
  auto c = client(port);
  StreamReply reply;
  SseParser parser;
  std::string error_body;
  bool keep_going = true;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& r) {
    reply.status = r.status;
    return true;
  };
  auto on_data = [&](std::string_view data) {
    if (data == "[DONE]") {
      reply.done = true;
      return;
    }
    nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
    reply.chunks.push_back(chunk);
    if (chunk.contains("error")) {
      reply.error = chunk["error"];
      return;
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) reply.usage = chunk["usage"];
    if (chunk.contains("choices") && !chunk["choices"].empty()) {
      const auto& choice = chunk["choices"][0];
      if (choice.contains("text")) reply.text += choice["text"].get<std::string>();
      if (choice.contains("delta") && choice["delta"].contains("content")) {
        reply.text += choice["delta"]["content"].get<std::string>();
      }
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
        reply.finish_reason = choice["finish_reason"].get<std::string>();
      }
    }
    if (on_chunk && !on_chunk(chunk)) keep_going = false;
  };
  req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    const std::string_view bytes(data, length);
    if (reply.status != 200) {
      error_body.append(bytes);
      return true;
    }
    if (bytes.find(": keep-alive") != std::string_view::npos) ++reply.heartbeats;
    parser.feed(bytes, on_data);
    return keep_going;
  };
  httplib::Response response;
  httplib::Error error;
  c.send(req, response, error);
  if (reply.status != 200 && !error_body.empty()) reply.chunks.push_back(parse_or_discard(error_body));
  return reply;
}

std::optional<double> metric(const std::string& page, const std::string& sample) {
  size_t pos = 0;
  while ((pos = page.find(sample, pos)) != std::string::npos) {
    const bool line_start = pos == 0 || page[pos - 1] == '\n';
    const size_t after = pos + sample.size();
    if (line_start && after < page.size() && page[after] == ' ') {
      return std::stod(page.substr(after + 1, page.find('\n', after) - after - 1));
    }
    pos = after;
  }
  return std::nullopt;
}

std::optional<double> server_metric(int port, const std::string& sample) {
  const HttpReply r = http_get(port, "/metrics");
  if (r.status != 200) return std::nullopt;
  return metric(r.body, sample);
}

bool wait_until_idle(int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const HttpReply r = http_get(port, "/metrics");
    if (r.status == 200 && metric(r.body, "dspark:kv_cache_blocks_used") == 0.0 &&
        metric(r.body, "dspark:num_requests_running") == 0.0 && metric(r.body, "dspark:num_requests_waiting") == 0.0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

OfflineReference::OfflineReference()
    : model_(load_stories(1, 256)), tokenizer_(std::make_unique<Tokenizer>(Tokenizer::from_dir(stories_dir()))) {}

OfflineReference::~OfflineReference() = default;

GenerationResult OfflineReference::run(const std::vector<int32_t>& prompt, const GenerationOptions& options) {
  EngineOptions eo;
  eo.max_running = 1;
  eo.max_batch_tokens = 256;
  eo.prefill_chunk = 256;
  Engine engine(*model_, *tokenizer_, eo);
  return generate_one(engine, prompt, options);
}

std::vector<int32_t> OfflineReference::encode(const std::string& text) const { return tokenizer_->encode(text, true); }

GenerationOptions greedy_options(int64_t max_tokens, std::vector<std::string> stop) {
  GenerationOptions g;
  g.max_tokens = max_tokens;
  g.sampling.temperature = 0;
  g.stop = std::move(stop);
  return g;
}

}  // namespace dspark::testing
