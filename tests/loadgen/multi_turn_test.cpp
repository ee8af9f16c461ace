// The multi-turn benchmark's pure parts: the prompts of later turns, the per-turn
// summaries, the prefix-cache counters and the report. The run against a live server is
// in load_generator_test.cpp (it needs the test server).
#include "loadgen/multi_turn.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

const Conversation kConversation{"writing", "81", {"Write a poem.", "Now make it rhyme.", "Shorter."}};

TEST(MultiTurnPrompt, FirstTurnIsThePlainQuestionFormat) {
  EXPECT_EQ(multi_turn_prompt(kConversation, {}), "Question: Write a poem.\nAnswer:");
}

TEST(MultiTurnPrompt, LaterTurnsRepeatEarlierTurnsWithTheirAnswersVerbatim) {
  const std::string answer1 = " Roses are red,\nviolets blue.";
  const std::string turn2 = multi_turn_prompt(kConversation, {answer1});
  EXPECT_EQ(turn2,
            "Question: Write a poem.\nAnswer: Roses are red,\nviolets blue.\n"
            "Question: Now make it rhyme.\nAnswer:");
  // The history is turn 1's prompt followed by its answer, byte for byte: what a prefix
  // cache keyed on tokens can match.
  const std::string history = multi_turn_prompt(kConversation, {}) + answer1;
  EXPECT_EQ(turn2.substr(0, history.size()), history);

  const std::string turn3 = multi_turn_prompt(kConversation, {answer1, " Done"});
  EXPECT_EQ(turn3.substr(0, turn2.size()), turn2);
  EXPECT_EQ(turn3.substr(turn2.size()), " Done\nQuestion: Shorter.\nAnswer:");
  EXPECT_THROW(multi_turn_prompt(kConversation, {"a", "b", "c"}), Error);  // no fourth turn
}

TEST(MultiTurnPrompt, ChatHistoryAlternatesUserAndAssistant) {
  const auto messages = multi_turn_messages(kConversation, {" Roses."});
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].role, "user");
  EXPECT_EQ(messages[0].content, "Write a poem.");
  EXPECT_EQ(messages[1].role, "assistant");
  EXPECT_EQ(messages[1].content, " Roses.");
  EXPECT_EQ(messages[2].role, "user");
  EXPECT_EQ(messages[2].content, "Now make it rhyme.");
  EXPECT_EQ(multi_turn_messages(kConversation, {}).size(), 1u);
  EXPECT_THROW(multi_turn_messages({"d", "1", {"only"}}, {"a"}), Error);
}

RequestRecord ok_record(double ttft, double latency, int64_t prompt_tokens, int64_t output_tokens) {
  RequestRecord r;
  r.ok = true;
  r.ttft = ttft;
  r.latency = latency;
  r.prompt_tokens = prompt_tokens;
  r.output_tokens = output_tokens;
  return r;
}

TEST(MultiTurnSummary, PerTurnStatisticsAndFailures) {
  std::vector<ConversationRecord> conversations(3);
  conversations[0].turns = {ok_record(0.2, 1.2, 10, 11), ok_record(0.05, 0.55, 30, 6)};
  conversations[1].turns = {ok_record(0.4, 1.4, 20, 11), ok_record(0.15, 0.65, 50, 6)};
  RequestRecord failed;
  failed.error = "HTTP 500";
  RequestRecord skipped;
  skipped.error = "not sent: an earlier turn failed";
  conversations[2].turns = {failed, skipped};
  const auto turns = summarize_turns(conversations);
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_EQ(turns[0].turn, 1);
  EXPECT_EQ(turns[0].num_requests, 3);
  EXPECT_EQ(turns[0].num_failed, 1);
  EXPECT_EQ(turns[0].first_error, "HTTP 500");
  EXPECT_DOUBLE_EQ(turns[0].ttft_p50_ms, 300);
  EXPECT_DOUBLE_EQ(turns[0].ttft_p90_ms, 380);  // 200 + 0.9 * (400 - 200)
  EXPECT_DOUBLE_EQ(turns[0].tpot_p50_ms, 100);  // 1.0 s / 10 for both
  EXPECT_DOUBLE_EQ(turns[0].e2e_p50_ms, 1300);
  EXPECT_DOUBLE_EQ(turns[0].mean_prompt_tokens, 15);
  EXPECT_EQ(turns[0].output_tokens, 22);
  EXPECT_EQ(turns[1].turn, 2);
  EXPECT_EQ(turns[1].num_failed, 1);
  EXPECT_EQ(turns[1].first_error, "not sent: an earlier turn failed");
  EXPECT_NEAR(turns[1].ttft_p50_ms, 100, 1e-9);
  EXPECT_DOUBLE_EQ(turns[1].mean_prompt_tokens, 40);

  // Conversations with fewer turns count only where they have them.
  conversations.push_back({"x", {}, {ok_record(0.1, 0.2, 5, 2)}});
  EXPECT_EQ(summarize_turns(conversations)[0].num_requests, 4);
  EXPECT_EQ(summarize_turns(conversations)[1].num_requests, 3);
}

