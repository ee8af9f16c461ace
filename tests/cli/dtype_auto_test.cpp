// `--dtype auto` (the default) follows the checkpoint's torch_dtype, as a user sees it on
// the command line: a float32 checkpoint computes in f32, a bfloat16 one in bf16, and an
// explicit --dtype wins. `--kv-dtype auto` (the default) then follows the compute dtype.
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "support/command_run.h"

namespace dspark {
namespace {

// The field of `dspark generate ... 2>&1`'s stderr report line that starts with `field`
// ("| dtype ", "| kv "), up to the next " |".
std::string report_field(const std::string& args, const std::string& field) {
  const std::string command = std::string(DSPARK_CLI) + " generate --prompt Once --max-tokens 2 " + args + " 2>&1";
  const testing::CommandRun run = testing::run_command(command);
  EXPECT_EQ(run.status, 0) << run.out;
  const std::string& out = run.out;
  const size_t at = out.find(field);
  return at == std::string::npos ? out : out.substr(at, out.find(" |", at + 2) - at);
}
std::string dtype_line(const std::string& args) { return report_field(args, "| dtype "); }
std::string kv_line(const std::string& args) { return report_field(args, "| kv "); }

const std::string kStories = std::string(DSPARK_SHARED_DIR) + "/data/models/stories260K-hf";  // float32
const std::string kTinyTarget = std::string(DSPARK_SOURCE_DIR) + "/models/tiny-target";       // bfloat16

TEST(DtypeAuto, FollowsTheCheckpoint) {
  EXPECT_EQ(dtype_line("--model " + kStories), "| dtype f32");
  EXPECT_EQ(dtype_line("--model " + kTinyTarget), "| dtype bf16");
  EXPECT_EQ(dtype_line("--model " + kStories + " --dtype bf16"), "| dtype bf16");
  EXPECT_EQ(dtype_line("--model " + kTinyTarget + " --dtype auto"), "| dtype bf16");
}

TEST(KvDtypeAuto, FollowsTheComputeDtype) {
  EXPECT_EQ(kv_line("--model " + kStories), "| kv f32");
  EXPECT_EQ(kv_line("--model " + kTinyTarget), "| kv bf16");
  EXPECT_EQ(kv_line("--model " + kTinyTarget + " --quantization int8"), "| kv bf16");
  EXPECT_EQ(kv_line("--model " + kTinyTarget + " --dtype f32"), "| kv f32");
  EXPECT_EQ(kv_line("--model " + kStories + " --dtype bfloat16"), "| kv bf16");
  EXPECT_EQ(kv_line("--model " + kTinyTarget + " --kv-dtype f32"), "| kv f32");
  EXPECT_EQ(kv_line("--model " + kStories + " --kv-dtype bf16"), "| kv bf16");
}

}  // namespace
}  // namespace dspark
