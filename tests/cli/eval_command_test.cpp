// `dspark eval` as a user runs it, on models/tiny-target with its DSpark drafter: an eval
// file whose prompts fall in several domains (MT-bench's categories) gets a pooled row of
// its own, and that row is its domains' counts added up, not an average of their ratios.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/command_run.h"

namespace dspark {
namespace {

using testing::CommandRun;

CommandRun run_eval(const std::string& json_path) {
  const std::string data = std::string(DSPARK_SHARED_DIR) + "/data/eval/";
  const std::string command = std::string(DSPARK_CLI) + " eval --model " + DSPARK_SOURCE_DIR +
                              "/models/tiny-target --speculator " + DSPARK_SOURCE_DIR +
                              "/models/tiny-target-dspark --spec-schedule fixed --num-spec-tokens 8 "
                              "--max-tokens 24 --threads 2 --limit 13 --no-baseline --dataset " +
                              data + "gsm8k_test.jsonl --dataset " + data + "mtbench_question.jsonl --json " +
                              json_path + " 2>&1";
  return testing::run_command(command);
}

TEST(EvalCommand, PoolsTheDomainsOfAnEvalSet) {
  const std::string json_path =
      (std::filesystem::temp_directory_path() / ("dspark_eval_" + std::to_string(getpid()) + ".json")).string();
  const CommandRun run = run_eval(json_path);
  ASSERT_EQ(run.status, 0) << run.out;
  nlohmann::json table;
  std::ifstream(json_path) >> table;
  std::filesystem::remove(json_path);

  // The first 13 MT-bench prompts: 10 writing, 3 roleplay. GSM8K is one domain: no pooled row.
  ASSERT_EQ(table["pooled_datasets"].size(), 1u) << table.dump(1);
  const nlohmann::json& set = table["pooled_datasets"][0];
  EXPECT_EQ(set["dataset"], "mtbench_question");
  EXPECT_EQ(set["domains"], nlohmann::json::array({"writing", "roleplay"}));
  EXPECT_EQ(set["prompts"], 13);

  int64_t drafts = 0, draft_tokens = 0, accepted = 0;
  std::vector<int64_t> rounds(8), survived(8);
  for (const nlohmann::json& domain : table["domains"]) {
    if (domain["domain"] == "gsm8k") continue;
    drafts += domain["num_drafts"].get<int64_t>();
    draft_tokens += domain["num_draft_tokens"].get<int64_t>();
    accepted += domain["num_accepted_tokens"].get<int64_t>();
    for (size_t j = 0; j < 8; ++j) {
      const int64_t n = domain["calibration"]["rounds"][j].get<int64_t>();
      rounds[j] += n;
      survived[j] += std::llround(n * domain["calibration"]["observed_survival"][j].get<double>());
    }
  }
  ASSERT_GT(drafts, 0);
  EXPECT_EQ(set["num_drafts"], drafts);
  EXPECT_EQ(set["num_draft_tokens"], draft_tokens);
  EXPECT_EQ(set["num_accepted_tokens"], accepted);
  EXPECT_DOUBLE_EQ(set["tau"].get<double>(), 1.0 + static_cast<double>(accepted) / static_cast<double>(drafts));
  for (size_t j = 0; j < 8; ++j) {
    EXPECT_EQ(set["calibration"]["rounds"][j], rounds[j]) << "position " << j;
    if (rounds[j] > 0) {
      EXPECT_NEAR(set["calibration"]["observed_survival"][j].get<double>(),
                  static_cast<double>(survived[j]) / static_cast<double>(rounds[j]), 1e-12)
          << "position " << j;
    }
  }

  // The text table names the pooled set, in the τ table and in the calibration table.
  EXPECT_NE(run.out.find("eval sets of several domains, pooled\nmtbench_question"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\nmtbench_question "), run.out.rfind("\nmtbench_question ")) << run.out;
}

}  // namespace
}  // namespace dspark
