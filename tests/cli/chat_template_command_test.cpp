// `dspark chat-template` prints exactly what Jinja2 renders, for each of the 70 reference
// cases of real models' templates (../shared/data/chat_templates): the binary is run as a
// user runs it, with the case's conversation in a file and its special tokens in the
// model directory's tokenizer_config.json.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/tiny_models.h"

namespace dspark {
namespace {

using nlohmann::ordered_json;

const std::filesystem::path kTemplates = std::filesystem::path(DSPARK_SHARED_DIR) / "data/chat_templates";

struct CliRun {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

CliRun run(const std::string& args, const std::filesystem::path& scratch) {
  const std::filesystem::path err_file = scratch / "stderr.txt";
  const std::string command = std::string(DSPARK_CLI) + " " + args + " 2>" + err_file.string();
  CliRun r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  std::ostringstream text;
  text << in.rdbuf();
  r.err = text.str();
  return r;
}

TEST(ChatTemplateCommand, PrintsEveryReferenceRenderingExactly) {
  std::ifstream in(kTemplates / "cases.jsonl");
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const ordered_json c = ordered_json::parse(line);
    const ordered_json& ctx = c["context"];
    const std::string label = c["template"].get<std::string>() + " / " + c["conversation"].get<std::string>();
    const auto dir = testing::make_temp_dir("chat-template-command");
    std::ofstream(dir / "tokenizer_config.json")
        << ordered_json{{"bos_token", ctx["bos_token"]}, {"eos_token", ctx["eos_token"]}}.dump();
    ordered_json conversation = {{"messages", ctx["messages"]},
                                 {"chat_template_kwargs", {{"date_string", ctx["date_string"]}}}};
    std::ofstream(dir / "messages.json") << conversation.dump();
    std::string args = "chat-template --model " + dir.string() + " --messages " + (dir / "messages.json").string() +
                       " --chat-template " + (kTemplates / c["template"].get<std::string>()).string();
    if (ctx.contains("tools")) {
      std::ofstream(dir / "tools.json") << ctx["tools"].dump();
      args += " --tools " + (dir / "tools.json").string();
    }
    if (!ctx["add_generation_prompt"].get<bool>()) args += " --no-generation-prompt";
    const CliRun r = run(args, dir);
    if (c.contains("expected_error")) {
      EXPECT_EQ(r.exit_code, 1) << label;
      EXPECT_NE(r.err.find(c["expected_error"].get<std::string>()), std::string::npos) << label << ": " << r.err;
    } else {
      EXPECT_EQ(r.exit_code, 0) << label << ": " << r.err;
      EXPECT_EQ(r.out, c["expected"].get<std::string>()) << label;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 70);
}

TEST(ChatTemplateCommand, ClearErrorsForBadFiles) {
  const auto dir = testing::make_temp_dir("chat-template-command-errors");
  std::ofstream(dir / "messages.json") << "[{\"role\": \"user\", \"content\": \"hi\"}]";
  std::ofstream(dir / "broken.json") << "[{\"role\": ";
  std::ofstream(dir / "bad.jinja") << "ok\n{% for %}\n";
  // No template in the model: the simple format.
  CliRun r = run("chat-template --model " + dir.string() + " --messages " + (dir / "messages.json").string(), dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "User: hi\nAssistant:");
  r = run("chat-template --model " + dir.string() + " --messages " + (dir / "broken.json").string(), dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  r = run("chat-template --model " + dir.string() + " --messages " + (dir / "messages.json").string() +
              " --chat-template " + (dir / "bad.jinja").string(),
          dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.jinja:2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dspark
