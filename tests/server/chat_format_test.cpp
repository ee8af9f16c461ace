// Chat formats: family detection from tokenizer_config.json and the exact prompt text of
// each family.
#include "server/chat_format.h"

#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi there"}, {"assistant", "Hello!"}, {"user", "  Count to 3. \n"}};

std::filesystem::path dir_with_config(const std::string& name, const std::string& config_text) {
  const auto dir = testing::make_temp_dir(name);
  std::ofstream(dir / "tokenizer_config.json") << config_text;
  return dir;
}

TEST(ChatFormat, DetectsTheTemplateFamily) {
  EXPECT_EQ(ChatFormat::from_template("{% for m in messages %}<|im_start|>{{ m.role }}...").kind(), ChatFormatKind::kChatMl);
  EXPECT_EQ(ChatFormat::from_template("{{ bos_token }}<|start_header_id|>{{ role }}<|end_header_id|>").kind(),
            ChatFormatKind::kLlama3);
  EXPECT_EQ(ChatFormat::from_template("[INST] {{ content }} [/INST]").kind(), ChatFormatKind::kSimple);
  EXPECT_EQ(ChatFormat::from_template("").kind(), ChatFormatKind::kSimple);
}

TEST(ChatFormat, SimpleFormat) {
  const ChatFormat f(ChatFormatKind::kSimple);
  EXPECT_EQ(f.render(kConversation),
            "System: Be brief.\nUser: Hi there\nAssistant: Hello!\nUser:   Count to 3. \n\nAssistant:");
  EXPECT_EQ(f.render(std::vector<ChatMessage>{{"user", "Hello"}}), "User: Hello\nAssistant:");
  EXPECT_TRUE(f.add_special_tokens());  // the tokenizer's BOS, as for a plain prompt
  EXPECT_EQ(f.name(), "simple");
}

TEST(ChatFormat, ChatMlFormat) {
  const ChatFormat f(ChatFormatKind::kChatMl);
  EXPECT_EQ(f.render(kConversation),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi there<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\n  Count to 3. \n<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_FALSE(f.add_special_tokens());
  EXPECT_EQ(f.name(), "chatml");
}

TEST(ChatFormat, Llama3FormatTrimsContent) {
  const ChatFormat f(ChatFormatKind::kLlama3);
  EXPECT_EQ(f.render(kConversation),
            "<|begin_of_text|>"
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nCount to 3.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_FALSE(f.add_special_tokens());  // the text carries <|begin_of_text|> itself
  EXPECT_EQ(f.name(), "llama3");
}

TEST(ChatFormat, FromModelDirectory) {
  EXPECT_EQ(ChatFormat::from_model_dir(testing::make_temp_dir("chat-none")).kind(), ChatFormatKind::kSimple);
  EXPECT_EQ(ChatFormat::from_model_dir(dir_with_config("chat-no-template", R"({"add_bos_token": true})")).kind(),
            ChatFormatKind::kSimple);
  EXPECT_EQ(ChatFormat::from_model_dir(dir_with_config("chat-chatml", R"({"chat_template": "<|im_start|>x"})")).kind(),
            ChatFormatKind::kChatMl);
  // A list of named templates: "default" wins over the first.
  const auto listed = dir_with_config(
      "chat-list", R"({"chat_template": [{"name": "tool_use", "template": "<|im_start|>"},
                                          {"name": "default", "template": "<|start_header_id|>"}]})");
  EXPECT_EQ(ChatFormat::from_model_dir(listed).kind(), ChatFormatKind::kLlama3);
  const auto first = dir_with_config("chat-list-first", R"({"chat_template": [{"name": "a", "template": "<|im_start|>"}]})");
  EXPECT_EQ(ChatFormat::from_model_dir(first).kind(), ChatFormatKind::kChatMl);
  EXPECT_THROW(ChatFormat::from_model_dir(dir_with_config("chat-bad", "{not json")), Error);
  // The tiny story model has no template.
  EXPECT_EQ(ChatFormat::from_model_dir(std::filesystem::path(DSPARK_SHARED_DIR) / "data/models/stories260K-hf").kind(),
            ChatFormatKind::kSimple);
}

}  // namespace
}  // namespace dspark
