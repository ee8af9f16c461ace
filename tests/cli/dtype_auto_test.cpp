// `--dtype auto` (the default) follows the checkpoint's torch_dtype, as a user sees it on
// the command line: a float32 checkpoint computes in f32, a bfloat16 one in bf16, and an
// explicit --dtype wins. `--kv-dtype auto` (the default) then follows the compute dtype.
// `--quantization auto` and `--draft-quantization auto` (the defaults) follow the model's
// and the drafter's config.json "quantization" key.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
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

// The "(... weights)" of the line that starts with `prefix` ("kernels: " for the target,
// "drafter: " for the drafter) in `dspark generate ... 2>&1`'s output.
std::string weights_of(const std::string& args, const std::string& prefix) {
  const std::string command = std::string(DSPARK_CLI) + " generate --prompt Once --max-tokens 2 " + args + " 2>&1";
  const testing::CommandRun run = testing::run_command(command);
  EXPECT_EQ(run.status, 0) << run.out;
  const size_t line = run.out.find(prefix);
  if (line == std::string::npos) return run.out;
  const size_t end = run.out.find(" weights)", line);
  if (end == std::string::npos) return run.out;
  const size_t open = run.out.rfind('(', end);
  return run.out.substr(open, end + 9 - open);
}

// A copy of model_dir (its files linked) whose config.json says "quantization": value (in
// place of the value it had).
std::string with_quantization_key(const std::string& model_dir, const std::string& name, const std::string& value) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dspark-quantization-auto-" + name + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    const fs::path name = entry.path().filename();
    if (name != "config.json") fs::create_symlink(fs::absolute(entry.path()), dir / name);
  }
  std::stringstream config;
  config << std::ifstream(fs::path(model_dir) / "config.json").rdbuf();
  const std::string key = "\"quantization\": \"" + value + "\"";
  const std::regex existing(R"("quantization"\s*:\s*"[^"]*")");
  std::string text = config.str();
  if (std::regex_search(text, existing)) {
    text = std::regex_replace(text, existing, key);
  } else {
    text.insert(text.find('{') + 1, key + ", ");
  }
  std::ofstream(dir / "config.json") << text;
  return dir.string();
}

TEST(QuantizationAuto, FollowsTheConfigsKey) {
  const std::string int8_stories = with_quantization_key(kStories, "stories", "int8");
  EXPECT_EQ(weights_of("--model " + kStories, "kernels: "), "(f32 weights)");
  EXPECT_EQ(weights_of("--model " + int8_stories, "kernels: "), "(int8 weights)");
  EXPECT_EQ(weights_of("--model " + int8_stories + " --quantization none", "kernels: "), "(f32 weights)");
  EXPECT_EQ(weights_of("--model " + int8_stories + " --quantization auto", "kernels: "), "(int8 weights)");
  EXPECT_EQ(weights_of("--model " + int8_stories + " --quantization int4", "kernels: "), "(int4 weights)");
  EXPECT_EQ(weights_of("--model " + with_quantization_key(kStories, "stories4", "int4"), "kernels: "),
            "(int4 weights)");
  // A drafter that ships int8 at load, for the bf16 target.
  const std::string drafter = std::string(DSPARK_SOURCE_DIR) + "/models/tiny-target-dspark";
  const std::string int8_drafter = with_quantization_key(drafter, "drafter", "int8");
  const std::string none_drafter = with_quantization_key(drafter, "drafter-none", "none");
  const std::string target = "--model " + kTinyTarget + " --speculator ";
  EXPECT_EQ(weights_of(target + drafter, "drafter: "), "(int8 weights)");  // the shipped drafter's config says so
  EXPECT_EQ(weights_of(target + int8_drafter, "drafter: "), "(int8 weights)");
  EXPECT_EQ(weights_of(target + int8_drafter + " --draft-quantization none", "drafter: "), "(bf16 weights)");
  EXPECT_EQ(weights_of(target + none_drafter, "drafter: "), "(bf16 weights)");
  EXPECT_EQ(weights_of(target + none_drafter + " --quantization int8", "drafter: "), "(bf16 weights)");
  EXPECT_EQ(weights_of(target + none_drafter + " --draft-quantization int8", "drafter: "), "(int8 weights)");
  EXPECT_EQ(weights_of(target + none_drafter + " --draft-quantization int4", "drafter: "), "(int4 weights)");
  // A value the loader does not know is a one-line error naming the file.
  const testing::CommandRun bad = testing::run_command(std::string(DSPARK_CLI) + " generate --prompt Once --model " +
                                                       with_quantization_key(kStories, "bad", "int2") + " 2>&1");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("config.json: field 'quantization' must be \"none\", \"int8\" or \"int4\""), std::string::npos)
      << bad.out;
}

}  // namespace
}  // namespace dspark
