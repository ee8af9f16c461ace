// The load generator: its SSE reader and statistics on synthetic input, then a small
// run of every mode (multi-turn conversations included) against a live test server.
#include "loadgen/load_generator.h"

#include <gtest/gtest.h>

#include "loadgen/multi_turn.h"
#include "loadgen/sse_parser.h"
#include "core/check.h"
#include "server/test_server.h"

namespace dspark {
namespace {

std::vector<std::string> parse_in_pieces(const std::string& body, size_t piece) {
  SseParser parser;
  std::vector<std::string> events;
  for (size_t i = 0; i < body.size(); i += piece) {
    parser.feed(std::string_view(body).substr(i, piece), [&](std::string_view d) { events.emplace_back(d); });
  }
  return events;
}

TEST(SseParser, EventsSurviveAnySplit) {
  const std::string body =
      "data: {\"a\":1}\n\n"
      ": keep-alive\n\n"
      "data: one\r\ndata:two\r\n\r\n"
      "event: ping\nid: 3\n\n"
      "data: [DONE]\n\n";
  const std::vector<std::string> expected = {"{\"a\":1}", "one\ntwo", "[DONE]"};
  for (size_t piece : {1, 2, 3, 7, 1000}) EXPECT_EQ(parse_in_pieces(body, piece), expected) << piece;
  EXPECT_TRUE(parse_in_pieces("data: unfinished\n", 4).empty());
}

TEST(BenchReport, PercentilesAndSummary) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 50), 2);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({0, 10}, 99), 9.9);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
  std::vector<RequestRecord> records(3);
  auto record = [](double ttft, double latency, int64_t tokens, std::vector<double> itl) {
    RequestRecord r;
    r.ok = true;
    r.ttft = ttft;
    r.latency = latency;
    r.output_tokens = tokens;
    r.itl = std::move(itl);
    return r;
  };
  records[0] = record(0.1, 1.1, 11, {0.1, 0.1});
  records[1] = record(0.3, 0.7, 5, {0.1, 0.2});
  records[2].error = "HTTP 500";
  const LevelResult r = summarize("concurrency", 2, records, 2.0);
  EXPECT_EQ(r.num_requests, 3);
  EXPECT_EQ(r.num_failed, 1);
  EXPECT_EQ(r.first_error, "HTTP 500");
  EXPECT_EQ(r.output_tokens, 16);
  EXPECT_DOUBLE_EQ(r.ttft_median_ms, 200);
  EXPECT_DOUBLE_EQ(r.tpot_median_ms, 100);  // both requests: 1.0 s / 10 and 0.4 s / 4
  EXPECT_NEAR(r.itl_median_ms, 100, 1e-9);
  EXPECT_DOUBLE_EQ(r.output_tokens_per_s, 8);
  EXPECT_DOUBLE_EQ(r.requests_per_s, 1);
  EXPECT_NE(format_table({r}).find("concurrency 2"), std::string::npos);
  EXPECT_EQ(to_json(r)["tau"], nullptr);
}

