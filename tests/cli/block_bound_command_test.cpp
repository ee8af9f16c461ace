// `dspark block-bound` as a user runs it, on models/tiny-target and two GSM8K prompts: the
// table it prints holds bounds in range, and a temperature near zero, where every sampled
// continuation is the same path, leaves a block drafter nothing to lose.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/command_run.h"

namespace dspark {
namespace {

using testing::CommandRun;

CommandRun block_bound(const std::string& args) {
  const std::string command = std::string(DSPARK_CLI) + " block-bound --model " + DSPARK_SOURCE_DIR +
                              "/models/tiny-target --dataset " + DSPARK_SHARED_DIR +
                              "/data/eval/gsm8k_test.jsonl --limit 2 --max-tokens 40 --threads 2 " + args + " 2>&1";
  return testing::run_command(command);
}

// The gsm8k row: prompts, anchors, H(p1), tau marginal, 8 survivals, tau first order, 8 survivals.
std::vector<double> gsm8k_row(const std::string& out) {
  const size_t at = out.find("\ngsm8k ");
  std::vector<double> row;
  if (at == std::string::npos) return row;
  std::istringstream line(out.substr(at + 7, out.find('\n', at + 1) - at - 7));
  for (double v; line >> v;) row.push_back(v);
  return row;
}

TEST(BlockBoundCommand, PrintsBoundsInRange) {
  // An anchor at every answer token: prefixes of every length modulo the KV block size
  // (the continuations share the prefix's full blocks and recompute the rest).
  const CommandRun run = block_bound("--samples 16 --temperature 1 --stride 1");
  ASSERT_EQ(run.status, 0) << run.out;
  const std::vector<double> row = gsm8k_row(run.out);
  ASSERT_EQ(row.size(), 4u + 8 + 1 + 8) << run.out;
  EXPECT_EQ(row[0], 2);
  EXPECT_GT(row[1], 0);  // anchors
  EXPECT_GT(row[2], 0.0);  // the target's entropy at temperature 1
  const double tau_marginal = row[3], tau_first_order = row[12];
  EXPECT_DOUBLE_EQ(row[4], 1.0);  // the first draft: every continuation starts from one prefix
  EXPECT_DOUBLE_EQ(row[13], 1.0);
  EXPECT_GE(tau_marginal, 1.0);
  EXPECT_LE(tau_marginal, tau_first_order + 1e-9);  // knowing the previous draft never hurts
  EXPECT_LE(tau_first_order, 9.0);
  for (int j = 1; j < 8; ++j) EXPECT_LE(row[4 + j], row[3 + j] + 1e-9) << "survival grows at position " << j + 1;
}

TEST(BlockBoundCommand, NearGreedyTheBlockLosesNothing) {
  const CommandRun run = block_bound("--samples 8 --temperature 0.02");
  ASSERT_EQ(run.status, 0) << run.out;
  const std::vector<double> row = gsm8k_row(run.out);
  ASSERT_EQ(row.size(), 21u) << run.out;
  EXPECT_GT(row[3], 8.5) << run.out;  // tau of a marginal block drafter: all 8 drafts survive
}

TEST(BlockBoundCommand, RefusesGreedy) {
  const CommandRun run = block_bound("--temperature 0");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.out.find("--temperature must be > 0"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace dspark
