// Chat formats: where a model's template is found (chat_template.jinja, tokenizer_config.json
// as a string or a named list), its special tokens, the simple fallback, and errors.
#include "server/chat_format.h"

#include <fstream>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/jinja_error.h"
#include "core/check.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using nlohmann::ordered_json;

ChatConversation conversation(std::initializer_list<std::pair<const char*, const char*>> messages) {
  ChatConversation c;
  for (const auto& [role, content] : messages) c.messages.push_back({{"role", role}, {"content", content}});
  return c;
}

std::filesystem::path dir_with_config(const std::string& name, const std::string& config_text) {
  const auto dir = testing::make_temp_dir(name);
  std::ofstream(dir / "tokenizer_config.json") << config_text;
  return dir;
}

// A template that shows every variable it is given.
constexpr const char* kEcho =
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
    "{% if add_generation_prompt %}>{% endif %}{{ eos_token }}|{{ tools is defined }}";

TEST(ChatFormat, SimpleFormat) {
  const ChatFormat f;
  const auto c = conversation({{"system", "Be brief."}, {"user", "Hi there"}, {"assistant", "Hello!"}, {"user", "  Count. \n"}});
  EXPECT_EQ(f.render(c), "System: Be brief.\nUser: Hi there\nAssistant: Hello!\nUser:   Count. \n\nAssistant:");
  EXPECT_TRUE(f.add_special_tokens());  // the tokenizer's BOS, as for a plain prompt
  EXPECT_EQ(f.name(), "simple");
  ChatConversation no_prompt = conversation({{"user", "Hello"}});
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(f.render(no_prompt), "User: Hello\n");
  // What only a template can express is refused, naming the reason.
  EXPECT_THROW(f.render(conversation({{"tool", "sunny"}})), Error);
  ChatConversation with_tools = conversation({{"user", "x"}});
  with_tools.tools = ordered_json::array({{{"type", "function"}}});
  EXPECT_THROW(f.render(with_tools), Error);
}

TEST(ChatFormat, TemplateFromTokenizerConfigWithSpecialTokens) {
  const auto dir = dir_with_config(
      "chat-string", ordered_json{{"chat_template", kEcho},
                                  {"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                                  {"eos_token", "</s>"}}
                         .dump());
  const ChatFormat f = ChatFormat::from_model_dir(dir);
  EXPECT_EQ(f.name(), "template");
  EXPECT_FALSE(f.add_special_tokens());
  EXPECT_EQ(f.render(conversation({{"user", "hi"}})), "<s>[user:hi]></s>|False");  // no tools: undefined
}

TEST(ChatFormat, WhereTheTemplateComesFrom) {
  // A named list: "default" wins over the first; otherwise the first.
  const auto listed = dir_with_config(
      "chat-list", R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  EXPECT_EQ(ChatFormat::from_model_dir(listed).render(conversation({{"user", "x"}})), "D");
  const auto first = dir_with_config("chat-list-first", R"({"chat_template": [{"name": "a", "template": "A"}]})");
  EXPECT_EQ(ChatFormat::from_model_dir(first).render(conversation({{"user", "x"}})), "A");
  // chat_template.jinja beside it takes precedence.
  std::ofstream(first / "chat_template.jinja") << "J{{ messages | length }}";
  EXPECT_EQ(ChatFormat::from_model_dir(first).render(conversation({{"user", "x"}})), "J1");
  // An explicit file overrides both, with the model's special tokens.
  const auto file = testing::make_temp_dir("chat-file") / "override.jinja";
  std::ofstream(file) << "{{ eos_token }}O";
  const auto with_eos = dir_with_config("chat-eos", R"({"eos_token": "<e>"})");
  EXPECT_EQ(ChatFormat::from_template_file(file, with_eos).render(conversation({{"user", "x"}})), "<e>O");
  // No template: the simple format.
  EXPECT_EQ(ChatFormat::from_model_dir(testing::make_temp_dir("chat-none")).name(), "simple");
  EXPECT_EQ(ChatFormat::from_model_dir(dir_with_config("chat-no-template", R"({"add_bos_token": true})")).name(),
            "simple");
  EXPECT_EQ(ChatFormat::from_model_dir(std::filesystem::path(DSPARK_SHARED_DIR) / "data/models/stories260K-hf").name(),
            "simple");
}

TEST(ChatFormat, BrokenFilesAndTemplatesAreClearErrors) {
  EXPECT_THROW(ChatFormat::from_model_dir(dir_with_config("chat-bad", "{not json")), Error);
  EXPECT_THROW(ChatFormat::from_model_dir(dir_with_config("chat-bad-type", R"({"chat_template": 5})")), Error);
  EXPECT_THROW(ChatFormat::from_template_file("/nonexistent/x.jinja", testing::make_temp_dir("chat-x")), Error);
  // A syntax error names the file and the line.
  const auto dir = testing::make_temp_dir("chat-syntax");
  std::ofstream(dir / "chat_template.jinja") << "line one\n{% if %}\n";
  try {
    ChatFormat::from_model_dir(dir);
    ADD_FAILURE() << "parsed";
  } catch (const jinja::TemplateSyntaxError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("chat_template.jinja:2"), std::string::npos) << what;
  }
  // The template's own raise_exception reaches the caller with its message.
  std::ofstream(dir / "chat_template.jinja", std::ios::trunc)
      << "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok";
  const ChatFormat f = ChatFormat::from_model_dir(dir);
  EXPECT_EQ(f.render(conversation({{"user", "x"}})), "ok");
  try {
    f.render(conversation({{"system", "x"}}));
    ADD_FAILURE() << "rendered";
  } catch (const jinja::TemplateRaisedError& e) {
    EXPECT_STREQ(e.what(), "System role not supported");
  }
}

}  // namespace
}  // namespace dspark
