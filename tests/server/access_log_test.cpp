// The server's access log: exactly one line per request, with its status, token counts and
// request id (the OpenAI response id for completions), at info; --log-level warn keeps
// only refusals and server errors.
#include <chrono>
#include <memory>
#include <thread>

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include "core/log.h"
#include "server/access_log.h"
#include "server/test_server.h"

namespace dspark {
namespace {

using nlohmann::json;
using testing::TestServer;
using testing::TestServerOptions;
using testing::http_get;
using testing::http_post;
using testing::http_stream;

std::string completion_body(int64_t max_tokens, bool stream) {
  return json{{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", stream}}
      .dump();
}

// Captures the dspark logger's lines ("[level] message") for the test's duration and
// restores the level afterwards.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1024)) {
    sink_->set_pattern("[%l] %v");
    add_log_sink(sink_);
    set_log_level(spdlog::level::info);
  }
  ~LogCapture() {
    remove_log_sink(sink_);
    set_log_level(spdlog::level::info);
  }

  // The access lines ("[level] METHOD /path ..."), in the order they were written.
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (std::string l : sink_->last_formatted()) {
      while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
      if (l.find("] GET /") != std::string::npos || l.find("] POST /") != std::string::npos) out.push_back(l);
    }
    return out;
  }
  std::vector<std::string> all_lines() const { return sink_->last_formatted(); }
  // The access line is written after the response went out: wait for `n` lines, then a
  // little longer, so that a duplicate would be seen too. (So a test waits for each
  // request's line before sending the next, to know their order.)
  std::vector<std::string> wait_for(size_t n) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (lines().size() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return lines();
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

bool has(const std::string& line, const std::string& part) { return line.find(part) != std::string::npos; }

TEST(ServerAccessLog, OneLinePerRequestWithStatusTokensAndId) {
  TestServer server;
  LogCapture log;

  const auto whole = http_post(server.port(), "/v1/completions", completion_body(6, false));
  ASSERT_EQ(whole.status, 200);
  auto lines = log.wait_for(1);
  ASSERT_EQ(lines.size(), 1u);
  const json& usage = whole.json["usage"];
  EXPECT_EQ(lines[0].rfind("[info] POST /v1/completions 200 id=" + whole.json["id"].get<std::string>() + " ", 0), 0u)
      << lines[0];
  EXPECT_TRUE(has(lines[0], fmt::format(" prompt_tokens={} completion_tokens=6 cached_tokens={} ",
                                        usage["prompt_tokens"].get<int64_t>(),
                                        usage["prompt_tokens_details"]["cached_tokens"].get<int64_t>())))
      << lines[0];
  EXPECT_TRUE(has(lines[0], " duration_ms=")) << lines[0];
  EXPECT_FALSE(has(lines[0], "tau=")) << "no speculator: " << lines[0];

  // A stream is logged once, when it is over, with its id and usage.
  const auto streamed = http_stream(server.port(), "/v1/chat/completions",
                                    json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                         {"max_tokens", 5},
                                         {"temperature", 0},
                                         {"stream", true}}
                                        .dump());
  ASSERT_TRUE(streamed.done);
  lines = log.wait_for(2);
  ASSERT_EQ(lines.size(), 2u);
  const std::string id = streamed.chunks.front()["id"];
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(lines[1].rfind("[info] POST /v1/chat/completions 200 id=" + id + " prompt_tokens=", 0), 0u) << lines[1];
  EXPECT_TRUE(has(lines[1], " completion_tokens=5 ")) << lines[1];

  // Refused requests and other routes: one line each, with a request id of their own.
  EXPECT_EQ(http_post(server.port(), "/v1/completions", R"({"prompt": [1, 99999]})").status, 400);
  log.wait_for(3);
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  log.wait_for(4);
  EXPECT_EQ(http_post(server.port(), "/v1/nothing", "{}").status, 404);
  lines = log.wait_for(5);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[2].rfind("[info] POST /v1/completions 400 id=cmpl-", 0), 0u) << lines[2];
  EXPECT_FALSE(has(lines[2], "prompt_tokens=")) << "refused before it was counted: " << lines[2];
  EXPECT_EQ(lines[3].rfind("[info] GET /health 200 id=req-", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4].rfind("[info] POST /v1/nothing 404 id=req-", 0), 0u) << lines[4];
}

TEST(ServerAccessLog, SpeculatingRequestsReportTau) {
  TestServerOptions o;
  o.speculator = "ngram";
  TestServer server(o);
  LogCapture log;
  ASSERT_EQ(http_post(server.port(), "/v1/completions", completion_body(12, false)).status, 200);
  const auto lines = log.wait_for(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines[0], " tau=")) << lines[0];
}

TEST(ServerAccessLog, WarnLevelKeepsOnlyServerErrors) {
  testing::FailingProposer* faulty = nullptr;
  TestServerOptions o;
  o.make_proposer = [&faulty] {
    auto p = std::make_unique<testing::FailingProposer>();
    faulty = p.get();
    return p;
  };
  TestServer server(o);
  LogCapture log;
  set_log_level(parse_log_level("warn"));

  EXPECT_EQ(http_post(server.port(), "/v1/completions", completion_body(4, false)).status, 200);
  EXPECT_EQ(http_post(server.port(), "/v1/completions", R"({"prompt": [1, 99999]})").status, 400);
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  faulty->armed = true;
  const auto failed = http_post(server.port(), "/v1/completions", completion_body(400, false));
  ASSERT_EQ(failed.status, 500);
  const auto lines = log.wait_for(1);
  ASSERT_EQ(lines.size(), 1u) << "only the failure is logged at warn";
  EXPECT_EQ(lines[0].rfind("[error] POST /v1/completions 500 id=cmpl-", 0), 0u) << lines[0];
  EXPECT_TRUE(has(lines[0], "error=\"")) << lines[0];
  EXPECT_TRUE(has(lines[0], "the drafter failed")) << lines[0];
  // The engine thread logs the failed step itself as well.
  bool step_logged = false;
  for (const std::string& l : log.all_lines()) step_logged |= has(l, "[error] engine step failed");
  EXPECT_TRUE(step_logged);
}

TEST(ServerAccessLog, LineFormat) {
  AccessRecord r;
  r.method = "POST";
  r.path = "/v1/completions";
  r.status = 500;
  r.request_id = "cmpl-1";
  r.set_usage(12, 3, 8);
  r.tau = 2.345;
  r.error = "bad \"thing\"\nhappened";
  EXPECT_EQ(format_access_line(r, 12.34),
            "POST /v1/completions 500 id=cmpl-1 prompt_tokens=12 completion_tokens=3 cached_tokens=8 tau=2.35 "
            "duration_ms=12.3 error=\"bad \\\"thing\\\"\\nhappened\"");
}

TEST(ServerAccessLog, LogLevelNames) {
  EXPECT_EQ(parse_log_level("trace"), spdlog::level::trace);
  EXPECT_EQ(parse_log_level("warn"), spdlog::level::warn);
  EXPECT_EQ(parse_log_level("error"), spdlog::level::err);
  EXPECT_EQ(parse_log_level("off"), spdlog::level::off);
  EXPECT_THROW(parse_log_level("loud"), Error);
}

}  // namespace
}  // namespace dspark
