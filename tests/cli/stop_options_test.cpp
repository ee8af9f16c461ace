// `dspark generate --stop-token-id / --min-tokens / --include-stop-str-in-output`, as a
// user types them, on stories260K with token 300 (" ha") forced by a +100 bias: a stop
// token ends the output before it, min_tokens holds it off for that many tokens, and a
// kept stop string ends the text; bad values are one clear line.
#include <string>

#include <gtest/gtest.h>

#include "support/command_run.h"

namespace dspark {
namespace {

const std::string kStories = std::string(DSPARK_SHARED_DIR) + "/data/models/stories260K-hf";

testing::CommandRun generate(const std::string& args, bool with_stderr = false) {
  return testing::run_command(std::string(DSPARK_CLI) + " generate --model " + kStories +
                              " --prompt Once --max-tokens 6 --temperature 0 --logit-bias 300=100 " + args +
                              (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

TEST(StopOptions, StopTokensMinTokensAndKeptStopStrings) {
  EXPECT_EQ(generate("").out, "ha ha ha ha ha ha\n");
  const testing::CommandRun stopped = generate("--stop-token-id 300", true);
  ASSERT_EQ(stopped.status, 0) << stopped.out;
  EXPECT_NE(stopped.out.find("generated 0 | finish stop"), std::string::npos) << stopped.out;
  const testing::CommandRun held_off = generate("--stop-token-id 300 --min-tokens 3", true);
  ASSERT_EQ(held_off.status, 0) << held_off.out;
  EXPECT_NE(held_off.out.find("generated 3 | finish stop"), std::string::npos) << held_off.out;
  EXPECT_EQ(held_off.out.find("ha"), std::string::npos) << held_off.out;
  EXPECT_EQ(generate("--stop 'ha ha' --include-stop-str-in-output").out, "ha ha\n");
  EXPECT_EQ(generate("--stop 'ha ha'").out, "\n");
}

TEST(StopOptions, BadValuesAreOneClearLine) {
  testing::expect_refused([](const std::string& args) { return generate(args, true); },
                          {
                              {"--min-tokens 7", "min_tokens must be in [0, max_tokens = 6], got 7"},
                              {"--min-tokens -1", "--min-tokens"},
                              {"--stop-token-id 99999", "stop_token_ids: token id 99999 is outside the vocabulary [0, 512)"},
                              {"--stop-token-id -3", "--stop-token-id"},
                          });
}

}  // namespace
}  // namespace dspark
