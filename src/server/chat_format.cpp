#include "server/chat_format.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

std::string simple_role(std::string_view role) {
  if (role == "system") return "System";
  if (role == "assistant") return "Assistant";
  return "User";
}

}  // namespace

ChatFormat ChatFormat::from_template(std::string_view t) {
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatFormat(ChatFormatKind::kChatMl);
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat(ChatFormatKind::kLlama3);
  return ChatFormat(ChatFormatKind::kSimple);
}

ChatFormat ChatFormat::from_model_dir(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "tokenizer_config.json";
  std::ifstream in(path);
  if (!in.good()) return ChatFormat(ChatFormatKind::kSimple);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    DSPARK_FAIL("{}: malformed JSON: {}", path.string(), e.what());
  }
  if (!config.is_object() || !config.contains("chat_template")) return ChatFormat(ChatFormatKind::kSimple);
  const nlohmann::json& t = config["chat_template"];
  if (t.is_string()) return from_template(t.get<std::string>());
  if (t.is_array()) {
    const nlohmann::json* chosen = nullptr;
    for (const auto& entry : t) {
      if (!entry.is_object() || !entry.contains("template") || !entry["template"].is_string()) continue;
      if (!chosen) chosen = &entry;
      if (entry.value("name", "") == "default") {
        chosen = &entry;
        break;
      }
    }
    if (chosen) return from_template((*chosen)["template"].get<std::string>());
  }
  return ChatFormat(ChatFormatKind::kSimple);
}

std::string_view ChatFormat::name() const {
  switch (kind_) {
    case ChatFormatKind::kSimple: return "simple";
    case ChatFormatKind::kChatMl: return "chatml";
    case ChatFormatKind::kLlama3: return "llama3";
  }
  return "simple";
}

std::string ChatFormat::render(std::span<const ChatMessage> messages) const {
  std::string out;
  switch (kind_) {
    case ChatFormatKind::kSimple:
      for (const ChatMessage& m : messages) out += simple_role(m.role) + ": " + m.content + "\n";
      out += "Assistant:";
      break;
    case ChatFormatKind::kChatMl:
      for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      out += "<|im_start|>assistant\n";
      break;
    case ChatFormatKind::kLlama3:
      out = "<|begin_of_text|>";
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += trim(m.content);
        out += "<|eot_id|>";
      }
      out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
  }
  return out;
}

}  // namespace dspark
