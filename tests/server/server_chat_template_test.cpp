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
