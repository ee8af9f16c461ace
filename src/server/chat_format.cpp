#include "server/chat_format.h"

#include "chat/chat_template.h"
#include "core/check.h"

namespace dspark {
namespace {

std::string simple_role(const std::string& role) {
  if (role == "system") return "System";
  if (role == "assistant") return "Assistant";
  if (role == "user") return "User";
  DSPARK_FAIL("role '{}' needs a model with a chat template (this model has none)", role);
}

std::string render_simple(const ChatConversation& c) {
  DSPARK_CHECK(c.tools.is_null() || c.tools.empty(), "tools need a model with a chat template (this model has none)");
  std::string out;
  for (const auto& m : c.messages) {
    const auto& content = m["content"];
    DSPARK_CHECK(content.is_null() || content.is_string(), "message content must be text for this model");
    out += simple_role(m["role"].get<std::string>()) + ": " + (content.is_null() ? "" : content.get<std::string>()) + "\n";
  }
  if (c.add_generation_prompt) out += "Assistant:";
  return out;
}

}  // namespace

ChatFormat::ChatFormat(ChatTemplate chat_template)
    : template_(std::make_shared<const ChatTemplate>(std::move(chat_template))) {}

ChatFormat ChatFormat::from_model_dir(const std::filesystem::path& dir) {
  if (std::optional<ChatTemplate> t = ChatTemplate::from_model_dir(dir)) return ChatFormat(std::move(*t));
  return ChatFormat();
}

ChatFormat ChatFormat::from_template_file(const std::filesystem::path& file, const std::filesystem::path& model_dir) {
  return ChatFormat(ChatTemplate::from_file(file, model_dir));
}

std::string ChatFormat::render(const ChatConversation& c) const {
  if (!template_) return render_simple(c);
  return template_->render(c.messages, c.tools, c.add_generation_prompt, c.template_kwargs);
}

}  // namespace dspark
