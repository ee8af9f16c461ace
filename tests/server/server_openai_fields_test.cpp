// OpenAI request fields that reach into sampling and speculation, over HTTP with
// stories260K: logprobs (completions and chat, whole and streamed), presence and frequency
// penalties, logit_bias, stop_token_ids / min_tokens / include_stop_str_in_output, and dspark's per-request num_speculative_tokens with the request's own
// acceptance in usage.spec_decode. The offline generate_one run is the reference.
#include <algorithm>
#include <atomic>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "server/test_server.h"
#include "structured/json_matcher.h"
#include "structured/json_schema.h"
#include "structured/schema_samples.h"

namespace dspark {
namespace {

using nlohmann::json;
using testing::OfflineReference;
using testing::TestServer;
using testing::TestServerOptions;
using testing::greedy_options;
using testing::http_post;
using testing::http_stream;
using testing::server_metric;

const std::string kPrompt = "The cat sat on the mat. The cat";

OfflineReference& offline() {
  static OfflineReference reference;
  return reference;
}

json completion_body(int64_t max_tokens, json extra) {
  json body = {{"model", "stories"}, {"prompt", kPrompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  body.update(extra);
  return body;
}

json chat_body(int64_t max_tokens, json extra) {
  json body = {{"model", "stories"},
               {"messages", json::array({{{"role", "user"}, {"content", "Tell me about a cat."}}})},
               {"max_tokens", max_tokens},
               {"temperature", 0}};
  body.update(extra);
  return body;
}

// The offline run of kPrompt with the penalties and logprobs these tests ask for.
GenerationResult offline_penalised(int64_t max_tokens, int32_t logprobs) {
  GenerationOptions g = greedy_options(max_tokens);
  g.sampling.presence_penalty = 0.5f;
  g.sampling.frequency_penalty = 0.3f;
  g.logprobs = logprobs;
  return offline().run(offline().encode(kPrompt), g);
}

const json kPenalties = {{"presence_penalty", 0.5}, {"frequency_penalty", 0.3}};

// What a token adds to the text after the token before it (-1: the first).
std::string piece(int32_t previous, int32_t token) {
  const Tokenizer& tok = offline().tokenizer();
  if (previous < 0) return tok.decode(std::span<const int32_t>(&token, 1));
  const int32_t pair[2] = {previous, token};
  const std::string head = tok.decode(std::span<const int32_t>(pair, 1));
  const std::string both = tok.decode(std::span<const int32_t>(pair, 2));
  EXPECT_EQ(both.substr(0, head.size()), head);
  return both.substr(head.size());
}

void expect_completion_logprobs(const json& logprobs, const GenerationResult& expected, size_t top_n) {
  ASSERT_TRUE(logprobs.is_object()) << logprobs.dump();
  ASSERT_EQ(logprobs["tokens"].size(), expected.tokens.size());
  ASSERT_EQ(logprobs["token_logprobs"].size(), expected.tokens.size());
  ASSERT_EQ(logprobs["top_logprobs"].size(), expected.tokens.size());
  ASSERT_EQ(logprobs["text_offset"].size(), expected.tokens.size());
  int64_t offset = 0;
  for (size_t i = 0; i < expected.tokens.size(); ++i) {
    const std::string text = piece(i == 0 ? -1 : expected.tokens[i - 1], expected.tokens[i]);
    EXPECT_EQ(logprobs["tokens"][i], text) << i;
    EXPECT_EQ(logprobs["token_logprobs"][i].get<double>(), static_cast<double>(expected.logprobs[i].logprob)) << i;
    // The top n, plus the chosen token (already among them when greedy).
    EXPECT_EQ(logprobs["top_logprobs"][i].size(), top_n) << i;
    EXPECT_EQ(logprobs["text_offset"][i], offset);
    offset += static_cast<int64_t>(text.size());
  }
  EXPECT_EQ(offset, static_cast<int64_t>(expected.text.size())) << "the pieces add up to the completion";
}

TEST(ServerOpenAiFields, CompletionLogprobsAndPenaltiesMatchOffline) {
  TestServer server;
  const GenerationResult expected = offline_penalised(24, 3);
  json extra = kPenalties;
  extra["logprobs"] = 3;
  const auto whole = http_post(server.port(), "/v1/completions", completion_body(24, extra).dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json["choices"][0]["text"], expected.text);
  expect_completion_logprobs(whole.json["choices"][0]["logprobs"], expected, 3);
  // Without the penalties the text differs: they are applied, not just accepted.
  const auto plain = http_post(server.port(), "/v1/completions", completion_body(24, {{"logprobs", 3}}).dump());
  EXPECT_NE(plain.json["choices"][0]["text"], expected.text);
  // Not asked: null, as before.
  EXPECT_TRUE(http_post(server.port(), "/v1/completions", completion_body(4, json::object()).dump())
                  .json["choices"][0]["logprobs"]
                  .is_null());
}

// logit_bias over HTTP: the offline run with the same bias is the reference (logprobs
// included, which read the biased distribution), a banned token never appears, and the
// text differs from the unbiased one. The ids are the first two tokens of the unbiased run.
TEST(ServerOpenAiFields, LogitBiasMatchesOfflineAndBansTokens) {
  TestServer server;
  const GenerationResult unbiased = offline().run(offline().encode(kPrompt), greedy_options(16));
  ASSERT_GE(unbiased.tokens.size(), 2u);
  const int32_t banned = unbiased.tokens[0], favoured = unbiased.tokens[1] == banned ? 0 : unbiased.tokens[1];
  GenerationOptions g = greedy_options(16);
  g.sampling.logit_bias = {{std::min(banned, favoured), banned < favoured ? -100.0f : 0.5f},
                           {std::max(banned, favoured), banned < favoured ? 0.5f : -100.0f}};
  g.logprobs = 2;
  const GenerationResult expected = offline().run(offline().encode(kPrompt), g);
  EXPECT_EQ(std::count(expected.tokens.begin(), expected.tokens.end(), banned), 0);
  const json bias = {{std::to_string(banned), -100}, {std::to_string(favoured), 0.5}};
  const auto reply =
      http_post(server.port(), "/v1/completions", completion_body(16, {{"logit_bias", bias}, {"logprobs", 2}}).dump());
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.json["choices"][0]["text"], expected.text);
  EXPECT_NE(reply.json["choices"][0]["text"], unbiased.text);
  expect_completion_logprobs(reply.json["choices"][0]["logprobs"], expected, 2);
  // Chat takes the same field.
  const auto chat = http_post(server.port(), "/v1/chat/completions", chat_body(8, {{"logit_bias", bias}}).dump());
  EXPECT_EQ(chat.status, 200) << chat.body;
  const auto outside = http_post(server.port(), "/v1/completions",
                                 completion_body(4, {{"logit_bias", {{"100000000", 1}}}}).dump());
  EXPECT_EQ(outside.status, 400) << outside.body;
  EXPECT_NE(outside.body.find("logit_bias token id 100000000 is outside the vocabulary"), std::string::npos)
      << outside.body;
}

// vLLM's stop controls: stop_token_ids end the output before the token, min_tokens keeps
// them (and EOS) out of the first tokens, include_stop_str_in_output keeps the stop string;
// the same text as offline, with and without speculation.
TEST(ServerOpenAiFields, StopTokenIdsMinTokensAndKeptStopStringsMatchOffline) {
  TestServer plain;
  TestServer speculating(TestServerOptions{.speculator = "ngram"});
  const GenerationResult unstopped = offline().run(offline().encode(kPrompt), greedy_options(24));
  ASSERT_GE(unstopped.tokens.size(), 8u);
  const int32_t stop = unstopped.tokens[4];
  const std::string stop_string = unstopped.text.substr(unstopped.text.size() / 2, 3);
  struct Case {
    json fields;
    GenerationOptions options;
  };
  GenerationOptions stopped = greedy_options(24), at_least = greedy_options(24), kept = greedy_options(24);
  stopped.stop_token_ids = at_least.stop_token_ids = {stop};
  at_least.min_tokens = 12;
  kept.stop = {stop_string};
  kept.include_stop_str_in_output = true;
  const Case cases[] = {
      {{{"stop_token_ids", {stop}}}, stopped},
      {{{"stop_token_ids", {stop}}, {"min_tokens", 12}}, at_least},
      {{{"stop", stop_string}, {"include_stop_str_in_output", true}}, kept},
  };
  for (const Case& c : cases) {
    const GenerationResult expected = offline().run(offline().encode(kPrompt), c.options);
    for (const TestServer* server : {&plain, &speculating}) {
      const auto reply = http_post(server->port(), "/v1/completions", completion_body(24, c.fields).dump());
      ASSERT_EQ(reply.status, 200) << reply.body;
      EXPECT_EQ(reply.json["choices"][0]["text"], expected.text) << c.fields;
      EXPECT_EQ(reply.json["choices"][0]["finish_reason"], finish_reason_name(expected.finish_reason)) << c.fields;
    }
  }
  const GenerationResult first = offline().run(offline().encode(kPrompt), stopped);
  EXPECT_LT(first.tokens.size(), 5u);
  EXPECT_EQ(first.finish_reason, FinishReason::kStop);
  const GenerationResult longer = offline().run(offline().encode(kPrompt), at_least);
  EXPECT_GE(longer.tokens.size(), 12u);
  EXPECT_EQ(std::count(longer.tokens.begin(), longer.tokens.end(), stop), 0);
  const GenerationResult with_stop = offline().run(offline().encode(kPrompt), kept);
  EXPECT_TRUE(with_stop.text.ends_with(stop_string)) << with_stop.text;
  // Chat takes the same fields; bad values are 400.
  const auto chat = http_post(plain.port(), "/v1/chat/completions",
                              chat_body(8, {{"min_tokens", 8}, {"stop_token_ids", {stop}}}).dump());
  EXPECT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.json["usage"]["completion_tokens"], 8);
  for (const json& bad : {json{{"stop_token_ids", {100000}}}, json{{"min_tokens", 25}}}) {
    const auto reply = http_post(plain.port(), "/v1/completions", completion_body(24, bad).dump());
    EXPECT_EQ(reply.status, 400) << reply.body;
  }
}

// echo: the prompt before the completion, as decoding prompt and completion together
// gives it; with logprobs, the prompt's tokens first (the first without a log-prob), with
// the model's own log-probs (the offline prompt_logprobs), then the completion's as without
// echo. Streamed: the prompt in the first chunk, then the same text and log-probs. vLLM's
// prompt_logprobs field carries the same numbers.
TEST(ServerOpenAiFields, EchoAndPromptLogprobsGiveThePromptsOwnLogprobs) {
  TestServer server(TestServerOptions{.speculator = "ngram"});
  const std::vector<int32_t> prompt = offline().encode(kPrompt);
  GenerationOptions g = greedy_options(12);
  g.logprobs = 2;
  g.prompt_logprobs = 2;
  const GenerationResult expected = offline().run(prompt, g);
  ASSERT_EQ(expected.prompt_logprobs.size(), prompt.size() - 1);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), expected.tokens.begin(), expected.tokens.end());
  const std::string echoed = offline().tokenizer().decode(all, /*skip_special_tokens=*/true);
  ASSERT_TRUE(echoed.starts_with(kPrompt) && echoed.ends_with(expected.text)) << echoed;

