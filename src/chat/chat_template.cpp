#include "chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "core/check.h"

namespace dspark {
namespace {

using nlohmann::ordered_json;

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// tokenizer_config.json, or null when the directory has none.
ordered_json tokenizer_config(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "tokenizer_config.json";
  const std::optional<std::string> text = read_file(path);
  if (!text) return nullptr;
  try {
    ordered_json config = ordered_json::parse(*text);
    DSPARK_CHECK(config.is_object(), "{}: expected a JSON object", path.string());
    return config;
  } catch (const ordered_json::exception& e) {
    DSPARK_FAIL("{}: malformed JSON: {}", path.string(), e.what());
  }
}

// The special tokens Hugging Face passes to every template: strings, or AddedToken
// objects whose "content" is the string.
ordered_json special_tokens(const ordered_json& config) {
  ordered_json tokens = ordered_json::object();
  if (!config.is_object()) return tokens;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    auto it = config.find(key);
    if (it == config.end()) continue;
    if (it->is_string()) tokens[key] = *it;
    else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) tokens[key] = (*it)["content"];
  }
  return tokens;
}

// tokenizer_config.json's chat_template (see the header), or nullopt.
std::optional<std::string> config_template(const ordered_json& config, const std::filesystem::path& dir) {
  if (!config.is_object()) return std::nullopt;
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::nullopt;
  const std::string where = (dir / "tokenizer_config.json").string();
  if (it->is_string()) return it->get<std::string>();
  DSPARK_CHECK(it->is_array(), "{}: 'chat_template' must be a string or a list of {{name, template}}", where);
  const ordered_json* chosen = nullptr;
  for (const ordered_json& entry : *it) {
    DSPARK_CHECK(entry.is_object() && entry.contains("template") && entry["template"].is_string(),
                 "{}: every 'chat_template' entry needs a string 'template'", where);
    if (!chosen) chosen = &entry;
    if (entry.value("name", "") == "default") {
      chosen = &entry;
      break;
    }
  }
  if (!chosen) return std::nullopt;
  return (*chosen)["template"].get<std::string>();
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string name, ordered_json special_tokens)
    : source_(std::move(source)),
      template_(jinja::Template::parse(source_, std::move(name))),
      special_tokens_(std::move(special_tokens)) {}

std::optional<ChatTemplate> ChatTemplate::from_model_dir(const std::filesystem::path& dir) {
  const ordered_json config = tokenizer_config(dir);
  const std::filesystem::path file = dir / "chat_template.jinja";
  if (std::optional<std::string> text = read_file(file)) {
    return ChatTemplate(std::move(*text), file.string(), special_tokens(config));
  }
  if (std::optional<std::string> text = config_template(config, dir)) {
    return ChatTemplate(std::move(*text), (dir / "tokenizer_config.json").string() + " chat_template",
                        special_tokens(config));
  }
  return std::nullopt;
}

ChatTemplate ChatTemplate::from_file(const std::filesystem::path& file, const std::filesystem::path& model_dir) {
  std::optional<std::string> text = read_file(file);
  DSPARK_CHECK(text, "cannot read the chat template {}", file.string());
  return ChatTemplate(std::move(*text), file.string(), special_tokens(tokenizer_config(model_dir)));
}

std::string ChatTemplate::render(const ordered_json& messages, const ordered_json& tools,
                                 bool add_generation_prompt, const ordered_json& kwargs) const {
  // As Hugging Face: messages, tools, add_generation_prompt, the special tokens and the
  // caller's kwargs. A request without tools leaves `tools` undefined rather than None:
  // templates written for tool use iterate it unguarded (Hermes 3), and every template
  // tests it with `is defined` / `is not none` alike.
  ordered_json context = special_tokens_;
  if (kwargs.is_object()) {
    for (const auto& [key, value] : kwargs.items()) context[key] = value;
  }
  context["messages"] = messages;
  if (!tools.is_null()) context["tools"] = tools;
  context["add_generation_prompt"] = add_generation_prompt;
  return template_.render(context);
}

bool ChatTemplate::uses_hermes_tool_calls() const { return source_.find("<tool_call>") != std::string::npos; }

}  // namespace dspark
