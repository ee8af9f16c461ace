// Real models' chat templates through the server: for each of the 70 reference cases
// (../shared/data/chat_templates), POST /tokenize with the case's conversation gives the
// token ids of the reference rendering, and a case the template rejects gets 400 with the
// template's own message. The tokenizer is stories260K's: what is compared is the text the
// template produced, through the same tokenization on both sides. Also /detokenize, and a
// chat completion on a template that must agree with /tokenize.
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "server/test_server.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using testing::TestServer;
using testing::TestServerOptions;
using testing::http_post;

const std::filesystem::path kTemplates = std::filesystem::path(DSPARK_SHARED_DIR) / "data/chat_templates";

std::vector<ordered_json> cases() {
  std::ifstream in(kTemplates / "cases.jsonl");
  std::vector<ordered_json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(ordered_json::parse(line));
  }
  return out;
}

// A model directory holding only the special tokens a template refers to.
std::filesystem::path special_tokens_dir(const ordered_json& context) {
  const auto dir = testing::make_temp_dir("chat-template-tokens");
  std::ofstream(dir / "tokenizer_config.json")
      << ordered_json{{"bos_token", context["bos_token"]}, {"eos_token", context["eos_token"]}}.dump();
  return dir;
}

// The case's conversation as a /tokenize body.
std::string tokenize_body(const ordered_json& context) {
  ordered_json body = {{"messages", context["messages"]},
                       {"add_generation_prompt", context["add_generation_prompt"]},
                       {"chat_template_kwargs", {{"date_string", context["date_string"]}}}};
  if (context.contains("tools")) body["tools"] = context["tools"];
  return body.dump();
}

