// dspark's HTTP server end to end on loopback with stories260K: responses equal the
// offline generate_one output (streaming or not, with and without a speculator),
// concurrent clients, client disconnects, every kind of bad input, overload, graceful
// shutdown.
#include <thread>

#include <gtest/gtest.h>

#include "server/test_server.h"
#include "spec/drafter_fixtures.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using nlohmann::json;
using testing::OfflineReference;
using testing::TestServer;
using testing::TestServerOptions;
using testing::greedy_options;
using testing::http_get;
using testing::http_post;
using testing::http_stream;
using testing::server_metric;

const std::vector<std::string> kPrompts = {"Once upon a time", "The cat sat on the mat. The cat",
                                           "Lily and Ben went to the park", "One day, a little bird"};

std::string completion_body(const std::string& prompt, int64_t max_tokens, bool stream, json extra = json::object()) {
  json body = {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", stream}};
  if (stream) body["stream_options"] = {{"include_usage", true}};
  body.update(extra);
  return body.dump();
}

OfflineReference& offline() {
  static OfflineReference reference;
  return reference;
}

class GreedyEquality : public ::testing::TestWithParam<std::string> {};

TEST_P(GreedyEquality, StreamingAndWholeResponsesEqualOfflineOutput) {
  TestServerOptions o;
  o.max_running = 4;
  o.speculator = GetParam();
  if (GetParam() == "draft") o.speculator = testing::stories_dir().string();
  if (GetParam() == "dspark") {
    // A randomly initialised DSpark block drafter for stories260K (rarely right, which is
    // what losslessness must survive), reading the target's layers 1 and 2.
    const ModelConfig target = ModelConfig::from_file(testing::stories_dir() / "config.json");
    const DrafterConfig config = testing::make_drafter_config(target, DrafterKind::kDSpark, {1, 2}, /*block_size=*/4);
    o.speculator = testing::write_random_drafter(config, testing::make_temp_dir("server-dspark-drafter")).string();
    o.num_spec_tokens = 0;
  }
  TestServer server(o);
  for (const std::string& prompt : kPrompts) {
    const GenerationResult expected = offline().run(offline().encode(prompt), greedy_options(48));
    const std::string reason(finish_reason_name(expected.finish_reason));

    const auto whole = http_post(server.port(), "/v1/completions", completion_body(prompt, 48, false));
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(whole.json["choices"][0]["text"], expected.text) << prompt;
    EXPECT_EQ(whole.json["choices"][0]["finish_reason"], reason);
    EXPECT_EQ(whole.json["usage"]["completion_tokens"], expected.tokens.size());
    EXPECT_EQ(whole.json["usage"]["prompt_tokens"], expected.prompt_tokens);

    const auto streamed = http_stream(server.port(), "/v1/completions", completion_body(prompt, 48, true));
    ASSERT_EQ(streamed.status, 200);
    EXPECT_TRUE(streamed.done);
    EXPECT_EQ(streamed.text, expected.text) << prompt;
    EXPECT_EQ(streamed.finish_reason, reason);
    ASSERT_TRUE(streamed.usage.has_value());
    EXPECT_EQ((*streamed.usage)["completion_tokens"], expected.tokens.size());
    EXPECT_EQ((*streamed.usage)["total_tokens"], expected.prompt_tokens + static_cast<int64_t>(expected.tokens.size()));
  }
  // The same prompt as token ids (no BOS added to an id prompt).
  const std::vector<int32_t> ids = offline().encode(kPrompts[0]);
  const GenerationResult expected = offline().run(ids, greedy_options(20));
  const auto by_ids = http_post(server.port(), "/v1/completions",
                                json{{"prompt", ids}, {"max_tokens", 20}, {"temperature", 0}}.dump());
  ASSERT_EQ(by_ids.status, 200) << by_ids.body;
  EXPECT_EQ(by_ids.json["choices"][0]["text"], expected.text);

  // Chat: the simple format of models without a chat template.
  ChatConversation conversation;
  conversation.messages.push_back({{"role", "user"}, {"content", "Tell me a story about a dog."}});
  const std::string chat_prompt = ChatFormat().render(conversation);
  const GenerationResult chat_expected = offline().run(offline().encode(chat_prompt), greedy_options(32));
  const json chat_body = {{"messages", {{{"role", "user"}, {"content", "Tell me a story about a dog."}}}},
                          {"max_completion_tokens", 32}, {"temperature", 0}};
  const auto chat = http_post(server.port(), "/v1/chat/completions", chat_body.dump());
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.json["choices"][0]["message"]["content"], chat_expected.text);
  json stream_body = chat_body;
  stream_body["stream"] = true;
  const auto chat_stream = http_stream(server.port(), "/v1/chat/completions", stream_body.dump());
  EXPECT_EQ(chat_stream.text, chat_expected.text);
  ASSERT_FALSE(chat_stream.chunks.empty());
  EXPECT_EQ(chat_stream.chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(chat_stream.usage.has_value());  // not asked for

  const auto drafts = server_metric(server.port(), "dspark:spec_decode_num_drafts");
  ASSERT_TRUE(drafts.has_value());
  if (GetParam().empty()) {
    EXPECT_EQ(*drafts, 0);
  } else {
    EXPECT_GT(*drafts, 0);
  }
  if (GetParam() == "draft") {  // the target drafting for itself: every greedy draft is accepted
    EXPECT_EQ(server_metric(server.port(), "dspark:spec_decode_num_accepted_tokens"),
              server_metric(server.port(), "dspark:spec_decode_num_draft_tokens"));
  }
}

INSTANTIATE_TEST_SUITE_P(Speculators, GreedyEquality, ::testing::Values("", "ngram", "draft", "dspark"),
                         [](const auto& info) { return info.param.empty() ? std::string("plain") : info.param; });

TEST(Server, StopStringsAndSeededSamplingMatchOffline) {
  TestServer server;
  const std::string prompt = kPrompts[0];
  const GenerationResult stopped = offline().run(offline().encode(prompt), greedy_options(60, {"park"}));
  const auto whole = http_post(server.port(), "/v1/completions", completion_body(prompt, 60, false, {{"stop", "park"}}));
  EXPECT_EQ(whole.json["choices"][0]["text"], stopped.text);
  EXPECT_EQ(whole.json["choices"][0]["finish_reason"], finish_reason_name(stopped.finish_reason));

  GenerationOptions sampled = greedy_options(40);
  sampled.sampling.temperature = 0.9f;
  sampled.sampling.top_p = 0.95f;
  sampled.sampling.top_k = 50;
  sampled.sampling.seed = 1234;
  sampled.sampling.position_keyed = true;  // what a request's explicit seed sets
  const GenerationResult expected = offline().run(offline().encode(prompt), sampled);
  const json extra = {{"temperature", 0.9}, {"top_p", 0.95}, {"top_k", 50}, {"seed", 1234}};
  EXPECT_EQ(http_post(server.port(), "/v1/completions", completion_body(prompt, 40, false, extra)).json["choices"][0]["text"],
            expected.text);
  EXPECT_EQ(http_stream(server.port(), "/v1/completions", completion_body(prompt, 40, true, extra)).text, expected.text);
}

TEST(Server, SixteenConcurrentStreamingClients) {
  TestServerOptions o;
  o.speculator = "ngram";
  TestServer server(o);
  std::vector<std::string> prompts;
  std::vector<GenerationResult> expected;
  for (int i = 0; i < 16; ++i) {
    prompts.push_back(kPrompts[i % kPrompts.size()] + (i < 8 ? "" : " and"));
    expected.push_back(offline().run(offline().encode(prompts.back()), greedy_options(64)));
  }
  std::vector<testing::StreamReply> replies(16);
  std::vector<std::thread> clients;
  for (int i = 0; i < 16; ++i) {
    clients.emplace_back([&, i] {
      replies[i] = http_stream(server.port(), "/v1/completions", completion_body(prompts[i], 64, true));
    });
  }
  for (auto& c : clients) c.join();
  for (int i = 0; i < 16; ++i) {
    EXPECT_TRUE(replies[i].done) << i;
    EXPECT_EQ(replies[i].text, expected[i].text) << prompts[i];
    ASSERT_TRUE(replies[i].usage.has_value());
    EXPECT_EQ((*replies[i].usage)["completion_tokens"], expected[i].tokens.size());
  }
  EXPECT_TRUE(testing::wait_until_idle(server.port(), std::chrono::milliseconds(2000)));
}

TEST(Server, ClientDisconnectCancelsItsRequestAndFreesBlocks) {
  TestServerOptions o;
  o.heartbeat_seconds = 0.02;
  TestServer server(o);
  int chunks = 0;
  // After its third chunk the client holds the engine (so the request cannot simply run to
  // completion first) and goes away; the server notices at its next writes (heartbeats).
  const auto reply = http_stream(server.port(), "/v1/completions",
                                 completion_body("Once upon a time", 480, true, {{"ignore_eos", true}}),
                                 [&](const json&) {
                                   if (++chunks < 3) return true;
                                   server.loop().pause();
                                   return false;
                                 });
  EXPECT_FALSE(reply.done);
  EXPECT_EQ(chunks, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GT(server_metric(server.port(), "dspark:kv_cache_blocks_used"), 0.0);  // still held
  server.loop().resume();
  ASSERT_TRUE(testing::wait_until_idle(server.port(), std::chrono::milliseconds(5000)));
  EXPECT_EQ(server_metric(server.port(), "dspark:num_requests_finished{finished_reason=\"cancelled\"}"), 1.0);
  EXPECT_EQ(server_metric(server.port(), "dspark:num_requests_finished{finished_reason=\"length\"}"), 0.0);
  EXPECT_LT(*server_metric(server.port(), "dspark:generation_tokens"), 480.0);
  // Still serving.
  EXPECT_EQ(http_post(server.port(), "/v1/completions", completion_body("Hi", 4, false)).status, 200);
}

void expect_error(const testing::HttpReply& r, int status, const char* param, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.body;
  ASSERT_TRUE(r.json.is_object() && r.json.contains("error")) << what << ": " << r.body;
  const json& e = r.json["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << what;
  EXPECT_TRUE(e["type"].is_string()) << what;
  EXPECT_TRUE(e.contains("code")) << what;
  ASSERT_TRUE(e.contains("param")) << what;
  if (param) {
    EXPECT_EQ(e["param"], param) << what;
  }
}

TEST(Server, BadInputGetsItsStatusAndTheServerKeepsServing) {
  TestServerOptions o;
  o.max_body_bytes = 64 * 1024;
  o.max_running = 4;
  TestServer server(o);
  const int port = server.port();
  struct Case {
    const char* path;
    std::string body;
    int status;
    const char* param;
  };
  const std::string too_long(4000, 'x');  // ~2000+ tokens with a 512-token vocabulary; context is 512
  const std::vector<Case> cases = {
      {"/v1/completions", "{\"prompt\": \"x\",", 400, nullptr},
      {"/v1/completions", "[]", 400, nullptr},
      {"/v1/completions", R"({"prompt": 7})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": "ten"})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": "x", "stream": 1})", 400, "stream"},
      {"/v1/completions", R"({"prompt": "x", "temperature": -1})", 400, "temperature"},
      {"/v1/completions", R"({"prompt": "x", "top_p": 0})", 400, "top_p"},
      {"/v1/completions", R"({"prompt": "x", "n": 40})", 400, "n"},
      {"/v1/completions", R"({"prompt": "x", "n": 16})", 400, "n"},  // more than the 4 sequences decoded at once
      {"/v1/completions", R"({"prompt": [1, 99999]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": "x", "model": "gpt-4"})", 404, "model"},
      {"/v1/completions", json{{"prompt", too_long}}.dump(), 400, "prompt"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "temperature": "warm"})", 400,
       "temperature"},
      {"/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", too_long}}}}}.dump(), 400, "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "robot", "content": "x"}]})", 400, "messages[0].role"},
      {"/v1/nothing", "{}", 404, nullptr},
      {"/v1/completions", std::string(100 * 1024, ' '), 413, nullptr},
  };
  for (const Case& c : cases) {
    const auto r = http_post(port, c.path, c.body);
    expect_error(r, c.status, c.param, std::string(c.path) + " " + c.body.substr(0, 80));
    // Streaming requests fail the same way, before any event is sent.
    const json parsed = json::parse(c.body, nullptr, false);
    if (parsed.is_object() && !(c.param && std::string(c.param) == "stream")) {
      json body = parsed;
      body["stream"] = true;
      EXPECT_EQ(http_stream(port, c.path, body.dump()).status, c.status) << c.body.substr(0, 80);
    }
  }
  const auto too_long_reply = http_post(port, "/v1/completions", json{{"prompt", too_long}}.dump());
  EXPECT_EQ(too_long_reply.json["error"]["code"], "context_length_exceeded");
  // Unknown top-level fields are ignored.
  EXPECT_EQ(http_post(port, "/v1/completions", completion_body("Hi", 3, false, {{"frobnicate", true}})).status, 200);
  // The server is unharmed: a normal request still succeeds and nothing leaked.
  const auto ok = http_post(port, "/v1/completions", completion_body("Once upon a time", 8, false));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.json["usage"]["completion_tokens"], 8);
  EXPECT_TRUE(testing::wait_until_idle(port, std::chrono::milliseconds(2000)));
  EXPECT_EQ(server_metric(port, "dspark:num_requests_finished{finished_reason=\"error\"}"), 0.0);
}