  const auto plain = http_post(server.port(), "/v1/completions", completion_body(12, {{"logprobs", 2}}).dump());
  const auto whole =
      http_post(server.port(), "/v1/completions", completion_body(12, {{"logprobs", 2}, {"echo", true}}).dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json& choice = whole.json["choices"][0];
  EXPECT_EQ(choice["text"], echoed);
  const json& lp = choice["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), all.size()) << lp;
  std::string joined;
  for (const json& t : lp["tokens"]) joined += t.get<std::string>();
  EXPECT_EQ(joined, echoed);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < prompt.size(); ++i) {
    EXPECT_EQ(lp["token_logprobs"][i].get<double>(), static_cast<double>(expected.prompt_logprobs[i - 1].logprob)) << i;
    EXPECT_EQ(lp["top_logprobs"][i].size(), expected.prompt_logprobs[i - 1].top.size() +
                                                (std::any_of(expected.prompt_logprobs[i - 1].top.begin(),
                                                             expected.prompt_logprobs[i - 1].top.end(),
                                                             [&](const auto& t) { return t.first == prompt[i]; })
                                                     ? 0
                                                     : 1))
        << i;
  }
  const json& completion = plain.json["choices"][0]["logprobs"];
  for (size_t k = 0; k < expected.tokens.size(); ++k) {
    EXPECT_EQ(lp["token_logprobs"][prompt.size() + k], completion["token_logprobs"][k]) << k;
  }
  for (size_t i = 1; i < all.size(); ++i) EXPECT_GE(lp["text_offset"][i], lp["text_offset"][i - 1]);

  const auto streamed = http_stream(server.port(), "/v1/completions",
                                    completion_body(12, {{"logprobs", 2}, {"echo", true}, {"stream", true}}).dump());
  ASSERT_TRUE(streamed.done);
  EXPECT_EQ(streamed.chunks.front()["choices"][0]["text"], kPrompt);
  EXPECT_EQ(streamed.text, echoed);
  json stream_logprobs = json::array();
  for (const json& chunk : streamed.chunks) {
    const json& l = chunk["choices"][0]["logprobs"];
    if (!l.is_null()) stream_logprobs.insert(stream_logprobs.end(), l["token_logprobs"].begin(), l["token_logprobs"].end());
  }
  EXPECT_EQ(stream_logprobs, lp["token_logprobs"]);
  // vLLM's prompt_logprobs: the same log-probs, keyed by token id, with ranks; completions
  // per choice, chat once for the response.
  const auto scored =
      http_post(server.port(), "/v1/completions", completion_body(4, {{"prompt_logprobs", 2}}).dump());
  ASSERT_EQ(scored.status, 200) << scored.body;
  const json& pl = scored.json["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(pl.size(), prompt.size()) << pl;
  EXPECT_TRUE(pl[0].is_null());
  for (size_t i = 1; i < prompt.size(); ++i) {
    const TokenLogprob& t = expected.prompt_logprobs[i - 1];
    const json& entry = pl[i][std::to_string(prompt[i])];
    EXPECT_EQ(entry["logprob"].get<double>(), static_cast<double>(t.logprob)) << i;
    EXPECT_EQ(entry["rank"], t.rank) << i;
    EXPECT_EQ(entry["rank"] == 1, t.top[0].first == prompt[i]) << i;
    EXPECT_EQ(pl[i][std::to_string(t.top[0].first)]["rank"], 1) << i;
  }
  const auto chat_scored = http_post(server.port(), "/v1/chat/completions", chat_body(4, {{"prompt_logprobs", 0}}).dump());
  ASSERT_EQ(chat_scored.status, 200) << chat_scored.body;
  const json& chat_pl = chat_scored.json["prompt_logprobs"];
  ASSERT_EQ(chat_pl.size(), chat_scored.json["usage"]["prompt_tokens"].get<size_t>());
  for (size_t i = 1; i < chat_pl.size(); ++i) EXPECT_EQ(chat_pl[i].size(), 1u) << chat_pl[i];
  EXPECT_FALSE(chat_scored.json["choices"][0].contains("prompt_logprobs"));
  // Without logprobs: the text alone; chat refuses echo.
  const auto bare = http_post(server.port(), "/v1/completions", completion_body(12, {{"echo", true}}).dump());
  EXPECT_EQ(bare.json["choices"][0]["text"], echoed);
  EXPECT_TRUE(bare.json["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(http_post(server.port(), "/v1/chat/completions", chat_body(4, {{"echo", true}}).dump()).status, 400);
}

TEST(ServerOpenAiFields, ChatLogprobsStreamedEqualWhole) {
  TestServer server;
  const json extra = {{"logprobs", true}, {"top_logprobs", 2}, {"presence_penalty", 0.4}};
  const auto whole = http_post(server.port(), "/v1/chat/completions", chat_body(20, extra).dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json& content = whole.json["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), whole.json["usage"]["completion_tokens"].get<size_t>());
  std::string joined;
  for (const json& entry : content) {
    ASSERT_EQ(entry["top_logprobs"].size(), 2u);
    EXPECT_EQ(entry["top_logprobs"][0]["token"], entry["token"]) << "greedy: the chosen token is the most likely";
    EXPECT_LE(entry["logprob"].get<double>(), 0.0);
    std::string bytes;
    for (const json& b : entry["bytes"]) bytes.push_back(static_cast<char>(b.get<int>()));
    joined += bytes;
  }
  EXPECT_EQ(joined, whole.json["choices"][0]["message"]["content"]);

  json stream_body = chat_body(20, extra);
  stream_body["stream"] = true;
  stream_body["stream_options"] = {{"include_usage", true}};
  const auto streamed = http_stream(server.port(), "/v1/chat/completions", stream_body.dump());
  ASSERT_TRUE(streamed.done);
  json streamed_content = json::array();
  for (const json& chunk : streamed.chunks) {
    if (chunk["choices"].empty()) continue;
    const json& lp = chunk["choices"][0]["logprobs"];
    if (lp.is_null()) continue;
    for (const json& entry : lp["content"]) streamed_content.push_back(entry);
  }
  EXPECT_EQ(streamed_content, content);
  EXPECT_EQ(streamed.text, whole.json["choices"][0]["message"]["content"]);
}

TEST(ServerOpenAiFields, SpeculationPerRequestAndItsUsage) {
  TestServerOptions o;
  o.speculator = "ngram";
  TestServer server(o);
  const GenerationResult expected = offline_penalised(32, 2);
  json extra = kPenalties;
  extra["logprobs"] = 2;
  const auto spec = http_post(server.port(), "/v1/completions", completion_body(32, extra).dump());
  ASSERT_EQ(spec.status, 200) << spec.body;
  // Lossless with penalties, and the same logprobs as plain decoding.
  EXPECT_EQ(spec.json["choices"][0]["text"], expected.text);
  expect_completion_logprobs(spec.json["choices"][0]["logprobs"], expected, 2);
  const json& usage = spec.json["usage"];
  ASSERT_TRUE(usage.contains("spec_decode")) << usage.dump();
  EXPECT_GT(usage["spec_decode"]["num_drafts"].get<int64_t>(), 0);
  EXPECT_GE(usage["spec_decode"]["mean_acceptance_length"].get<double>(), 1.0);

  extra["num_speculative_tokens"] = 0;
  const auto off = http_post(server.port(), "/v1/completions", completion_body(32, extra).dump());
  EXPECT_EQ(off.json["choices"][0]["text"], expected.text);
  EXPECT_EQ(off.json["usage"]["spec_decode"]["num_drafts"], 0);
  EXPECT_EQ(off.json["usage"]["spec_decode"]["mean_acceptance_length"], 1.0);

  extra["num_speculative_tokens"] = 1;
  const auto one = http_post(server.port(), "/v1/completions", completion_body(32, extra).dump());
  EXPECT_EQ(one.json["choices"][0]["text"], expected.text);
  const json& capped = one.json["usage"]["spec_decode"];
  EXPECT_EQ(capped["num_draft_tokens"], capped["num_drafts"]) << "one draft per round at most";
}

TEST(ServerOpenAiFields, SeveralChoicesWholeAndStreamed) {
  // Seeded sampling draws the same tokens as the offline run of each choice's seed.
  TestServerOptions o;
  o.max_running = 4;
  TestServer server(o);
  json extra = {{"n", 3}, {"temperature", 0.9}, {"seed", 42}, {"logprobs", 1}};
  const auto whole = http_post(server.port(), "/v1/completions", completion_body(12, extra).dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json& choices = whole.json["choices"];
  ASSERT_EQ(choices.size(), 3u);
  // Choice i samples with seed + i: each equals the offline run with that seed.
  int64_t completion_tokens = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(choices[i]["index"], i);
    GenerationOptions g = greedy_options(12);
    g.sampling.temperature = 0.9f;
    g.sampling.seed = 42 + i;
    g.sampling.position_keyed = true;
    const GenerationResult expected = offline().run(offline().encode(kPrompt), g);
    EXPECT_EQ(choices[i]["text"], expected.text) << "choice " << i;
    EXPECT_EQ(choices[i]["logprobs"]["tokens"].size(), expected.tokens.size());
    completion_tokens += static_cast<int64_t>(expected.tokens.size());
  }
  EXPECT_NE(choices[0]["text"], choices[1]["text"]);
  EXPECT_EQ(whole.json["usage"]["completion_tokens"], completion_tokens);
  EXPECT_EQ(whole.json["usage"]["prompt_tokens"], offline().encode(kPrompt).size());  // counted once

  json stream_body = completion_body(12, extra);
  stream_body["stream"] = true;
  stream_body["stream_options"] = {{"include_usage", true}};
  const auto streamed = http_stream(server.port(), "/v1/completions", stream_body.dump());
  ASSERT_TRUE(streamed.done);
  std::vector<std::string> texts(3);
  std::vector<int> finishes(3, 0);
  for (const json& chunk : streamed.chunks) {
    for (const json& c : chunk["choices"]) {
      const int i = c["index"].get<int>();
      texts[i] += c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) ++finishes[i];
    }
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(texts[i], choices[i]["text"]) << "choice " << i;
    EXPECT_EQ(finishes[i], 1) << "choice " << i;
  }
  ASSERT_TRUE(streamed.usage);
  EXPECT_EQ((*streamed.usage)["completion_tokens"], completion_tokens);
  // Every request finished and freed its blocks.
  EXPECT_TRUE(testing::wait_until_idle(server.port(), std::chrono::milliseconds(5000)));
}

// A request with an explicit seed is sampled position-keyed (spec/rejection_sampler.h):
// against a server with n-gram speculation under the adaptive schedule, identical seeded
// requests at T = 0.7 give the same text every time, alone and while other requests load
// the server (which changes how many drafts each round verifies), and that text is the
// offline plain run's.
TEST(ServerOpenAiFields, SeededSamplingReproducesUnderSpeculationAndLoad) {
  TestServerOptions o;
  o.speculator = "ngram";
  o.max_running = 8;
  std::vector<double> sps(256);  // each extra token costs 2% of a step
  for (size_t b = 0; b < sps.size(); ++b) sps[b] = 500.0 / (1.0 + 0.02 * static_cast<double>(b));
  o.step_cost = std::make_shared<StepCostTable>(std::move(sps));
  TestServer server(o);
  GenerationOptions g = greedy_options(40);
  g.sampling.temperature = 0.7f;
  g.sampling.seed = 77;
  g.sampling.position_keyed = true;
  const GenerationResult expected = offline().run(offline().encode(kPrompt), g);
  ASSERT_GT(expected.tokens.size(), 8u);
  const json seeded = completion_body(40, {{"temperature", 0.7}, {"seed", 77}});

  int64_t drafts = 0;
  for (int i = 0; i < 3; ++i) {
    const auto reply = http_post(server.port(), "/v1/completions", seeded.dump());
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(reply.json["choices"][0]["text"], expected.text) << "alone, try " << i;
    drafts += reply.json["usage"]["spec_decode"]["num_drafts"].get<int64_t>();
  }
  EXPECT_GT(drafts, 0) << "the n-gram speculator never drafted";

  // Load: unseeded sampled and greedy requests of other prompts, streamed and whole, while
  // seeded ones (whole and streamed) run among them.
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      const json body = {{"model", "stories"},
                         {"prompt", t % 2 ? "Once upon a time" : "The dog ran to the park and the dog"},
                         {"max_tokens", 48},
                         {"temperature", t < 2 ? 0.0 : 1.0}};
      while (!stop) http_post(server.port(), "/v1/completions", body.dump());
    });
  }
  std::vector<std::string> texts(6);
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      if (c % 2 == 0) {
        texts[c] = http_post(server.port(), "/v1/completions", seeded.dump()).json["choices"][0]["text"];
      } else {
        json body = seeded;
        body["stream"] = true;
        texts[c] = http_stream(server.port(), "/v1/completions", body.dump()).text;
      }
    });
  }
  for (auto& c : clients) c.join();
  stop = true;
  for (auto& t : load) t.join();
  for (int c = 0; c < 6; ++c) EXPECT_EQ(texts[c], expected.text) << "under load, client " << c;
  EXPECT_TRUE(testing::wait_until_idle(server.port(), std::chrono::milliseconds(10000)));
}

