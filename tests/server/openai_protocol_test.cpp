// The OpenAI request parser: every supported field and form, and every kind of bad input
// (400 naming the field); the response and chunk shapes.
#include "server/openai_protocol.h"

#include <gtest/gtest.h>

namespace dspark {
namespace {

using nlohmann::json;

ApiError parse_error(const std::string& body, Endpoint endpoint = Endpoint::kCompletions) {
  try {
    parse_request(body, endpoint);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "", "");
}

TEST(OpenAiProtocol, ParsesEveryCompletionField) {
  const ParsedRequest r = parse_request(R"({
      "model": "m", "prompt": "Hello", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
      "min_p": 0.05, "repetition_penalty": 1.1, "seed": 42, "stop": ["a", "bc"], "ignore_eos": true,
      "stream": true, "stream_options": {"include_usage": true}, "n": 1, "presence_penalty": 0.25,
      "frequency_penalty": -0.5, "logprobs": 3, "num_speculative_tokens": 2,
      "logit_bias": {"50": -100, "7": 2.5, "0": 100}, "min_tokens": 3, "stop_token_ids": [9, 4],
      "include_stop_str_in_output": true, "unknown_field": {"anything": [1, 2]}})",
                                        Endpoint::kCompletions);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt_text, "Hello");
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_EQ(r.options.max_tokens, 7);
  EXPECT_TRUE(r.max_tokens_given);
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.options.sampling.top_p, 0.9f);
  EXPECT_EQ(r.options.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.options.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r.options.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(r.options.sampling.seed, 42u);
  EXPECT_TRUE(r.seed_given);
  EXPECT_TRUE(r.options.sampling.position_keyed) << "a given seed keys the sampling on positions";
  EXPECT_EQ(r.options.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.options.ignore_eos);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_FLOAT_EQ(r.options.sampling.presence_penalty, 0.25f);
  EXPECT_FLOAT_EQ(r.options.sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(r.options.logprobs, 3);
  EXPECT_EQ(r.options.max_spec_tokens, 2);
  // Sorted by token id, as SamplingParams holds them.
  EXPECT_EQ(r.options.sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{0, 100.0f}, {7, 2.5f}, {50, -100.0f}}));
  EXPECT_EQ(r.options.min_tokens, 3);
  EXPECT_EQ(r.options.stop_token_ids, (std::vector<int32_t>{9, 4}));
  EXPECT_TRUE(r.options.include_stop_str_in_output);
  EXPECT_EQ(r.n, 1);
  EXPECT_EQ(parse_request(R"({"prompt": "x", "n": 3, "response_format": {"type": "text"}})", Endpoint::kCompletions).n, 3);
  EXPECT_EQ(parse_request(R"({"prompt": "x", "response_format": {"type": "json_object"}})", Endpoint::kCompletions)
                .options.response_format,
            ResponseFormat::kJsonObject);
}

TEST(OpenAiProtocol, LogprobsFieldsPerEndpoint) {
  auto chat = [](const char* extra) {
    return parse_request(std::string(R"({"messages": [{"role": "user", "content": "x"}])") + extra + "}",
                         Endpoint::kChat)
        .options;
  };
  EXPECT_EQ(chat("").logprobs, -1);
  EXPECT_EQ(chat(R"(, "logprobs": false)").logprobs, -1);
  EXPECT_EQ(chat(R"(, "logprobs": false, "top_logprobs": 0)").logprobs, -1);
  EXPECT_EQ(chat(R"(, "logprobs": true)").logprobs, 0);
  EXPECT_EQ(chat(R"(, "logprobs": true, "top_logprobs": 5)").logprobs, 5);
  EXPECT_EQ(chat("").max_spec_tokens, -1);
  EXPECT_EQ(chat(R"(, "num_speculative_tokens": 0)").max_spec_tokens, 0);
  EXPECT_EQ(parse_request(R"({"prompt": "x", "logprobs": 0})", Endpoint::kCompletions).options.logprobs, 0);
  EXPECT_EQ(parse_request(R"({"prompt": "x", "logprobs": null})", Endpoint::kCompletions).options.logprobs, -1);
}

TEST(OpenAiProtocol, DefaultsAndNulls) {
  const ParsedRequest r = parse_request(R"({"prompt": "x", "temperature": null, "stop": null, "seed": null})",
                                        Endpoint::kCompletions);
  EXPECT_FLOAT_EQ(r.options.sampling.temperature, 1.0f);  // OpenAI's default
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_FALSE(r.seed_given);
  EXPECT_FALSE(r.options.sampling.position_keyed);
  EXPECT_TRUE(r.options.sampling.logit_bias.empty());
  EXPECT_TRUE(parse_request(R"({"prompt": "x", "logit_bias": {}})", Endpoint::kCompletions)
                  .options.sampling.logit_bias.empty());
  EXPECT_FALSE(r.stream);
  EXPECT_TRUE(r.options.stop.empty());
  EXPECT_EQ(parse_request(R"({"prompt": "x", "stop": "END"})", Endpoint::kCompletions).options.stop,
            std::vector<std::string>{"END"});
  EXPECT_EQ(parse_request(R"({"prompt": "x", "top_k": -1})", Endpoint::kCompletions).options.sampling.top_k, 0);
  EXPECT_EQ(parse_request(R"({"prompt": "x", "max_tokens": 16.0})", Endpoint::kCompletions).options.max_tokens, 16);
  // Negative seeds are integers too.
  EXPECT_TRUE(parse_request(R"({"prompt": "x", "seed": -5})", Endpoint::kCompletions).seed_given);
}