TEST(Server, FullQueueGets429UntilThereIsRoom) {
  TestServerOptions o;
  o.max_running = 1;
  o.max_waiting = 1;
  o.heartbeat_seconds = 0.05;
  TestServer server(o);
  server.loop().pause();  // admitted requests stay in flight
  std::vector<testing::StreamReply> held(2);
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back([&, i] {
      held[i] = http_stream(server.port(), "/v1/completions", completion_body("Once upon a time", 6, true));
    });
  }
  // Wait until both are in flight.
  for (int i = 0; i < 200 && server.loop().stats().in_flight < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(server.loop().stats().in_flight, 2);
  const auto refused = http_post(server.port(), "/v1/completions", completion_body("Hi", 4, false));
  expect_error(refused, 429, nullptr, "queue full");
  EXPECT_EQ(refused.json["error"]["code"], "queue_full");
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // queued streams send heartbeats meanwhile
  server.loop().resume();
  for (auto& c : clients) c.join();
  for (const auto& r : held) {
    EXPECT_TRUE(r.done);
    EXPECT_EQ(r.finish_reason, "length");
    EXPECT_GT(r.heartbeats, 0);
  }
  EXPECT_EQ(http_post(server.port(), "/v1/completions", completion_body("Hi", 4, false)).status, 200);
  EXPECT_EQ(server_metric(server.port(), "dspark:num_requests_rejected"), 1.0);
}

