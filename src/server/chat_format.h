// ChatFormat: turns a chat request's conversation into the prompt text of the model.
//
//   template  the model's own Jinja chat template (chat/chat_template.h), rendered exactly
//             as Hugging Face's apply_chat_template renders it. The text carries the
//             model's special tokens itself: encode it with add_special_tokens() == false.
//   simple    the fallback for a model without a template (this project's tiny models):
//             "System: {content}\n" / "User: {content}\n" / "Assistant: {content}\n" per
//             message, then "Assistant:" — the prompt ends where the reply begins, and the
//             tokenizer adds its BOS as for any plain prompt. Roles system, user and
//             assistant only, string content, no tools.
//
// Errors the request caused (a role or tools the format cannot express, the template's
// own raise_exception, a template that fails on this conversation) are thrown as Error;
// the server answers them with 400.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dspark {

class ChatTemplate;

// A conversation as the chat endpoint received it, normalised (openai_protocol.h):
// messages with "role" and "content" (a string or null) and whatever else the client
// sent (tool_calls with parsed arguments, tool_call_id, name).
struct ChatConversation {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;          // a list, or null
  bool add_generation_prompt = true;     // end the prompt where the assistant's reply begins
  nlohmann::ordered_json template_kwargs;  // further template variables (vLLM's chat_template_kwargs), or null
};

class ChatFormat {
 public:
  ChatFormat() = default;  // simple
  explicit ChatFormat(ChatTemplate chat_template);

  // The model's template when it ships one (ChatTemplate::from_model_dir), else simple.
  // Throws Error for an unreadable tokenizer_config.json or a template that does not parse.
  static ChatFormat from_model_dir(const std::filesystem::path& dir);
  // An explicit template file (--chat-template) for the model in model_dir.
  static ChatFormat from_template_file(const std::filesystem::path& file, const std::filesystem::path& model_dir);

  std::string_view name() const { return template_ ? "template" : "simple"; }
  bool add_special_tokens() const { return !template_; }
  const ChatTemplate* chat_template() const { return template_.get(); }

  std::string render(const ChatConversation& conversation) const;

 private:
  std::shared_ptr<const ChatTemplate> template_;  // shared: the format is copied per handler
};

}  // namespace dspark