TEST(OpenAiProtocol, PromptForms) {
  EXPECT_EQ(parse_request(R"({"prompt": ["only"]})", Endpoint::kCompletions).prompt_text, "only");
  const ParsedRequest ids = parse_request(R"({"prompt": [1, 2, 3]})", Endpoint::kCompletions);
  EXPECT_TRUE(ids.prompt_is_ids);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_request(R"({"prompt": [[4, 5]]})", Endpoint::kCompletions).prompt_ids, (std::vector<int32_t>{4, 5}));
}

TEST(OpenAiProtocol, ChatMessagesAndMaxCompletionTokens) {
  const ParsedRequest r = parse_request(R"({"messages": [
      {"role": "developer", "content": "sys"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null}],
      "max_tokens": 5, "max_completion_tokens": 9})",
                                        Endpoint::kChat);
  const auto& m = r.chat.messages;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[0]["content"], "sys");
  EXPECT_EQ(m[1]["content"], "a\nb");  // text parts joined with newlines, as vLLM does
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_TRUE(m[2]["content"].is_null());
  EXPECT_TRUE(r.chat.tools.is_null());
  EXPECT_TRUE(r.chat.add_generation_prompt);
  EXPECT_EQ(r.options.max_tokens, 9);  // max_completion_tokens supersedes max_tokens
}

TEST(OpenAiProtocol, ToolsAndToolCallsReachTheTemplateInOrder) {
  const ParsedRequest r = parse_request(R"({"messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"zeta\": 1, \"alpha\": \"x\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"z": 1, "a": 2}}}],
      "add_generation_prompt": false})",
                                        Endpoint::kChat);
  const auto& m = r.chat.messages;
  ASSERT_EQ(m.size(), 3u);
  // Arguments parsed to an object, keys in the client's order.
  EXPECT_EQ(m[1]["tool_calls"][0]["function"]["arguments"].dump(), R"({"zeta":1,"alpha":"x"})");
  EXPECT_EQ(m[2]["tool_call_id"], "call_1");
  EXPECT_EQ(r.chat.tools[0]["function"]["parameters"].dump(), R"({"z":1,"a":2})");
  EXPECT_FALSE(r.chat.add_generation_prompt);
  // tool_choice "none" withholds the tools.
  const ParsedRequest none = parse_request(
      R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}], "tool_choice": "none"})",
      Endpoint::kChat);
  EXPECT_TRUE(none.chat.tools.is_null());
}

struct BadCase {
  const char* body;
  const char* param;  // "" = null
  Endpoint endpoint = Endpoint::kCompletions;
};

