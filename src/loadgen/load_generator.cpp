#include "loadgen/load_generator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "loadgen/sse_parser.h"
#include "core/check.h"
#include "core/clock.h"

namespace dspark {
namespace {

using nlohmann::json;

std::unique_ptr<httplib::Client> make_client(const std::string& host, double timeout_s) {
  auto client = std::make_unique<httplib::Client>(host);
  const auto seconds = static_cast<time_t>(timeout_s);
  client->set_read_timeout(seconds, static_cast<time_t>((timeout_s - static_cast<double>(seconds)) * 1e6));
  client->set_write_timeout(30);
  client->set_connection_timeout(10);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  return client;
}

// The text a chunk carries: completions "text", chat "delta.content".
std::string chunk_text(const json& chunk) {
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return {};
  const json& c = (*choices)[0];
  if (auto t = c.find("text"); t != c.end() && t->is_string()) return t->get<std::string>();
  if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
    if (auto t = d->find("content"); t != d->end() && t->is_string()) return t->get<std::string>();
  }
  return {};
}

// Serialises progress reports from worker threads.
class Progress {
 public:
  Progress(const ProgressCallback& callback, int64_t total) : callback_(callback), total_(total) {}
  void done(bool ok) {
    std::lock_guard lock(mu_);
    ++done_;
    if (!ok) ++failed_;
    if (callback_) callback_(done_, failed_, total_);
  }

 private:
  const ProgressCallback& callback_;
  std::mutex mu_;
  int64_t total_, done_ = 0, failed_ = 0;
};

// One attempt; `answered` tells whether any response (a status line and headers) came back.
RequestRecord send_once(httplib::Client& client, const std::string& path, const std::string& body, bool& answered) {
  RequestRecord rec;
  SseParser parser;
  int status = 0;
  std::string error_body;
  bool saw_done = false;
  int64_t text_chunks = 0;
  std::optional<int64_t> usage_tokens;
  double last_chunk = 0;
  const double start = now_seconds();

  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  req.response_handler = [&](const httplib::Response& response) {
    status = response.status;
    answered = true;
    return true;
  };
  auto on_data = [&](std::string_view data) {
    if (data == "[DONE]") {
      saw_done = true;
      return;
    }
    json chunk = json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (chunk.is_discarded() || !chunk.is_object()) {
      if (rec.error.empty()) rec.error = fmt::format("malformed stream chunk: {}", data.substr(0, 200));
      return;
    }
    if (auto e = chunk.find("error"); e != chunk.end()) {
      if (rec.error.empty()) rec.error = fmt::format("server error in stream: {}", e->dump());
      return;
    }
    if (std::string text = chunk_text(chunk); !text.empty()) {
      rec.text += text;
      const double now = now_seconds();
      if (text_chunks == 0) rec.ttft = now - start;
      else rec.itl.push_back(now - last_chunk);
      last_chunk = now;
      ++text_chunks;
    }
    if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) {
      usage_tokens = u->value("completion_tokens", int64_t{0});
      rec.prompt_tokens = u->value("prompt_tokens", int64_t{0});
    }
  };
  req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    if (status != 200) {
      if (error_body.size() < 4096) error_body.append(data, length);
    } else {
      parser.feed(std::string_view(data, length), on_data);
    }
    return true;
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(req, response, error);
  rec.latency = now_seconds() - start;
  if (!sent) {
    rec.error = fmt::format("request failed: {}", httplib::to_string(error));
  } else if (status != 200) {
    rec.error = fmt::format("HTTP {}: {}", status, error_body.substr(0, 300));
  } else if (rec.error.empty() && !saw_done) {
    rec.error = "the stream ended without [DONE]";
  }
  rec.ok = rec.error.empty();
  rec.output_tokens = usage_tokens.value_or(text_chunks);
  if (text_chunks == 0) rec.ttft = rec.latency;
  return rec;
}