TEST(ServerChatTemplate, EveryReferenceCaseTokenizesLikeItsRendering) {
  const auto all = cases();
  ASSERT_EQ(all.size(), 70u);
  // One server per template and special tokens.
  std::map<std::string, std::vector<const ordered_json*>> groups;
  for (const ordered_json& c : all) {
    const ordered_json& ctx = c["context"];
    groups[c["template"].get<std::string>() + "\n" + ctx["bos_token"].dump() + ctx["eos_token"].dump()].push_back(&c);
  }
  int checked = 0;
  for (const auto& [key, group] : groups) {
    const ordered_json& first = *group.front();
    TestServerOptions o;
    o.max_running = 1;
    o.chat_template = kTemplates / first["template"].get<std::string>();
    o.chat_template_model_dir = special_tokens_dir(first["context"]);
    TestServer server(o);
    for (const ordered_json* c : group) {
      const std::string label = (*c)["template"].get<std::string>() + " / " + (*c)["conversation"].get<std::string>();
      const auto reply = http_post(server.port(), "/tokenize", tokenize_body((*c)["context"]));
      if (c->contains("expected_error")) {
        EXPECT_EQ(reply.status, 400) << label;
        EXPECT_EQ(reply.json["error"]["message"], (*c)["expected_error"]) << label;
      } else {
        ASSERT_EQ(reply.status, 200) << label << ": " << reply.body;
        const std::vector<int32_t> expected =
            server.tokenizer().encode((*c)["expected"].get<std::string>(), /*add_special_tokens=*/false);
        EXPECT_EQ(reply.json["tokens"].get<std::vector<int32_t>>(), expected) << label;
        EXPECT_EQ(reply.json["count"], expected.size()) << label;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 70);
}

TEST(ServerChatTemplate, ChatCompletionUsesTheTemplateAndTokenizeRoundTrips) {
  TestServerOptions o;
  o.max_running = 1;
  o.chat_template = kTemplates / "Qwen-Qwen2.5-7B-Instruct.jinja";
  o.chat_template_model_dir = special_tokens_dir({{"bos_token", nullptr}, {"eos_token", "<|im_end|>"}});
  TestServer server(o);
  const json messages = json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  const auto tokenized = http_post(server.port(), "/tokenize", json{{"messages", messages}}.dump());
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  const auto prompt_tokens = tokenized.json["count"].get<int64_t>();
  const auto chat = http_post(server.port(), "/v1/chat/completions",
                              json{{"messages", messages}, {"max_tokens", 4}, {"temperature", 0}}.dump());
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.json["usage"]["prompt_tokens"], prompt_tokens);
  // /detokenize gives back the rendered text.
  const auto text = http_post(server.port(), "/detokenize", json{{"tokens", tokenized.json["tokens"]}}.dump());
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_NE(text.json["prompt"].get<std::string>().find("Once upon a time"), std::string::npos);
  // A plain prompt, with and without the tokenizer's special tokens.
  const auto plain = http_post(server.port(), "/tokenize", json{{"prompt", "Once upon a time"}}.dump());
  const auto bare =
      http_post(server.port(), "/tokenize", json{{"prompt", "Once upon a time"}, {"add_special_tokens", false}}.dump());
  EXPECT_EQ(plain.json["tokens"], server.tokenizer().encode("Once upon a time", true));
  EXPECT_EQ(bare.json["tokens"], server.tokenizer().encode("Once upon a time", false));
  EXPECT_EQ(http_post(server.port(), "/detokenize", json{{"tokens", bare.json["tokens"]}}.dump()).json["prompt"],
            "Once upon a time");
}

// Tool calls of a streamed reply. A template whose source names <|python_tag|> asks for
// Llama 3's format, where the whole reply is {"name": ..., "parameters": {...}}, and a
// json_schema response_format makes the model write exactly such a reply: streamed, it
// arrives as delta.tool_calls (a header, then the arguments piece by piece, then an empty
// delta with finish_reason "tool_calls") and agrees with the non-streamed response.
TEST(ServerChatTemplate, StreamedToolCallsAgreeWithTheWholeResponse) {
  const auto dir = testing::make_temp_dir("tool-call-template");
  std::ofstream(dir / "llama3_tools.jinja")
      << "{# Calls are written as <|python_tag|>{\"name\": ..., \"parameters\": {...}} #}"
         "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
         "{% if tools %}tools: {{ tools | length }}\n{% endif %}assistant:";
  TestServerOptions o;
  o.max_running = 2;
  o.chat_template = dir / "llama3_tools.jinja";
  o.chat_template_model_dir = special_tokens_dir({{"bos_token", nullptr}, {"eos_token", "<|im_end|>"}});
  TestServer server(o);
  const json arguments_schema = {{"type", "object"},
                                 {"properties", {{"city", {{"enum", {"Paris", "Rome"}}}}, {"days", {{"enum", {1, 2, 3}}}}}},
                                 {"required", {"city", "days"}}};
  const json call_schema = {{"type", "object"},
                            {"properties", {{"name", {{"const", "get_weather"}}}, {"parameters", arguments_schema}}},
                            {"required", {"name", "parameters"}}};
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})},
               {"tools", json::array({{{"type", "function"},
                                       {"function", {{"name", "get_weather"}, {"parameters", arguments_schema}}}}})},
               {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "call"}, {"schema", call_schema}}}}},
               {"temperature", 0}};  // no max_tokens: the model pads with whitespace
  const auto whole = http_post(server.port(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json& message = whole.json["choices"][0]["message"];
  ASSERT_EQ(whole.json["choices"][0]["finish_reason"], "tool_calls") << whole.body;
  ASSERT_EQ(message["tool_calls"].size(), 1u) << whole.body;
  EXPECT_TRUE(message["content"].is_null());
  const json whole_arguments = json::parse(message["tool_calls"][0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(whole_arguments.contains("city") && whole_arguments.contains("days")) << whole_arguments;

  body["stream"] = true;
  const auto streamed = testing::http_stream(server.port(), "/v1/chat/completions", body.dump());
  ASSERT_EQ(streamed.status, 200);
  ASSERT_TRUE(streamed.done);
  EXPECT_EQ(streamed.text, "");  // no content: the reply is the call
  EXPECT_EQ(streamed.finish_reason, "tool_calls");
  std::string arguments;
  int64_t headers = 0, argument_chunks = 0;
  for (size_t k = 0; k < streamed.chunks.size(); ++k) {
    const json& choice = streamed.chunks[k]["choices"][0];
    const json& delta = choice["delta"];
    if (k == 0) {
      EXPECT_EQ(delta["role"], "assistant") << delta;
    }
    if (k + 1 == streamed.chunks.size()) {  // OpenAI's last chunk: an empty delta
      EXPECT_EQ(delta, json::object());
      EXPECT_EQ(choice["finish_reason"], "tool_calls");
      continue;
    }
    EXPECT_TRUE(choice["finish_reason"].is_null());
    ASSERT_TRUE(delta.contains("tool_calls")) << delta;
    const json& call = delta["tool_calls"][0];
    EXPECT_EQ(call["index"], 0);
    if (call.contains("id")) {
      ++headers;
      EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_")) << call;
      EXPECT_EQ(call["type"], "function");
      EXPECT_EQ(call["function"]["name"], "get_weather");
      EXPECT_EQ(call["function"]["arguments"], "");
    } else {
      ++argument_chunks;
      arguments += call["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(headers, 1);
  // How many tokens a chunk carries depends on how fast this client reads (a fast machine
  // can finish the reply between two reads); that arguments go out as they are written is
  // ToolCallStream.ArgumentsArriveAsTheyAreWritten's to show.
  EXPECT_GE(argument_chunks, 1);
  EXPECT_EQ(json::parse(arguments), whole_arguments) << arguments;

  // With logprobs: every token's entry once, on the chunks of the call.
  body["logprobs"] = true;
  const auto with_logprobs = testing::http_stream(server.port(), "/v1/chat/completions", body.dump());
  ASSERT_TRUE(with_logprobs.done);
  EXPECT_EQ(with_logprobs.finish_reason, "tool_calls");
  int64_t num_logprobs = 0;
  for (const json& chunk : with_logprobs.chunks) {
    const json& logprobs = chunk["choices"][0]["logprobs"];
    if (!logprobs.is_null()) num_logprobs += static_cast<int64_t>(logprobs["content"].size());
  }
  EXPECT_EQ(num_logprobs, whole.json["usage"]["completion_tokens"].get<int64_t>());
  body.erase("logprobs");

  // tool_choice "none" withholds the tools: the same JSON is plain content.
  body["tool_choice"] = "none";
  const auto plain = testing::http_stream(server.port(), "/v1/chat/completions", body.dump());
  ASSERT_TRUE(plain.done);
  EXPECT_EQ(plain.finish_reason, "stop");
  EXPECT_TRUE(json::parse(plain.text, nullptr, false).is_object()) << plain.text;
  for (const json& chunk : plain.chunks) EXPECT_FALSE(chunk["choices"][0]["delta"].contains("tool_calls")) << chunk;
}

TEST(ServerChatTemplate, BadTokenizeRequests) {
  TestServer server;
  const std::pair<const char*, int> cases[] = {
      {"{not json", 400},
      {R"({"prompt": 5})", 400},
      {R"({})", 400},
      {R"({"prompt": "x", "model": "other"})", 404},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", 400},  // the simple format has no tool role
      {R"({"prompt": "x", "add_special_tokens": "yes"})", 400},
  };
  for (const auto& [body, status] : cases) {
    EXPECT_EQ(http_post(server.port(), "/tokenize", body).status, status) << body;
  }
  EXPECT_EQ(http_post(server.port(), "/detokenize", R"({"tokens": [-1]})").status, 400);
  EXPECT_EQ(http_post(server.port(), "/detokenize", R"({"tokens": [999999]})").status, 400);
  EXPECT_EQ(http_post(server.port(), "/detokenize", R"({"tokens": "abc"})").status, 400);
}

}  // namespace
}  // namespace dspark