TEST(OpenAiProtocol, BadInputIs400NamingTheField) {
  const BadCase cases[] = {
      {"{not json", ""},
      {"[1, 2]", ""},
      {"\"just a string\"", ""},
      {R"({"max_tokens": 5})", "prompt"},
      {R"({"prompt": 5})", "prompt"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": ["a", "b"]})", "prompt"},
      {R"({"prompt": [1, "a"]})", "prompt"},
      {R"({"prompt": [-1]})", "prompt"},
      {R"({"prompt": "x", "model": 3})", "model"},
      {R"({"prompt": "x", "max_tokens": "10"})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 1.5})", "max_tokens"},
      {R"({"prompt": "x", "max_tokens": 99999999999999999999})", "max_tokens"},
      {R"({"prompt": "x", "temperature": -1})", "temperature"},
      {R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {R"({"prompt": "x", "top_p": 0})", "top_p"},
      {R"({"prompt": "x", "top_p": 1.5})", "top_p"},
      {R"({"prompt": "x", "top_k": -2})", "top_k"},
      {R"({"prompt": "x", "top_k": true})", "top_k"},
      {R"({"prompt": "x", "min_p": 2})", "min_p"},
      {R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty"},
      {R"({"prompt": "x", "seed": 1.5})", "seed"},
      {R"({"prompt": "x", "seed": "1"})", "seed"},
      {R"({"prompt": "x", "stop": 3})", "stop"},
      {R"({"prompt": "x", "stop": ["ok", 3]})", "stop"},
      {R"({"prompt": "x", "stop": [""]})", "stop"},
      {R"({"prompt": "x", "stream": "yes"})", "stream"},
      {R"({"prompt": "x", "stream_options": 1})", "stream_options"},
      {R"({"prompt": "x", "stream_options": {"include_usage": 1}})", "stream_options.include_usage"},
      {R"({"prompt": "x", "ignore_eos": 1})", "ignore_eos"},
      {R"({"prompt": "x", "n": 0})", "n"},
      {R"({"prompt": "x", "n": 17})", "n"},
      {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {}}})", "response_format"},
      {R"({"prompt": "x", "response_format": "json"})", "response_format"},
      {R"({"prompt": "x", "best_of": 3})", "best_of"},
      {R"({"messages": [{"role": "user", "content": "x"}], "echo": true})", "echo", Endpoint::kChat},
      {R"({"prompt": "x", "logprobs": 21})", "logprobs"},
      {R"({"prompt": "x", "logprobs": -1})", "logprobs"},
      {R"({"prompt": "x", "logprobs": true})", "logprobs"},
      {R"({"prompt": "x", "presence_penalty": 2.5})", "presence_penalty"},
      {R"({"prompt": "x", "frequency_penalty": -3})", "frequency_penalty"},
      {R"({"prompt": "x", "frequency_penalty": "a"})", "frequency_penalty"},
      {R"({"prompt": "x", "num_speculative_tokens": -1})", "num_speculative_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 3})", "logprobs", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "top_logprobs",
       Endpoint::kChat},
      {R"({"prompt": "x", "logit_bias": [1]})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"-5": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"99999999999": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"5": 101}})", "logit_bias.5"},
      {R"({"prompt": "x", "logit_bias": {"5": -100.5}})", "logit_bias.5"},
      {R"({"prompt": "x", "logit_bias": {"5": "a"}})", "logit_bias.5"},
      {R"({"prompt": "x", "logit_bias": {"5": 1, "05": 2}})", "logit_bias"},
      {R"({"prompt": "x", "suffix": "end"})", "suffix"},
      {R"({"prompt": "x", "min_tokens": -1})", "min_tokens"},
      {R"({"prompt": "x", "prompt_logprobs": 21})", "prompt_logprobs"},
      {R"({"prompt": "x", "prompt_logprobs": 1, "stream": true})", "prompt_logprobs"},
      {R"({"prompt": "x", "prompt_logprobs": 1, "echo": true, "logprobs": 2})", "prompt_logprobs"},
      {R"({"prompt": "x", "min_tokens": "2"})", "min_tokens"},
      {R"({"prompt": "x", "stop_token_ids": 5})", "stop_token_ids"},
      {R"({"prompt": "x", "stop_token_ids": [-1]})", "stop_token_ids"},
      {R"({"prompt": "x", "stop_token_ids": ["a"]})", "stop_token_ids"},
      {R"({"prompt": "x", "include_stop_str_in_output": 1})", "include_stop_str_in_output"},
      {R"({"messages": "hi"})", "messages", Endpoint::kChat},
      {R"({"messages": []})", "messages", Endpoint::kChat},
      {R"({"prompt": "no messages"})", "messages", Endpoint::kChat},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role", Endpoint::kChat},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content", Endpoint::kChat},
      {R"({"messages": [1]})", "messages[0]", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {"type": "function"}})", "tools", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}], "tool_choice": "required"})",
       "tools[0].function", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "f"}}],
          "tool_choice": "required", "response_format": {"type": "json_object"}})",
       "response_format", Endpoint::kChat},
      {R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": 1})", "add_generation_prompt",
       Endpoint::kChat},
  };
  for (const BadCase& c : cases) {
    const ApiError e = parse_error(c.body, c.endpoint);
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body;
    EXPECT_EQ(e.type(), "invalid_request_error") << c.body;
    EXPECT_FALSE(e.message().empty()) << c.body;
    const json body = e.body();
    ASSERT_TRUE(body.contains("error")) << c.body;
    for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(body["error"].contains(key)) << key;
    if (*c.param == '\0') EXPECT_TRUE(body["error"]["param"].is_null());
    else EXPECT_EQ(body["error"]["param"], c.param);
  }
}

TEST(OpenAiProtocol, ResponseShapes) {
  const ResponseContext completion{Endpoint::kCompletions, "cmpl-1", 100, "m"};
  const json whole = make_response(completion, "hi", FinishReason::kLength, Usage{3, 2});
  EXPECT_EQ(whole["object"], "text_completion");
  EXPECT_EQ(whole["choices"][0]["text"], "hi");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["total_tokens"], 5);
  EXPECT_EQ(whole["model"], "m");

  const ResponseContext chat{Endpoint::kChat, "chatcmpl-1", 100, "m"};
  const json reply = make_response(chat, "yo", FinishReason::kEos, Usage{1, 1});
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(reply["choices"][0]["message"]["content"], "yo");
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");

  const json first = make_chunk(chat, "a", std::nullopt, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  const json last = make_chunk(chat, "", FinishReason::kStop, false);
  EXPECT_FALSE(last["choices"][0]["delta"].contains("content"));
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  const json usage = make_usage_chunk(completion, Usage{4, 6, 2});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 6);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 2);

  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  // Invalid UTF-8 never throws out of the serializer.
  EXPECT_NO_THROW(sse_event(json{{"t", std::string("\xff\xfe")}}));
}

}  // namespace
}  // namespace dspark