TEST(Server, AnEngineFailureIsReportedToItsClientsOnly) {
  testing::FailingProposer* faulty = nullptr;
  TestServerOptions o;
  o.make_proposer = [&faulty] {
    auto p = std::make_unique<testing::FailingProposer>();
    faulty = p.get();
    return p;
  };
  TestServer server(o);
  // A streaming client sees the error as an event, then [DONE].
  bool armed = false;
  const auto streamed = http_stream(server.port(), "/v1/completions",
                                    completion_body("Once upon a time", 400, true, {{"ignore_eos", true}}),
                                    [&](const json&) {
                                      if (!armed) faulty->armed = armed = true;
                                      return true;
                                    });
  EXPECT_EQ(streamed.status, 200);
  ASSERT_TRUE(streamed.error.has_value());
  EXPECT_EQ((*streamed.error)["type"], "server_error");
  EXPECT_NE((*streamed.error)["message"].get<std::string>().find("the drafter failed"), std::string::npos);
  EXPECT_TRUE(streamed.done);
  // A whole-response client gets a 500 with an OpenAI error body.
  faulty->armed = true;
  const auto whole = http_post(server.port(), "/v1/completions",
                               completion_body("Once upon a time", 400, false, {{"ignore_eos", true}}));
  expect_error(whole, 500, nullptr, "engine failure");
  // The next request is served normally.
  EXPECT_EQ(http_post(server.port(), "/v1/completions", completion_body("Hi", 5, false)).status, 200);
  EXPECT_EQ(server_metric(server.port(), "dspark:num_requests_finished{finished_reason=\"error\"}"), 2.0);
  EXPECT_TRUE(testing::wait_until_idle(server.port(), std::chrono::milliseconds(2000)));
}

