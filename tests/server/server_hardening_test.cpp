// The server against hostile or careless clients (issue #17): bounded stop strings, API
// key / content type / Host / CORS checks, slow and idle connections that must not hold
// workers, pipelining, clients that leave a non-streaming request, memory after large
// bodies, GET /v1/models/{id}, OpenAI's final stream chunk, clean JSON error messages.

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "server/raw_connection.h"
#include "server/test_server.h"

namespace dspark {
namespace {

using nlohmann::json;
using testing::TestServer;
using testing::TestServerOptions;
using testing::http_get;
using testing::http_post;
using testing::http_stream;
using testing::RawConnection;
using testing::rss_bytes;
using Clock = std::chrono::steady_clock;

std::string completion(int64_t max_tokens, json extra = json::object()) {
  json body = {{"model", "stories"}, {"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0}};
  body.update(extra);
  return body.dump();
}

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10);
  c.set_connection_timeout(5);
  return c;
}

size_t count(const std::string& haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// ---- 1. stop strings are bounded ----

TEST(ServerHardening, StopStringsAreBoundedInCountAndLength) {
  TestServer server;
  const auto too_many = http_post(server.port(), "/v1/completions",
                                  completion(4, {{"stop", std::vector<std::string>(65, "zz")}}));
  EXPECT_EQ(too_many.status, 400) << too_many.body;
  EXPECT_EQ(too_many.json["error"]["param"], "stop");
  const auto too_long = http_post(server.port(), "/v1/completions",
                                  completion(4, {{"stop", std::string(257, 'z')}}));
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_EQ(too_long.json["error"]["param"], "stop");
  // At the limits: served, and quickly.
  std::vector<std::string> stops;
  for (int i = 0; i < 64; ++i) stops.push_back(std::string(255, 'z') + std::to_string(i % 10));
  const auto start = Clock::now();
  const auto ok = http_post(server.port(), "/v1/completions", completion(64, {{"stop", stops}}));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
}

// ---- 3. access: API key, content type, Host, CORS ----

TEST(ServerHardening, ApiKeyIsRequiredOnV1Only) {
  TestServerOptions o;
  o.configure_http = [](HttpServerOptions& h) { h.access.api_key = "s3cret"; };
  TestServer server(o);
  auto c = client(server.port());
  auto no_key = c.Get("/v1/models");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  EXPECT_EQ(json::parse(no_key->body)["error"]["code"], "invalid_api_key");
  auto wrong = c.Post("/v1/completions", httplib::Headers{{"Authorization", "Bearer nope"}}, completion(2),
                      "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto models = c.Get("/v1/models", httplib::Headers{{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  auto post = c.Post("/v1/completions", httplib::Headers{{"Authorization", "Bearer s3cret"}}, completion(2),
                     "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 200) << post->body;
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  EXPECT_EQ(http_get(server.port(), "/metrics").status, 200);
}

TEST(ServerHardening, PostBodiesMustBeDeclaredJson) {
  TestServer server;
  auto c = client(server.port());
  auto plain = c.Post("/v1/completions", completion(2), "text/plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 415);
  EXPECT_EQ(json::parse(plain->body)["error"]["type"], "invalid_request_error");
  auto form = c.Post("/v1/chat/completions", "a=b", "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 415);
  auto charset = c.Post("/v1/completions", completion(2), "Application/JSON; charset=utf-8");
  ASSERT_TRUE(charset);
  EXPECT_EQ(charset->status, 200) << charset->body;
  EXPECT_EQ(server.loop().stats().num_rejected, 0);
}

TEST(ServerHardening, AllowedHostsAreCheckedAgainstTheHostHeader) {
  TestServerOptions o;
  o.configure_http = [](HttpServerOptions& h) { h.access.allowed_hosts = {"api.example.com", "LOCALHOST"}; };
  TestServer server(o);
  auto c = client(server.port());
  auto evil = c.Get("/v1/models", httplib::Headers{{"Host", "evil.example.net"}});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 421);
  auto good = c.Get("/v1/models", httplib::Headers{{"Host", "api.example.com:8000"}});
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  auto local = c.Get("/v1/models", httplib::Headers{{"Host", "localhost:1234"}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->status, 200);
  auto health = c.Get("/health", httplib::Headers{{"Host", "10.1.2.3:8000"}});  // probes stay open
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(ServerHardening, ALoopbackServerAnswersOnlyToLoopbackNamesByDefault) {
  EXPECT_EQ(default_allowed_hosts("127.0.0.1"), (std::vector<std::string>{"localhost", "127.0.0.1", "[::1]"}));
  EXPECT_EQ(default_allowed_hosts("::1"), (std::vector<std::string>{"localhost", "127.0.0.1", "[::1]"}));
  EXPECT_EQ(default_allowed_hosts("127.0.1.1").back(), "127.0.1.1");
  EXPECT_TRUE(default_allowed_hosts("0.0.0.0").empty());
  EXPECT_TRUE(default_allowed_hosts("10.1.2.3").empty());

  // What `dspark serve` sets up on 127.0.0.1: a DNS-rebinding page's name gets 421.
  TestServerOptions o;
  o.configure_http = [](HttpServerOptions& h) { h.access.allowed_hosts = default_allowed_hosts(h.host); };
  TestServer server(o);
  auto c = client(server.port());
  auto rebound = c.Get("/v1/models", httplib::Headers{{"Host", "attacker.example:8000"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 421);
  for (const char* host : {"127.0.0.1:8000", "localhost", "[::1]:8000"}) {
    auto ok = c.Get("/v1/models", httplib::Headers{{"Host", host}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << host;
  }
}

TEST(ServerHardening, CorsHeadersOnlyWhenAnOriginIsConfigured) {
  {
    TestServer server;
    auto c = client(server.port());
    auto r = c.Get("/v1/models", httplib::Headers{{"Origin", "https://evil.example"}});
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
    auto pre = c.Options("/v1/completions", httplib::Headers{{"Origin", "https://evil.example"}});
    ASSERT_TRUE(pre);
    EXPECT_FALSE(pre->has_header("Access-Control-Allow-Origin"));
    EXPECT_GE(pre->status, 400);
  }
  TestServerOptions o;
  o.configure_http = [](HttpServerOptions& h) {
    h.access.cors_origin = "https://app.example";
    h.access.api_key = "k";
  };
  TestServer server(o);
  auto c = client(server.port());
  auto pre = c.Options("/v1/chat/completions", httplib::Headers{{"Origin", "https://app.example"},
                                                               {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);  // preflights carry no credentials
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
  auto r = c.Get("/v1/models", httplib::Headers{{"Authorization", "Bearer k"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
}

// ---- 7. smaller protocol defects ----

TEST(ServerHardening, ModelById) {
  TestServer server;
  const auto found = http_get(server.port(), "/v1/models/stories");
  ASSERT_EQ(found.status, 200) << found.body;
  EXPECT_EQ(found.json["id"], "stories");
  EXPECT_EQ(found.json["object"], "model");
  const auto other = http_get(server.port(), "/v1/models/gpt-4o");
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.json["error"]["code"], "model_not_found");
  EXPECT_EQ(http_get(server.port(), "/v1/models/org/stories").status, 404);
}

TEST(ServerHardening, LastStreamChunkIsAnEmptyDeltaWithTheFinishReason) {
  TestServer server;
  const json chat = {{"model", "stories"},
                     {"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
                     {"max_tokens", 8},
                     {"temperature", 0},
                     {"stream", true}};
  const auto r = http_stream(server.port(), "/v1/chat/completions", chat.dump());
  ASSERT_EQ(r.status, 200);
  ASSERT_GE(r.chunks.size(), 2u);
  const json& last = r.chunks.back()["choices"][0];
  EXPECT_EQ(last["finish_reason"], "length");
  EXPECT_EQ(last["delta"], json::object());
  for (size_t i = 0; i + 1 < r.chunks.size(); ++i) EXPECT_TRUE(r.chunks[i]["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(r.text.empty());

  const auto c = http_stream(server.port(), "/v1/completions", completion(8, {{"stream", true}}));
  ASSERT_EQ(c.status, 200);
  EXPECT_EQ(c.chunks.back()["choices"][0]["text"], "");
  EXPECT_EQ(c.chunks.back()["choices"][0]["finish_reason"], "length");
}

TEST(ServerHardening, InvalidJsonErrorsNameNoLibraryInternals) {
  TestServer server;
  for (const std::string body : {"{x", "{\"prompt\": \"a\",}", "", "[1, 2"}) {
    const auto r = http_post(server.port(), "/v1/completions", body);
    EXPECT_EQ(r.status, 400) << body;
    const std::string message = r.json["error"]["message"];
    EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
    EXPECT_EQ(message.find("last read"), std::string::npos) << message;
    EXPECT_EQ(message.rfind("the request body is not valid JSON: ", 0), 0u) << message;
  }
}

TEST(ServerHardening, PipelinedRequestsAreAllAnswered) {
  TestServer server;
  RawConnection conn(server.port());
  ASSERT_TRUE(conn.connected());
  const std::string body = completion(3);
  const std::string post = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_TRUE(conn.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + post + "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string got = conn.read_until(
      [](const std::string& s) { return count(s, "HTTP/1.1 200") >= 3 && s.find("\"object\":\"list\"") != std::string::npos; },
      std::chrono::seconds(10));
  EXPECT_EQ(count(got, "HTTP/1.1 200"), 3u) << got;
  EXPECT_NE(got.find("text_completion"), std::string::npos);
}

// ---- 2. slow and idle connections hold no worker ----

TEST(ServerHardening, SlowHeadersAndIdleConnectionsDoNotStarveWorkers) {
  TestServerOptions o;
  o.configure_http = [](HttpServerOptions& h) {
    h.num_threads = 4;
    h.request_read_timeout_seconds = 1.5;
  };
  TestServer server(o);
  // 6 clients dripping their headers a byte every 100 ms, 40 idle connections.
  std::vector<std::unique_ptr<RawConnection>> drippers, idle;
  for (int i = 0; i < 6; ++i) drippers.push_back(std::make_unique<RawConnection>(server.port()));
  for (int i = 0; i < 40; ++i) idle.push_back(std::make_unique<RawConnection>(server.port()));
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    const std::string head = "GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    for (size_t i = 0; i < head.size() && !stop; ++i) {
      for (auto& d : drippers) d->send(head.substr(i, 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 3; ++i) {
    auto c = client(server.port());
    c.set_read_timeout(2);
    const auto start = Clock::now();
    auto r = c.Get("/health");
    ASSERT_TRUE(r) << "health did not answer";
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0);
  }
  // The drippers' requests may not take longer than request_read_timeout_seconds.
  const std::string got = drippers[0]->read_until([](const std::string&) { return false; }, std::chrono::seconds(4));
  EXPECT_TRUE(drippers[0]->closed_by_peer());
  EXPECT_EQ(got.find("200"), std::string::npos);
  stop = true;
  drip.join();
}

TEST(ServerHardening, AtTheConnectionCapTheLongestParkedIsClosed) {
  TestServerOptions o;
  o.configure_http = [](HttpServerOptions& h) {
    h.num_threads = 2;
    h.max_connections = 8;
  };
  TestServer server(o);
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(std::make_unique<RawConnection>(server.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  idle[0]->read_until([](const std::string&) { return false; }, std::chrono::milliseconds(500));
  EXPECT_TRUE(idle[0]->closed_by_peer());
}

// ---- 4. a non-streaming client that leaves ----

// Slows every engine step down, so that a request runs for seconds.
class SlowProposer final : public Proposer {
 public:
  ProposerCapabilities capabilities() const override { return {}; }
  int32_t num_speculative_tokens() const override { return 1; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (size_t i = 0; i < requests.size(); ++i) drafts[i] = Draft{};
  }
};

TEST(ServerHardening, NonStreamingRequestIsCancelledWhenItsClientLeaves) {
  TestServerOptions o;
  o.make_proposer = [] { return std::make_unique<SlowProposer>(); };
  TestServer server(o);
  {
    RawConnection conn(server.port());
    ASSERT_TRUE(conn.connected());
    const std::string body = completion(400, {{"ignore_eos", true}});  // ~8 s of steps
    ASSERT_TRUE(conn.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(testing::server_metric(server.port(), "dspark:num_requests_running"), 1.0);
  }  // the client closes its connection
  EXPECT_TRUE(testing::wait_until_idle(server.port(), std::chrono::milliseconds(1500)));
  EXPECT_EQ(server.loop().stats().finished[static_cast<size_t>(FinishReason::kCancelled)], 1);
}

// ---- 5. memory goes back after large bodies ----


TEST(ServerHardening, ResidentMemoryStaysBoundedAfterLargeBodies) {
  TestServerOptions o;
  o.max_body_bytes = 16u << 20;
  TestServer server(o);
  // ~4 MB of token ids: parsed (a JSON tree of ~32 MB), then refused for the context
  // length. Before the fix most worker threads that served one kept ~45 MB resident.
  json big = {{"model", "stories"}, {"prompt", std::vector<int32_t>(2'000'000, 1)}};
  const std::string body = big.dump();
  big = nullptr;
  auto send_big = [&] {
    const auto r = http_post(server.port(), "/v1/completions", body);
    EXPECT_EQ(r.status, 400);
  };
  for (int i = 0; i < 2; ++i) send_big();
  const int64_t warm = rss_bytes();
  for (int i = 0; i < 8; ++i) send_big();
  const int64_t after = rss_bytes();
  EXPECT_LT(after - warm, int64_t{150} << 20) << "warm " << (warm >> 20) << " MiB, after " << (after >> 20) << " MiB";
}

}  // namespace
}  // namespace dspark