TEST(PrefixCacheCounters, FromDsparkAndVllmPages) {
  const auto before = parse_prefix_cache_counters(
      "# TYPE dspark:prefix_cache_queries counter\n"
      "dspark:prefix_cache_queries 1000\n"
      "dspark:prefix_cache_hits 200\n"
      "dspark:prefix_cache_hits_other 99\n");
  const auto after = parse_prefix_cache_counters("dspark:prefix_cache_queries 3000\ndspark:prefix_cache_hits 1400\n");
  ASSERT_TRUE(before && after);
  EXPECT_DOUBLE_EQ(before->hits, 200);
  EXPECT_DOUBLE_EQ(*prefix_cache_hit_rate(before, after), 1200.0 / 2000.0);
  EXPECT_FALSE(prefix_cache_hit_rate(before, before).has_value());  // no new queries
  EXPECT_FALSE(prefix_cache_hit_rate(std::nullopt, after).has_value());

  const auto vllm = parse_prefix_cache_counters(
      "vllm:prefix_cache_queries_total{model_name=\"m\",engine=\"0\"} 50\n"
      "vllm:prefix_cache_queries_total{model_name=\"m\",engine=\"1\"} 30\n"
      "vllm:prefix_cache_hits_total{model_name=\"m\",engine=\"0\"} 20\n");
  ASSERT_TRUE(vllm.has_value());
  EXPECT_DOUBLE_EQ(vllm->queries, 80);
  EXPECT_DOUBLE_EQ(vllm->hits, 20);
  // Without both counters (a server without prefix caching metrics) there is no rate.
  EXPECT_FALSE(parse_prefix_cache_counters("dspark:spec_decode_num_drafts 3\n").has_value());
  EXPECT_FALSE(parse_prefix_cache_counters("dspark:prefix_cache_queries 3\n").has_value());
}

TEST(MultiTurnReport, TableAndJson) {
  MultiTurnResult r;
  r.concurrency = 2;
  r.num_conversations = 1;
  r.conversations.resize(1);
  r.conversations[0].turns = {ok_record(0.2, 1.2, 10, 11), ok_record(0.05, 0.55, 30, 6)};
  r.turns = summarize_turns(r.conversations);
  std::string table = format_multi_turn_table(r);
  EXPECT_NE(table.find("concurrency 2"), std::string::npos) << table;
  EXPECT_NE(table.find("prefix-cache hit rate: n/a"), std::string::npos) << table;
  EXPECT_EQ(to_json(r)["prefix_cache_hit_rate"], nullptr);
  EXPECT_EQ(to_json(r)["turns"].size(), 2u);
  EXPECT_DOUBLE_EQ(to_json(r)["turns"][1]["ttft_p50_ms"].get<double>(), 50);
  r.conversations[0].id = "81";
  r.conversations[0].turns[0].text = " An answer.";
  const nlohmann::json conversation = to_json(r)["conversations"][0];
  EXPECT_EQ(conversation["id"], "81");
  EXPECT_EQ(conversation["turns"][0]["text"], " An answer.");
  EXPECT_EQ(conversation["turns"][1]["output_tokens"], 6);
  EXPECT_DOUBLE_EQ(conversation["turns"][1]["ttft_ms"].get<double>(), 50);

  r.prefix_cache_delta = PrefixCacheCounters{2000, 1200};
  r.prefix_cache_hit_rate = 0.6;
  table = format_multi_turn_table(r);
  EXPECT_NE(table.find("prefix-cache hit rate: 60.0% (1200 of 2000 prompt tokens)"), std::string::npos) << table;
  EXPECT_DOUBLE_EQ(to_json(r)["prefix_cache_hit_rate"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(to_json(r)["prefix_cache_queries"].get<double>(), 2000);
}

}  // namespace
}  // namespace dspark