// Servers may close a keep-alive connection right after a response without saying so
// (llama.cpp's server does after each stream); the next request sent on it then fails
// before any response arrives. Such a request is sent once more, on a fresh connection
// (httplib reconnects after the failure); a failure on a fresh connection is final.
RequestRecord send_with(httplib::Client& client, const std::string& path, const std::string& body) {
  const bool reused = client.is_socket_open() != 0;
  bool answered = false;
  RequestRecord rec = send_once(client, path, body, answered);
  if (!rec.ok && reused && !answered) rec = send_once(client, path, body, answered);
  return rec;
}

}  // namespace

void LoadOptions::validate() const {
  DSPARK_CHECK(url.find("://") != std::string::npos, "--url must look like http://host:port, got '{}'", url);
  DSPARK_CHECK(endpoint == "completions" || endpoint == "chat", "--endpoint must be completions or chat, got '{}'",
               endpoint);
  DSPARK_CHECK(max_tokens >= 1, "--max-tokens must be >= 1, got {}", max_tokens);
  DSPARK_CHECK(temperature >= 0, "--temperature must be >= 0, got {}", temperature);
  DSPARK_CHECK(timeout_s > 0, "the request timeout must be > 0, got {}", timeout_s);
}

LoadGenerator::LoadGenerator(LoadOptions options, std::vector<std::string> prompts)
    : options_(std::move(options)), prompts_(std::move(prompts)) {
  options_.validate();
  DSPARK_CHECK(!prompts_.empty(), "no prompts to send");
  order_.resize(prompts_.size());
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::mt19937_64 rng(options_.seed);
  std::shuffle(order_.begin(), order_.end(), rng);

  const size_t scheme_end = options_.url.find("://") + 3;
  const size_t path_start = options_.url.find('/', scheme_end);
  host_ = options_.url.substr(0, path_start);
  std::string path = path_start == std::string::npos ? std::string() : options_.url.substr(path_start);
  while (!path.empty() && path.back() == '/') path.pop_back();
  api_base_ = path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0 ? path : path + "/v1";
}

const std::string& LoadGenerator::prompt_at(int64_t i) const {
  return prompts_[order_[static_cast<size_t>(i) % order_.size()]];
}

std::string LoadGenerator::request_body(const std::string& prompt) const {
  if (options_.endpoint == "chat") {
    return request_body_with({{"messages", json::array({{{"role", "user"}, {"content", prompt}}})}});
  }
  return request_body_with({{"prompt", prompt}});
}

