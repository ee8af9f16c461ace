// ChatTemplate: a model's own Jinja chat template with the special tokens it refers to,
// rendered as Hugging Face's apply_chat_template renders it (jinja_template.h).
//
// Where the template comes from, first found wins:
//   --chat-template FILE        (from_file)
//   DIR/chat_template.jinja     (newer Hugging Face checkpoints)
//   DIR/tokenizer_config.json   "chat_template": a string, or a list of {"name", "template"}
//                               (the one named "default", else the first)
// The variables besides the conversation are tokenizer_config.json's special tokens
// (bos_token, eos_token, unk_token, pad_token: strings or {"content": ...} objects), as
// Hugging Face passes its special_tokens_map.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja_template.h"

namespace dspark {

class ChatTemplate {
 public:
  // The model's template, or nullopt when it ships none. Throws Error for a file that is
  // not valid JSON, a chat_template field of the wrong type, or a template that does not
  // parse (naming the file and line).
  static std::optional<ChatTemplate> from_model_dir(const std::filesystem::path& dir);
  // A template file that overrides the model's; special tokens still come from model_dir.
  static ChatTemplate from_file(const std::filesystem::path& file, const std::filesystem::path& model_dir);

  // messages: the OpenAI-style list (role, content, and tool_calls, tool_call_id, name...
  // as the template reads them); tools: a list, or null when the request has none;
  // kwargs: further variables (an object, or null), which may override the special tokens.
  // Throws jinja::TemplateRaisedError when the template rejects the conversation (its own
  // message), jinja::TemplateRuntimeError when the template fails otherwise.
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt, const nlohmann::ordered_json& kwargs = nullptr) const;

  const std::string& source() const { return source_; }
  // Whether the template is written for tool calls in Hermes' <tool_call> format.
  bool uses_hermes_tool_calls() const;

 private:
  ChatTemplate(std::string source, std::string name, nlohmann::ordered_json special_tokens);

  std::string source_;
  jinja::Template template_;
  nlohmann::ordered_json special_tokens_;  // {"bos_token": "<s>", ...}
};

}  // namespace dspark