TEST(ServerOpenAiFields, NoSpecDecodeUsageWithoutASpeculator) {
  TestServer server;
  const auto reply = http_post(server.port(), "/v1/completions", completion_body(4, json::object()).dump());
  EXPECT_FALSE(reply.json["usage"].contains("spec_decode"));
}

}  // namespace
}  // namespace dspark

namespace dspark {
namespace {

TEST(ServerOpenAiFields, RepeatedPromptsReportCachedTokensAndTheHitRate) {
  TestServer server;
  // A prompt of several KV blocks (16 positions each), sent three times: the first computes
  // it, the others find all its whole blocks but the one holding its last token.
  std::string long_prompt;
  for (int i = 0; i < 6; ++i) long_prompt += "Once upon a time there was a little girl who loved her red ball. ";
  const json body = {{"model", "stories"}, {"prompt", long_prompt}, {"max_tokens", 8}, {"temperature", 0}};
  const auto first = http_post(server.port(), "/v1/completions", body.dump());
  ASSERT_EQ(first.status, 200) << first.body;
  const int64_t prompt_tokens = first.json["usage"]["prompt_tokens"];
  ASSERT_GT(prompt_tokens, 48);
  EXPECT_EQ(first.json["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  const auto second = http_post(server.port(), "/v1/completions", body.dump());
  ASSERT_EQ(second.status, 200) << second.body;
  const int64_t expected_cached = (prompt_tokens - 1) / 16 * 16;
  EXPECT_EQ(second.json["usage"]["prompt_tokens_details"]["cached_tokens"], expected_cached);
  EXPECT_EQ(second.json["choices"][0]["text"], first.json["choices"][0]["text"]);

  json stream_body = body;
  stream_body["stream"] = true;
  stream_body["stream_options"] = {{"include_usage", true}};
  const auto streamed = http_stream(server.port(), "/v1/completions", stream_body.dump());
  ASSERT_TRUE(streamed.done && streamed.usage);
  EXPECT_EQ((*streamed.usage)["prompt_tokens_details"]["cached_tokens"], expected_cached);
  EXPECT_EQ(streamed.text, first.json["choices"][0]["text"]);

  EXPECT_EQ(server_metric(server.port(), "dspark:prefix_cache_queries"), 3.0 * static_cast<double>(prompt_tokens));
  EXPECT_EQ(server_metric(server.port(), "dspark:prefix_cache_hits"), 2.0 * static_cast<double>(expected_cached));
  EXPECT_GT(*server_metric(server.port(), "dspark:kv_cache_blocks_cached"), 0.0);
  EXPECT_EQ(server_metric(server.port(), "dspark:kv_cache_blocks_used"), 0.0);
}

}  // namespace
}  // namespace dspark

namespace dspark {
namespace {

TEST(ServerOpenAiFields, JsonObjectResponsesStayInsideOneJsonObject) {
  TestServer server;
  for (const bool stream : {false, true}) {
    json body = {{"model", "stories"}, {"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0},
                 {"response_format", {{"type", "json_object"}}}};
    std::string text, finish;
    if (stream) {
      body["stream"] = true;
      const auto r = http_stream(server.port(), "/v1/completions", body.dump());
      ASSERT_TRUE(r.done);
      text = r.text;
      finish = r.finish_reason;
    } else {
      const auto r = http_post(server.port(), "/v1/completions", body.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      text = r.json["choices"][0]["text"];
      finish = r.json["choices"][0]["finish_reason"];
    }
    JsonMatcher m{JsonMatcherOptions{}};
    EXPECT_TRUE(m.advance(text)) << text;
    EXPECT_NE(text.find('{'), std::string::npos) << text;
    if (finish == "stop") {
      EXPECT_TRUE(json::parse(text, nullptr, false).is_object()) << text;
    }
  }
  json schema = {{"model", "stories"}, {"prompt", "x"},
                 {"response_format", {{"type", "json_schema"}, {"json_schema", json::object()}}}};
  EXPECT_EQ(http_post(server.port(), "/v1/completions", schema.dump()).status, 400);
}

// json_schema: whole and streamed, completions and chat, every response finishes ("stop")
// with a value that parses and validates; the completion equals the offline constrained
// run; schemas outside the subset are 400s naming the construct, param response_format.
TEST(ServerOpenAiFields, JsonSchemaResponsesValidateWholeAndStreamed) {
  const std::string schema_text = R"({"type": "object", "properties": {
      "answer": {"enum": ["yes", "no"]}, "count": {"enum": [1, 2, 3]},
      "note": {"type": ["string", "null"], "maxLength": 4}},
      "required": ["answer", "count", "note"], "additionalProperties": false})";
  const test::SchemaOracle oracle(nlohmann::ordered_json::parse(schema_text));
  TestServer server;
  GenerationOptions g = greedy_options(500);
  g.response_format = ResponseFormat::kJsonSchema;
  g.json_schema = compile_json_schema_text(schema_text);
  const std::string offline_text = offline().run(offline().encode("Once upon a time"), g).text;
  for (const bool chat : {false, true}) {
    std::string whole;
    for (const bool stream : {false, true}) {
      SCOPED_TRACE(fmt::format("chat {} stream {}", chat, stream));
      // Sent as text: the schema's key order must reach the server (json sorts keys).
      json body = chat ? chat_body(500, json::object()) : completion_body(500, json::object());
      if (!chat) body["prompt"] = "Once upon a time";
      std::string text_body = body.dump();
      text_body.pop_back();
      text_body += R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "reply", "strict": true, "schema": )" +
                   schema_text + "}}";
      if (stream) text_body += R"(, "stream": true)";
      text_body += "}";
      const char* path = chat ? "/v1/chat/completions" : "/v1/completions";
      std::string text, finish;
      if (stream) {
        const auto r = http_stream(server.port(), path, text_body);
        ASSERT_TRUE(r.done);
        text = r.text;
        finish = r.finish_reason;
      } else {
        const auto r = http_post(server.port(), path, text_body);
        ASSERT_EQ(r.status, 200) << r.body;
        const json& choice = r.json["choices"][0];
        text = chat ? choice["message"]["content"].get<std::string>() : choice["text"].get<std::string>();
        finish = choice["finish_reason"];
        whole = text;
      }
      EXPECT_EQ(finish, "stop") << text;
      const json value = json::parse(text, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << json(text).dump();
      EXPECT_TRUE(oracle.valid(value)) << text;
      // Declared order: "answer" first.
      EXPECT_LT(text.find("\"answer\""), text.find("\"count\"")) << text;
      if (stream) {
        EXPECT_EQ(text, whole);
      } else if (!chat) {
        EXPECT_EQ(text, offline_text);
      }
    }
  }