TEST(BenchReport, SpecCountersFromPrometheusText) {
  const std::string before_page =
      "# TYPE dspark:spec_decode_num_drafts counter\n"
      "dspark:spec_decode_num_drafts 10\n"
      "dspark:spec_decode_num_draft_tokens 40\n"
      "dspark:spec_decode_num_accepted_tokens 15\n"
      "dspark:spec_decode_verified_length{length=\"0\"} 2\n"
      "dspark:spec_decode_verified_length{length=\"4\"} 10\n"
      "dspark:spec_decode_mean_verified_length 3.3\n"
      "dspark:model_forward_seconds 10\n"
      "dspark:spec_decode_draft_seconds 2\n"
      "dspark:spec_decode_context_seconds 1\n";
  const std::string after_page =
      "dspark:spec_decode_num_drafts 30\n"
      "dspark:spec_decode_num_draft_tokens 100\n"
      "dspark:spec_decode_num_accepted_tokens 55\n"
      "dspark:spec_decode_verified_length{length=\"0\"} 6\n"
      "dspark:spec_decode_verified_length{length=\"2\"} 4\n"
      "dspark:spec_decode_verified_length{length=\"4\"} 22\n"
      "dspark:spec_decode_verified_length{length=\"12x\"} 99\n"  // malformed label: ignored
      "dspark:model_forward_seconds 16\n"
      "dspark:spec_decode_draft_seconds 3.5\n"
      "dspark:spec_decode_context_seconds 1.5\n";
  const auto before = parse_spec_counters(before_page);
  const auto after = parse_spec_counters(after_page);
  ASSERT_TRUE(before && after);
  EXPECT_DOUBLE_EQ(before->verified_rounds, 12);
  EXPECT_DOUBLE_EQ(before->verified_drafts, 40);
  EXPECT_DOUBLE_EQ(*mean_acceptance_length(before, after), 1.0 + 40.0 / 20.0);
  // New rounds: 4 with L=0, 4 with L=2, 12 with L=4 -> (8 + 48) / 20.
  EXPECT_DOUBLE_EQ(*mean_verified_length(before, after), 56.0 / 20.0);
  EXPECT_FALSE(mean_verified_length(before, before).has_value());
  // Drafter: 1.5 + 0.5 of 6 + 2 seconds.
  EXPECT_DOUBLE_EQ(*drafter_time_share(before, after), 2.0 / 8.0);
  EXPECT_FALSE(drafter_time_share(before, before).has_value());
  EXPECT_FALSE(parse_spec_counters("vllm:other_metric 3\n").has_value());
  const auto vllm = parse_spec_counters("vllm:spec_decode_num_drafts_total{model_name=\"m\"} 7\n");
  ASSERT_TRUE(vllm.has_value());
  EXPECT_DOUBLE_EQ(vllm->drafts, 7);
  EXPECT_FALSE(mean_verified_length(vllm, vllm).has_value());
}

LoadOptions options_for(const testing::TestServer& server) {
  LoadOptions o;
  o.url = server.url();
  o.max_tokens = 12;
  o.ignore_eos = true;
  o.timeout_s = 30;
  return o;
}

const std::vector<std::string> kPrompts = {"The cat sat on the mat. The cat sat on the mat. The cat",
                                           "Once upon a time", "Lily and Ben", "One day"};

TEST(LoadGenerator, ClosedAndOpenLoopAgainstALiveServer) {
  testing::TestServerOptions so;
  so.speculator = "ngram";
  so.max_running = 4;
  testing::TestServer server(so);
  LoadGenerator gen(options_for(server), kPrompts);
  gen.resolve_model();
  EXPECT_EQ(gen.options().model, "stories");
  ASSERT_TRUE(gen.warm_up().ok);

  const auto before = gen.scrape_spec_counters();
  ASSERT_TRUE(before.has_value());
  const LevelResult closed = gen.run_closed_loop(2, 6);
  EXPECT_EQ(closed.num_requests, 6);
  EXPECT_EQ(closed.num_failed, 0) << closed.first_error;
  EXPECT_EQ(closed.output_tokens, 6 * 12);  // from the usage blocks
  EXPECT_GT(closed.ttft_median_ms, 0);
  EXPECT_GT(closed.tpot_median_ms, 0);
  EXPECT_GT(closed.output_tokens_per_s, 0);
  EXPECT_GT(closed.requests_per_s, 0);
  const auto after = gen.scrape_spec_counters();
  EXPECT_EQ(closed.prefix_cache_hit_rate.has_value(), gen.scrape_counters().prefix_cache.has_value());
  if (after->drafts > before->drafts) {
    ASSERT_TRUE(closed.tau.has_value());
    EXPECT_GE(*closed.tau, 1.0);
  }

  const LevelResult open = gen.run_open_loop(200, 5);
  EXPECT_EQ(open.num_failed, 0) << open.first_error;
  EXPECT_EQ(open.output_tokens, 5 * 12);
  EXPECT_EQ(open.mode, "rate");

  LoadOptions chat = options_for(server);
  chat.endpoint = "chat";
  chat.url = server.url() + "/v1/";
  LoadGenerator chat_gen(chat, kPrompts);
  chat_gen.resolve_model();
  const LevelResult chat_level = chat_gen.run_closed_loop(3, 3);
  EXPECT_EQ(chat_level.num_failed, 0) << chat_level.first_error;
  EXPECT_EQ(chat_level.output_tokens, 3 * 12);
}

TEST(LoadGenerator, NoSpeculatorMeansNoTau) {
  testing::TestServer server;
  LoadGenerator gen(options_for(server), kPrompts);
  gen.resolve_model();
  const LevelResult r = gen.run_closed_loop(1, 2);
  EXPECT_EQ(r.num_failed, 0);
  EXPECT_FALSE(r.tau.has_value());
}

