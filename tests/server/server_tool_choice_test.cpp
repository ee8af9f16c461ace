// tool_choice forcing a call, through the server with a real (tiny) model: whatever the
// model would write, the reply is a call whose arguments follow the tool's schema; streamed,
// the same call arrives as OpenAI's tool-call deltas; greedy replies are the same with and
// without speculation (the constraint composes with it, structured/grammar_constraint.h).
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "server/test_server.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using nlohmann::json;
using testing::TestServer;
using testing::TestServerOptions;
using testing::http_post;

// Bounded values only (enums), so that a greedy reply ends well before the context does.
const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather",
   "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}, "days": {"enum": [1, 2, 3]}},
                  "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "now"}}])");

TestServerOptions options(const std::string& speculator) {
  const auto dir = testing::make_temp_dir("tool-choice-template");
  std::ofstream(dir / "plain.jinja") << "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                                        "{% if tools %}tools: {{ tools | length }}\n{% endif %}assistant:";
  std::ofstream(dir / "tokenizer_config.json") << json{{"bos_token", nullptr}, {"eos_token", "<|im_end|>"}}.dump();
  TestServerOptions o;
  o.max_running = 8;
  o.chat_template = dir / "plain.jinja";
  o.chat_template_model_dir = dir;
  o.speculator = speculator;
  return o;
}

// The arguments a call to `name` may have under kTools.
void expect_valid_call(const std::string& name, const std::string& arguments_text) {
  const json arguments = json::parse(arguments_text, nullptr, false);
  ASSERT_TRUE(arguments.is_object()) << arguments_text;
  if (name == "now") {
    EXPECT_EQ(arguments, json::object());
    return;
  }
  ASSERT_EQ(name, "get_weather");
  EXPECT_TRUE(arguments["city"] == "Paris" || arguments["city"] == "Rome") << arguments;
  EXPECT_TRUE(arguments["days"].is_number_integer() && arguments["days"] >= 1 && arguments["days"] <= 3) << arguments;
  EXPECT_EQ(arguments.size(), 2u) << arguments;
}

// The calls of a streamed reply, as a client assembles them: [(name, arguments)].
std::vector<std::pair<std::string, std::string>> streamed_calls(const testing::StreamReply& reply) {
  std::vector<std::pair<std::string, std::string>> calls;
  for (const json& chunk : reply.chunks) {
    const json& delta = chunk["choices"][0]["delta"];
    if (!delta.contains("tool_calls")) continue;
    const json& call = delta["tool_calls"][0];
    if (call.contains("id")) calls.emplace_back(call["function"]["name"], "");
    EXPECT_EQ(call["index"], calls.size() - 1) << call;
    calls.back().second += call["function"]["arguments"].get<std::string>();
  }
  return calls;
}

json request(const json& tool_choice) {
  return {{"messages", json::array({{{"role", "user"}, {"content", "What is the weather in Rome?"}}})},
          {"tools", kTools}, {"tool_choice", tool_choice}, {"temperature", 0}};
}

TEST(ServerToolChoice, ANamedFunctionIsCalledWithArgumentsThatFollowItsSchema) {
  TestServer plain(options(""));
  TestServer speculating(options("ngram"));
  json body = request({{"type", "function"}, {"function", {{"name", "get_weather"}}}});
  const auto whole = http_post(plain.port(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json& choice = whole.json["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop");  // OpenAI's, for a forced function
  EXPECT_TRUE(choice["message"]["content"].is_null());
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << whole.body;
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(call["function"]["name"], "get_weather");
  const std::string arguments = call["function"]["arguments"];
  expect_valid_call("get_weather", arguments);
  // Speculation changes nothing in a greedy reply.
  const auto speculated = http_post(speculating.port(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(speculated.status, 200) << speculated.body;
  EXPECT_EQ(speculated.json["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], arguments);

  body["stream"] = true;
  const auto streamed = testing::http_stream(plain.port(), "/v1/chat/completions", body.dump());
  ASSERT_TRUE(streamed.done);
  EXPECT_EQ(streamed.finish_reason, "stop");
  EXPECT_EQ(streamed.text, "");
  EXPECT_TRUE(streamed.chunks.front()["choices"][0]["delta"].contains("tool_calls"));
  EXPECT_EQ(streamed.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  const auto calls = streamed_calls(streamed);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, "get_weather");
  EXPECT_EQ(calls[0].second, arguments);
}

// This greedy model would add calls to the list until the context ends; with
// parallel_tool_calls false the list holds one.
TEST(ServerToolChoice, RequiredCallsAToolWithItsOwnArguments) {
  TestServer server(options(""));
  json body = request("required");
  body["parallel_tool_calls"] = false;
  const auto whole = http_post(server.port(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json& choice = whole.json["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  const json& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << whole.body;
  std::vector<std::pair<std::string, std::string>> whole_calls;
  for (const json& call : calls) {
    whole_calls.emplace_back(call["function"]["name"], call["function"]["arguments"]);
    expect_valid_call(whole_calls.back().first, whole_calls.back().second);
  }
  body["stream"] = true;
  const auto streamed = testing::http_stream(server.port(), "/v1/chat/completions", body.dump());
  ASSERT_TRUE(streamed.done);
  EXPECT_EQ(streamed.finish_reason, "tool_calls");
  EXPECT_EQ(streamed.text, "");
  const auto stream_calls = streamed_calls(streamed);
  ASSERT_EQ(stream_calls.size(), whole_calls.size());
  for (size_t i = 0; i < stream_calls.size(); ++i) {
    EXPECT_EQ(stream_calls[i].first, whole_calls[i].first);
    EXPECT_EQ(json::parse(stream_calls[i].second), json::parse(whole_calls[i].second));
  }
  // Sampled, several choices: every one a valid call, of either tool.
  body.erase("stream");
  body["temperature"] = 1;
  body["n"] = 8;
  body["seed"] = 7;
  const auto sampled = http_post(server.port(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(sampled.status, 200) << sampled.body;
  std::set<std::string> names;
  for (const json& c : sampled.json["choices"]) {
    ASSERT_EQ(c["finish_reason"], "tool_calls") << c;
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c;
    const json& call = c["message"]["tool_calls"][0];
    expect_valid_call(call["function"]["name"], call["function"]["arguments"]);
    names.insert(call["function"]["name"]);
  }
  EXPECT_EQ(names.size(), 2u);
}

TEST(ServerToolChoice, BadChoicesAre400) {
  TestServer server(options(""));
  for (const json& choice : {json("required_please"), json{{"type", "function"}, {"function", {{"name", "fly"}}}}}) {
    const auto reply = http_post(server.port(), "/v1/chat/completions", request(choice).dump());
    EXPECT_EQ(reply.status, 400) << reply.body;
    EXPECT_EQ(reply.json["error"]["param"], "tool_choice") << reply.body;
  }
  json with_format = request("required");
  with_format["response_format"] = {{"type", "json_object"}};
  const auto reply = http_post(server.port(), "/v1/chat/completions", with_format.dump());
  EXPECT_EQ(reply.status, 400) << reply.body;
  EXPECT_EQ(reply.json["error"]["param"], "response_format");
}

}  // namespace
}  // namespace dspark