  struct Bad {
    json response_format;
    const char* words;
  };
  const std::vector<Bad> bad = {
      {{{"type", "json_schema"}}, "'response_format.json_schema' is required"},
      {{{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "object"}}}}}}, "name' is required"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", "a b"}, {"schema", {{"type", "object"}}}}}}, "name' must be"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", 3}, {"schema", {{"type", "object"}}}}}}, "name' must be a string"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", "n"}}}}, "schema' is required"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", "x"}}}}, "must be an object"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"strict", "yes"}, {"schema", {{"type", "object"}}}}}},
       "strict' must be a boolean"},
      {{{"type", "json_schema"},
        {"json_schema", {{"name", "n"}, {"schema", {{"type", "object"}, {"properties", {{"id", {{"type", "string"}, {"pattern", "^a"}}}}}}}}}},
       "'pattern' is not supported at /properties/id/pattern"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {{"$ref", "#/$defs/x"}}}}}}, "does not resolve"},
      {{{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", {{"type", "integer"}}}}}}, "top-level number"},
  };
  for (const Bad& b : bad) {
    for (const bool chat : {false, true}) {
      json body = chat ? chat_body(5, json::object()) : completion_body(5, json::object());
      body["response_format"] = b.response_format;
      const auto r = http_post(server.port(), chat ? "/v1/chat/completions" : "/v1/completions", body.dump());
      EXPECT_EQ(r.status, 400) << r.body;
      EXPECT_EQ(r.json["error"]["param"], "response_format") << r.body;
      EXPECT_NE(r.json["error"]["message"].get<std::string>().find(b.words), std::string::npos) << r.body;
    }
  }
}

}  // namespace
}  // namespace dspark
