// ChatFormat: turns a list of chat messages into the prompt text a model was trained on.
// dspark does not run Jinja; it recognises the family of the model's chat template
// (tokenizer_config.json "chat_template") and renders that family's format natively:
//
//   ChatML   (template contains "<|im_start|>", Qwen2/Qwen3 and others)
//            "<|im_start|>{role}\n{content}<|im_end|>\n" per message,
//            then "<|im_start|>assistant\n".
//   Llama-3  (template contains "<|start_header_id|>")
//            "<|begin_of_text|>" then per message
//            "<|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|>",
//            then "<|start_header_id|>assistant<|end_header_id|>\n\n".
//            (Llama 3.1's default system preamble with dates and tools is not added.)
//   Simple   (no template, or one of neither family: the tiny models of this project)
//            "System: {content}\n" / "User: {content}\n" / "Assistant: {content}\n" per
//            message, then "Assistant:" — the prompt ends where the reply begins, and the
//            tokenizer adds its BOS as for any plain prompt.
//
// Roles are "system", "user" and "assistant" (callers map "developer" to "system").
// ChatML and Llama-3 prompts carry their own special tokens: encode them with
// add_special_tokens() == false so that no second BOS is prepended.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace dspark {

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

enum class ChatFormatKind { kSimple, kChatMl, kLlama3 };

class ChatFormat {
 public:
  explicit ChatFormat(ChatFormatKind kind = ChatFormatKind::kSimple) : kind_(kind) {}

  // The family of a chat template's source text (see above).
  static ChatFormat from_template(std::string_view chat_template);
  // Reads dir/tokenizer_config.json: "chat_template" as a string, or as a list of
  // {"name", "template"} (the one named "default", else the first). A missing file or
  // field gives the simple format; a file that is not valid JSON throws Error.
  static ChatFormat from_model_dir(const std::filesystem::path& dir);

  ChatFormatKind kind() const { return kind_; }
  std::string_view name() const;  // "simple", "chatml", "llama3"
  bool add_special_tokens() const { return kind_ == ChatFormatKind::kSimple; }

  // The prompt for the assistant's next reply.
  std::string render(std::span<const ChatMessage> messages) const;

 private:
  ChatFormatKind kind_;
};

}  // namespace dspark
