// `dspark generate --logit-bias ID=BIAS`, as a user types it: a +100 bias forces its token
// under greedy decoding, entries that do not parse or repeat a token are refused by the
// command line, and a bias outside [-100, 100] or a token past the vocabulary by the
// request's validation, each with one clear line.
#include <string>

#include <gtest/gtest.h>

#include "support/command_run.h"

namespace dspark {
namespace {

const std::string kStories = std::string(DSPARK_SHARED_DIR) + "/data/models/stories260K-hf";

testing::CommandRun generate(const std::string& args, bool with_stderr) {
  return testing::run_command(std::string(DSPARK_CLI) + " generate --model " + kStories +
                              " --prompt Once --max-tokens 6 --temperature 0 " + args +
                              (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

TEST(LogitBiasOption, ABiasReachesTheSampling) {
  const testing::CommandRun plain = generate("", false);
  ASSERT_EQ(plain.status, 0) << plain.out;
  // Token 300 of stories260K is " ha" ("ha" after the first): forced six times.
  const testing::CommandRun forced = generate("--logit-bias 300=100", false);
  ASSERT_EQ(forced.status, 0) << forced.out;
  EXPECT_NE(forced.out, plain.out);
  EXPECT_EQ(forced.out.substr(0, 17), "ha ha ha ha ha ha") << forced.out;
  // Two entries, given in either order, are the same request.
  EXPECT_EQ(generate("--logit-bias 300=100 --logit-bias 7=-100", false).out,
            generate("--logit-bias 7=-100 --logit-bias 300=100", false).out);
}

TEST(LogitBiasOption, BadEntriesAreOneClearLine) {
  testing::expect_refused([](const std::string& args) { return generate(args, true); },
                          {
                              {"--logit-bias x=1", "--logit-bias: expected TOKEN_ID=BIAS, got 'x=1'"},
                              {"--logit-bias 5", "--logit-bias: expected TOKEN_ID=BIAS, got '5'"},
                              {"--logit-bias 5=", "--logit-bias: expected TOKEN_ID=BIAS, got '5='"},
                              {"--logit-bias -5=1", "--logit-bias: expected TOKEN_ID=BIAS, got '-5=1'"},
                              {"--logit-bias 5=1 --logit-bias 5=2", "--logit-bias: token 5 given twice"},
                              {"--logit-bias 5=200", "logit_bias of token 5 must be in [-100, 100], got 200"},
                              {"--logit-bias 99999=1", "logit_bias token id 99999 is outside the vocabulary [0, 512)"},
                          });
}

}  // namespace
}  // namespace dspark
