// dspark chat-template: prints what a model's chat template makes of a conversation,
// exactly (nothing added): the prompt text the server would tokenize for the same
// messages. Messages go through the server's own request parsing, so what is shown is what
// /v1/chat/completions renders.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/check.h"
#include "server/chat_format.h"
#include "server/openai_protocol.h"

namespace dspark::cli {
namespace {

struct ChatTemplateArgs {
  std::string model_dir;
  std::string messages_file;
  std::string tools_file;
  std::string chat_template_file;
  bool no_generation_prompt = false;
};

nlohmann::ordered_json read_json(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot read the {} file {}", what, path);
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    DSPARK_FAIL("{}: not valid JSON ({})", path, e.what());
  }
}

void run_chat_template(const ChatTemplateArgs& args) {
  const ChatFormat format = args.chat_template_file.empty()
                                ? ChatFormat::from_model_dir(args.model_dir)
                                : ChatFormat::from_template_file(args.chat_template_file, args.model_dir);
  // A list of messages, or an object holding "messages" (and possibly "tools").
  nlohmann::ordered_json body = read_json(args.messages_file, "messages");
  if (body.is_array()) body = {{"messages", std::move(body)}};
  DSPARK_CHECK(body.is_object(), "{}: expected a list of messages or an object with \"messages\"", args.messages_file);
  if (!args.tools_file.empty()) body["tools"] = read_json(args.tools_file, "tools");
  body["add_generation_prompt"] = !args.no_generation_prompt;
  ParsedRequest request;
  try {
    request = parse_request(body.dump(), Endpoint::kChat);
  } catch (const ApiError& e) {
    DSPARK_FAIL("{}", e.message());
  }
  const std::string text = format.render(request.chat);
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

void register_chat_template(CLI::App& app) {
  auto args = std::make_shared<ChatTemplateArgs>();
  CLI::App* cmd = app.add_subcommand("chat-template", "Print a model's chat template rendered for a conversation");
  cmd->add_option("--model", args->model_dir, "Model directory (its tokenizer_config.json or chat_template.jinja)")
      ->required();
  cmd->add_option("--messages", args->messages_file,
                  "JSON file: a list of OpenAI chat messages, or an object with \"messages\" (and \"tools\")")
      ->required();
  cmd->add_option("--tools", args->tools_file, "JSON file: a list of OpenAI tool definitions");
  cmd->add_option("--chat-template", args->chat_template_file, "Jinja file overriding the model's template");
  cmd->add_flag("--no-generation-prompt", args->no_generation_prompt,
                "End after the last message instead of where the assistant's reply begins");
  cmd->callback([args] { run_chat_template(*args); });
}

}  // namespace dspark::cli
