// Tool calls parsed back from a reply in each template family's format, and the chat
// response they make.
#include "server/tool_calls.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "server/call_ids.h"
#include "server/openai_protocol.h"

namespace dspark {
namespace {

using nlohmann::json;

std::function<std::string()> counter() { return testing::counting_call_ids(); }

std::string read_template(const std::string& name) {
  std::ifstream in(std::filesystem::path(DSPARK_SHARED_DIR) / "data/chat_templates" / name);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ToolCalls, FormatOfRealTemplates) {
  EXPECT_EQ(tool_call_format(read_template("Qwen-Qwen2.5-7B-Instruct.jinja")), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format(read_template("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format(read_template("meta-llama-Llama-3.1-8B-Instruct.jinja")), ToolCallFormat::kLlama3);
  EXPECT_EQ(tool_call_format(read_template("meta-llama-Llama-3.2-3B-Instruct.jinja")), ToolCallFormat::kLlama3);
  EXPECT_EQ(tool_call_format(read_template("mistralai-Mistral-Nemo-Instruct-2407.jinja")), ToolCallFormat::kMistral);
  EXPECT_EQ(tool_call_format(read_template("google-gemma-2-2b-it.jinja")), ToolCallFormat::kNone);
  EXPECT_EQ(tool_call_format(read_template("microsoft-Phi-3.5-mini-instruct.jinja")), ToolCallFormat::kNone);
}

TEST(ToolCalls, Hermes) {
  const auto parsed = parse_tool_calls(
      ToolCallFormat::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"now\"}</tool_call>",
      counter());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->content, "Let me check.");
  ASSERT_EQ(parsed->tool_calls.size(), 2u);
  EXPECT_EQ(parsed->tool_calls[0]["id"], "call_0");
  EXPECT_EQ(parsed->tool_calls[0]["type"], "function");
  EXPECT_EQ(parsed->tool_calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(parsed->tool_calls[0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(parsed->tool_calls[1]["function"]["arguments"], "{}");
  // A reply cut inside its call still parses if the JSON is whole; broken JSON is content.
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\"}", counter()));
  EXPECT_FALSE(parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"name\": </tool_call>", counter()));
  EXPECT_FALSE(parse_tool_calls(ToolCallFormat::kHermes, "no calls here", counter()));
  // The content keeps its leading whitespace (a stream has sent it before the call came).
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kHermes, "  hi \n<tool_call>{\"name\": \"f\"}", counter())->content, "  hi");
  EXPECT_FALSE(parse_tool_calls(ToolCallFormat::kHermes, " \n<tool_call>{\"name\": \"f\"}", counter())->content);
  EXPECT_FALSE(parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"arguments\": {}}</tool_call>", counter()));
}

TEST(ToolCalls, Llama3AndMistral) {
  auto llama = parse_tool_calls(ToolCallFormat::kLlama3,
                                "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}", counter());
  ASSERT_TRUE(llama);
  EXPECT_FALSE(llama->content);
  EXPECT_EQ(llama->tool_calls[0]["function"]["arguments"], R"({"q":"x"})");
  EXPECT_FALSE(parse_tool_calls(ToolCallFormat::kLlama3, "The answer is 4.", counter()));
  auto mistral = parse_tool_calls(
      ToolCallFormat::kMistral, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"k\": 1}}]",
      counter());
  ASSERT_TRUE(mistral);
  EXPECT_EQ(mistral->tool_calls.size(), 2u);
  EXPECT_EQ(mistral->tool_calls[1]["function"]["arguments"], R"({"k":1})");
  EXPECT_FALSE(parse_tool_calls(ToolCallFormat::kMistral, "[1, 2]", counter()));
  EXPECT_FALSE(parse_tool_calls(ToolCallFormat::kNone, "<tool_call>{\"name\": \"f\"}</tool_call>", counter()));
}

TEST(ToolCalls, ChatResponseShape) {
  const ResponseContext ctx{Endpoint::kChat, "chatcmpl-1", 100, "m"};
  const auto parsed = parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\"}</tool_call>", counter());
  ASSERT_TRUE(parsed);
  const json body = make_response(ctx, "<tool_call>...", FinishReason::kEos, Usage{3, 5}, nullptr, &*parsed);
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null());
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "f");
  // Without calls the reply is plain content.
  const json plain = make_response(ctx, "hello", FinishReason::kEos, Usage{3, 5});
  EXPECT_EQ(plain["choices"][0]["message"]["content"], "hello");
  EXPECT_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(plain["choices"][0]["finish_reason"], "stop");
}

// A call forced by naming its function finishes as its reply did, as in OpenAI's API.
TEST(ToolCalls, ForcedFunctionResponseKeepsTheReplysFinishReason) {
  ResponseContext ctx{Endpoint::kChat, "chatcmpl-1", 100, "m"};
  ctx.tool_call_format = ToolCallFormat::kForcedFunction;
  ctx.forced_function = "f";
  const std::string text = R"({"x": 1})";
  const auto parsed = parse_tool_calls(ctx.tool_call_format, text, counter(), ctx.forced_function);
  ASSERT_TRUE(parsed);
  for (const auto& [reason, name] : {std::pair{FinishReason::kEos, "stop"}, std::pair{FinishReason::kLength, "length"}}) {
    const json choice = make_response(ctx, text, reason, Usage{3, 5}, nullptr, &*parsed)["choices"][0];
    EXPECT_EQ(choice["finish_reason"], name);
    EXPECT_TRUE(choice["message"]["content"].is_null());
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"],
              (json{{"name", "f"}, {"arguments", text}}));
  }
}

TEST(ToolCalls, StreamChunkShape) {
  const ResponseContext ctx{Endpoint::kChat, "chatcmpl-1", 100, "m"};
  const json header = json::parse(R"({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                                      "function": {"name": "f", "arguments": ""}}]})");
  const json first = make_chat_chunk(ctx, header, nullptr, /*first=*/true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  const json& delta = first["choices"][0]["delta"];
  EXPECT_EQ(delta["role"], "assistant");
  EXPECT_FALSE(delta.contains("content"));  // beside tool calls
  EXPECT_EQ(delta["tool_calls"], header["tool_calls"]);
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const json last = make_chat_chunk(ctx, json::object(), "tool_calls", /*first=*/false);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "tool_calls");
  // A plain first chunk still opens with empty content, as make_chunk's.
  EXPECT_EQ(make_chat_chunk(ctx, json::object(), nullptr, true)["choices"][0]["delta"],
            make_chunk(ctx, "", std::nullopt, true)["choices"][0]["delta"]);
}

}  // namespace
}  // namespace dspark