TEST(MultiTurn, SecondTurnsCarryTheFirstAnswerAgainstALiveServer) {
  testing::TestServer server;
  LoadOptions o = options_for(server);
  o.max_tokens = 6;
  const std::vector<Conversation> conversations = {{"stories", "a", {"Once upon a time", "What did Lily do?"}},
                                                   {"stories", "b", {"One day", "And then?"}}};
  LoadGenerator gen(o, {multi_turn_prompt(conversations[0], {})});
  gen.resolve_model();
  const std::string finished = "dspark:num_requests_finished{finished_reason=\"length\"}";
  const double finished_before = testing::server_metric(server.port(), finished).value_or(0);
  const MultiTurnResult r = run_multi_turn(gen, conversations, 2);

  // Both turns of both conversations reached the server and ran to max_tokens.
  EXPECT_EQ(testing::server_metric(server.port(), finished).value_or(0) - finished_before, 4);
  ASSERT_EQ(r.conversations.size(), 2u);
  ASSERT_EQ(r.turns.size(), 2u);
  for (const TurnSummary& t : r.turns) {
    EXPECT_EQ(t.num_requests, 2);
    EXPECT_EQ(t.num_failed, 0) << t.first_error;
    EXPECT_EQ(t.output_tokens, 2 * 6);
    EXPECT_GT(t.ttft_p50_ms, 0);
  }
  EXPECT_GT(r.turns[1].mean_prompt_tokens, r.turns[0].mean_prompt_tokens);
  for (size_t i = 0; i < conversations.size(); ++i) {
    const ConversationRecord& c = r.conversations[i];
    EXPECT_EQ(c.id, conversations[i].id);
    ASSERT_EQ(c.turns.size(), 2u);
    ASSERT_EQ(c.prompts.size(), 2u);
    const std::string& answer = c.turns[0].text;
    EXPECT_FALSE(answer.empty());
    EXPECT_EQ(c.prompts[0], "Question: " + conversations[i].turns[0] + "\nAnswer:");
    EXPECT_EQ(c.prompts[1], c.prompts[0] + answer + "\nQuestion: " + conversations[i].turns[1] + "\nAnswer:");
  }
  // The hit rate is reported exactly when the server counts prefix-cache lookups.
  const bool counted = gen.scrape_counters().prefix_cache.has_value();
  EXPECT_EQ(r.prefix_cache_hit_rate.has_value(), counted);
  if (counted) {
    EXPECT_GE(*r.prefix_cache_hit_rate, 0.0);
    EXPECT_LE(*r.prefix_cache_hit_rate, 1.0);
  }

  // The chat endpoint sends the history as messages.
  LoadOptions chat = o;
  chat.endpoint = "chat";
  LoadGenerator chat_gen(chat, {"unused"});
  chat_gen.resolve_model();
  const MultiTurnResult chat_result = run_multi_turn(chat_gen, {conversations[0]}, 1);
  ASSERT_EQ(chat_result.turns.size(), 2u);
  EXPECT_EQ(chat_result.turns[1].num_failed, 0) << chat_result.turns[1].first_error;
  EXPECT_GT(chat_result.turns[1].mean_prompt_tokens, chat_result.turns[0].mean_prompt_tokens);
}

TEST(LoadGenerator, FailuresAreRecordedNotThrown) {
  testing::TestServer server;
  LoadOptions o = options_for(server);
  o.model = "not-served";  // 404 for every request
  LoadGenerator gen(o, kPrompts);
  const LevelResult r = gen.run_closed_loop(2, 3);
  EXPECT_EQ(r.num_failed, 3);
  EXPECT_NE(r.first_error.find("404"), std::string::npos);

  const int port = server.port();
  server.shutdown(std::chrono::milliseconds(0));
  LoadOptions gone;
  gone.url = "http://127.0.0.1:" + std::to_string(port);
  gone.timeout_s = 5;
  LoadGenerator unreachable(gone, kPrompts);
  EXPECT_THROW(unreachable.resolve_model(), Error);
  EXPECT_FALSE(unreachable.send("hi").ok);
  LoadOptions no_scheme;
  no_scheme.url = "localhost:8000";
  EXPECT_THROW(LoadGenerator(no_scheme, kPrompts), Error);
  EXPECT_THROW(LoadGenerator(gone, {}), Error);
}

}  // namespace
}  // namespace dspark