std::string LoadGenerator::request_body_with(json input) const {
  json body = {{"model", options_.model},
               {"max_tokens", options_.max_tokens},
               {"temperature", options_.temperature},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  body.update(input);
  if (options_.ignore_eos) body["ignore_eos"] = true;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void LoadGenerator::resolve_model() {
  if (!options_.model.empty()) return;
  auto client = make_client(host_, 30);
  auto result = client->Get(api_base_ + "/models");
  DSPARK_CHECK(result, "cannot reach {}: {}", options_.url, httplib::to_string(result.error()));
  DSPARK_CHECK(result->status == 200, "GET {}/models answered HTTP {}", api_base_, result->status);
  const json models = json::parse(result->body, nullptr, false);
  DSPARK_CHECK(!models.is_discarded() && models.contains("data") && models["data"].is_array() &&
                   !models["data"].empty() && models["data"][0].contains("id"),
               "GET {}/models returned no model", api_base_);
  options_.model = models["data"][0]["id"].get<std::string>();
}

RequestRecord LoadGenerator::send(const std::string& prompt) const {
  auto client = make_client(host_, options_.timeout_s);
  return send_with(*client, api_base_ + (options_.endpoint == "chat" ? "/chat/completions" : "/completions"),
                   request_body(prompt));
}

RequestRecord LoadGenerator::send_chat(const std::vector<ChatMessage>& messages) const {
  json history = json::array();
  for (const ChatMessage& m : messages) history.push_back({{"role", m.role}, {"content", m.content}});
  auto client = make_client(host_, options_.timeout_s);
  return send_with(*client, api_base_ + "/chat/completions", request_body_with({{"messages", std::move(history)}}));
}

RequestRecord LoadGenerator::warm_up() { return send(prompt_at(0)); }

ServerCounters LoadGenerator::scrape_counters() const {
  auto client = make_client(host_, 30);
  auto result = client->Get("/metrics");
  if (!result || result->status != 200) return {};
  return {parse_spec_counters(result->body), parse_prefix_cache_counters(result->body)};
}

void LoadGenerator::add_counters(LevelResult& result, const ServerCounters& before, const ServerCounters& after) {
  result.tau = mean_acceptance_length(before.spec, after.spec);
  result.mean_verified_length = mean_verified_length(before.spec, after.spec);
  result.drafter_time_share = drafter_time_share(before.spec, after.spec);
  result.prefix_cache_hit_rate = prefix_cache_hit_rate(before.prefix_cache, after.prefix_cache);
}

LevelResult LoadGenerator::run_closed_loop(int64_t concurrency, int64_t num_requests, const ProgressCallback& progress) {
  DSPARK_CHECK(concurrency >= 1, "concurrency must be >= 1, got {}", concurrency);
  DSPARK_CHECK(num_requests >= 1, "the number of requests must be >= 1, got {}", num_requests);
  const std::string path = api_base_ + (options_.endpoint == "chat" ? "/chat/completions" : "/completions");
  std::vector<RequestRecord> records(static_cast<size_t>(num_requests));
  std::atomic<int64_t> next{0};
  Progress report(progress, num_requests);
  const ServerCounters before = scrape_counters();
  const double start = now_seconds();
  std::vector<std::thread> workers;
  for (int64_t w = 0; w < std::min(concurrency, num_requests); ++w) {
    workers.emplace_back([&] {
      auto client = make_client(host_, options_.timeout_s);
      for (int64_t i = next++; i < num_requests; i = next++) {
        records[static_cast<size_t>(i)] = send_with(*client, path, request_body(prompt_at(i)));
        report.done(records[static_cast<size_t>(i)].ok);
      }
    });
  }
  for (auto& t : workers) t.join();
  const double duration = now_seconds() - start;
  LevelResult result = summarize("concurrency", static_cast<double>(concurrency), records, duration);
  add_counters(result, before, scrape_counters());
  return result;
}

LevelResult LoadGenerator::run_open_loop(double rate, int64_t num_requests, const ProgressCallback& progress) {
  DSPARK_CHECK(rate > 0, "the request rate must be > 0, got {}", rate);
  DSPARK_CHECK(num_requests >= 1, "the number of requests must be >= 1, got {}", num_requests);
  const std::string path = api_base_ + (options_.endpoint == "chat" ? "/chat/completions" : "/completions");
  std::vector<RequestRecord> records(static_cast<size_t>(num_requests));
  Progress report(progress, num_requests);
  std::mt19937_64 rng(options_.seed ^ 0x9e3779b97f4a7c15ull);
  std::exponential_distribution<double> gap(rate);
  const ServerCounters before = scrape_counters();
  const auto t0 = std::chrono::steady_clock::now();
  const double start = now_seconds();
  double arrival = 0;
  std::vector<std::thread> senders;
  senders.reserve(static_cast<size_t>(num_requests));
  for (int64_t i = 0; i < num_requests; ++i) {
    if (i > 0) arrival += gap(rng);
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(arrival));
    senders.emplace_back([&, i] {
      auto client = make_client(host_, options_.timeout_s);
      records[static_cast<size_t>(i)] = send_with(*client, path, request_body(prompt_at(i)));
      report.done(records[static_cast<size_t>(i)].ok);
    });
  }
  for (auto& t : senders) t.join();
  const double duration = now_seconds() - start;
  LevelResult result = summarize("rate", rate, records, duration);
  add_counters(result, before, scrape_counters());
  return result;
}

}  // namespace dspark
