// The official OpenAI JavaScript client (npm "openai", installed by scripts/setup) against
// dspark's server: completions, chat, streaming, logprobs, penalties, n = 2, JSON mode (a
// clear refusal), a conversation with tools and tool results through a real template, and
// errors. The checks themselves are in openai_client_check.mjs; skipped without node or
// the package.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "server/test_server.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

TEST(OpenAiJavaScriptClient, EveryCallParsesIntoTheClientsTypes) {
  const fs::path root(DSPARK_SOURCE_DIR);
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";
  if (!fs::exists(root / "node_modules/openai/package.json")) GTEST_SKIP() << "npm package openai is not installed";
  testing::TestServerOptions o;
  o.max_running = 4;
  o.speculator = "ngram";
  o.chat_template = fs::path(DSPARK_SHARED_DIR) / "data/chat_templates/Qwen-Qwen2.5-7B-Instruct.jinja";
  o.chat_template_model_dir = testing::stories_dir();
  testing::TestServer server(o);
  const std::string command = "node " + (root / "tests/server/openai_client_check.mjs").string() + " " + server.url() +
                              "/v1 " + root.string() + " 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find(", 0 failing"), std::string::npos) << out;
  std::printf("%s", out.c_str());
}

}  // namespace
}  // namespace dspark
