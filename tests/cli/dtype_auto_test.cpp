// `--dtype auto` (the default) follows the checkpoint's torch_dtype, as a user sees it on
// the command line: a float32 checkpoint computes in f32, a bfloat16 one in bf16, and an
// explicit --dtype wins.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace dspark {
namespace {

// The stderr report line of `dspark generate ... 2>&1` that names the dtype.
std::string dtype_line(const std::string& args) {
  const std::string command = std::string(DSPARK_CLI) + " generate --prompt Once --max-tokens 2 " + args + " 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << out;
  const size_t at = out.find("| dtype ");
  return at == std::string::npos ? out : out.substr(at, out.find(" |", at + 2) - at);
}

const std::string kStories = std::string(DSPARK_SHARED_DIR) + "/data/models/stories260K-hf";  // float32
const std::string kTinyTarget = std::string(DSPARK_SOURCE_DIR) + "/models/tiny-target";       // bfloat16

TEST(DtypeAuto, FollowsTheCheckpoint) {
  EXPECT_EQ(dtype_line("--model " + kStories), "| dtype f32");
  EXPECT_EQ(dtype_line("--model " + kTinyTarget), "| dtype bf16");
  EXPECT_EQ(dtype_line("--model " + kStories + " --dtype bf16"), "| dtype bf16");
  EXPECT_EQ(dtype_line("--model " + kTinyTarget + " --dtype auto"), "| dtype bf16");
}

}  // namespace
}  // namespace dspark