TEST(Server, ModelsHealthAndMetricsEndpoints) {
  TestServer server;
  const auto models = http_get(server.port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json["object"], "list");
  EXPECT_EQ(models.json["data"][0]["id"], "stories");
  EXPECT_EQ(models.json["data"][0]["max_model_len"], 512);
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  const auto metrics = http_get(server.port(), "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(testing::metric(metrics.body, "dspark:kv_cache_blocks_used"), 0.0);
  EXPECT_GT(*testing::metric(metrics.body, "dspark:kv_cache_blocks_total"), 0.0);
  // The model's packed weights and KV pool are resident; at most all of them in 2 MB pages.
  const double resident = testing::metric(metrics.body, "dspark:weights_kv_resident_bytes").value_or(-1);
  EXPECT_GT(resident, 0.0);
  EXPECT_LE(testing::metric(metrics.body, "dspark:weights_kv_huge_page_bytes").value_or(-1), resident);
  EXPECT_GE(testing::metric(metrics.body, "dspark:weights_kv_huge_page_bytes").value_or(-1), 0.0);
  http_post(server.port(), "/v1/completions", completion_body("Hi", 5, false));
  EXPECT_EQ(server_metric(server.port(), "dspark:e2e_request_latency_seconds_count"), 1.0);
  EXPECT_EQ(server_metric(server.port(), "dspark:time_to_first_token_seconds_count"), 1.0);
  EXPECT_EQ(server_metric(server.port(), "dspark:generation_tokens"), 5.0);
}

TEST(Server, GracefulShutdownFinishesInFlightStreams) {
  TestServer server;
  testing::StreamReply reply;
  std::thread client([&] {
    reply = http_stream(server.port(), "/v1/completions",
                        completion_body("Once upon a time", 300, true, {{"ignore_eos", true}}));
  });
  for (int i = 0; i < 200 && server.loop().stats().in_flight == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.shutdown(std::chrono::milliseconds(20000));
  client.join();
  EXPECT_TRUE(reply.done);
  EXPECT_EQ(reply.finish_reason, "length");
  EXPECT_EQ((*reply.usage)["completion_tokens"], 300);
  EXPECT_EQ(http_get(server.port(), "/health").status, 0);  // no longer listening
}

TEST(Server, ShutdownCancelsWhatTheGraceDoesNotCover) {
  TestServer server;
  server.loop().pause();  // the request can never finish on its own
  testing::StreamReply reply;
  std::thread client([&] { reply = http_stream(server.port(), "/v1/completions", completion_body("Hi", 50, true)); });
  for (int i = 0; i < 200 && server.loop().stats().in_flight == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.shutdown(std::chrono::milliseconds(100));
  client.join();
  EXPECT_TRUE(reply.done);
  EXPECT_EQ(reply.finish_reason, "cancelled");
}

}  // namespace
}  // namespace dspark
