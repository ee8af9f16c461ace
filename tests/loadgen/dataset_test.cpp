#include "loadgen/dataset.h"

#include <fstream>

#include <gtest/gtest.h>

#include "core/check.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

const std::filesystem::path kData = std::filesystem::path(DSPARK_SHARED_DIR) / "data";

TEST(Dataset, ReadsEveryShippedFormat) {
  const auto gsm = load_dataset(kData / "eval" / "gsm8k_test.jsonl", 3);
  ASSERT_EQ(gsm.size(), 3u);
  EXPECT_EQ(gsm[0].domain, "gsm8k");
  EXPECT_EQ(gsm[0].text.rfind("Question: ", 0), 0u);
  EXPECT_EQ(gsm[0].text.substr(gsm[0].text.size() - 8), "\nAnswer:");

  const auto he = load_dataset(kData / "eval" / "humaneval.jsonl");
  EXPECT_EQ(he.size(), 164u);
  EXPECT_EQ(he[0].id, "HumanEval/0");

  const auto mbpp = load_dataset(kData / "eval" / "mbpp.jsonl");
  EXPECT_EQ(mbpp.size(), 500u);  // the test split, task ids 11..510
  for (const auto& p : mbpp) {
    const int id = std::stoi(p.id);
    EXPECT_TRUE(id >= 11 && id <= 510) << id;
  }
  const auto mt = load_dataset(kData / "eval" / "mtbench_question.jsonl");
  EXPECT_EQ(mt.size(), 80u);
  EXPECT_EQ(mt[0].domain, "writing");
  EXPECT_EQ(load_dataset(kData / "heldout" / "math500_test.jsonl", 2)[1].domain, "math500");
  EXPECT_EQ(load_dataset(kData / "heldout" / "aime24.jsonl").size(), 30u);
}

TEST(Dataset, ErrorsNameFileAndLine) {
  const auto dir = testing::make_temp_dir("dataset");
  std::ofstream(dir / "bad.jsonl") << "{\"question\": \"q\", \"answer\": \"a\"}\n{not json\n";
  try {
    load_dataset(dir / "bad.jsonl");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "odd.jsonl") << "{\"foo\": 1}\n";
  EXPECT_THROW(load_dataset(dir / "odd.jsonl"), Error);
  EXPECT_THROW(load_dataset(dir / "missing.jsonl"), Error);
}

TEST(Conversations, ReadsMtBenchTurns) {
  const auto all = load_conversations(kData / "eval" / "mtbench_question.jsonl");
  ASSERT_EQ(all.size(), 80u);
  for (const Conversation& c : all) EXPECT_EQ(c.turns.size(), 2u) << c.id;
  EXPECT_EQ(all[0].domain, "writing");
  EXPECT_EQ(all[0].id, "81");
  EXPECT_EQ(all[0].turns[0].rfind("Compose an engaging travel blog post", 0), 0u);  // raw, not rendered
  EXPECT_EQ(all[0].turns[1], "Rewrite your previous response. Start every sentence with the letter A.");
  EXPECT_EQ(load_conversations(kData / "eval" / "mtbench_question.jsonl", 3).size(), 3u);
}

TEST(Conversations, DomainAndIdFallBackToFileAndLine) {
  const auto dir = testing::make_temp_dir("conversations");
  std::ofstream(dir / "chats_v1.jsonl") << "{\"turns\": [\"hi\"]}\n\n{\"turns\": [\"a\", \"b\", \"c\"]}\n";
  const auto c = load_conversations(dir / "chats_v1.jsonl");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].domain, "chats");
  EXPECT_EQ(c[0].id, "1");
  EXPECT_EQ(c[1].id, "3");
  EXPECT_EQ(c[1].turns, (std::vector<std::string>{"a", "b", "c"}));
}

// The error must name the file and the offending line, and say what is wrong.
void expect_error_at(const std::filesystem::path& path, const std::string& where, const std::string& what) {
  try {
    load_conversations(path);
    FAIL() << "expected an error for " << path;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Conversations, BadRecordsNameFileAndLine) {
  const auto dir = testing::make_temp_dir("conversations");
  const std::string good = "{\"question_id\": 1, \"turns\": [\"q\"]}\n";
  std::ofstream(dir / "malformed.jsonl") << good << "{\"turns\": [\"q\"\n";
  expect_error_at(dir / "malformed.jsonl", "malformed.jsonl:2", "malformed JSON");
  std::ofstream(dir / "no_turns.jsonl") << good << good << "{\"question\": \"q\", \"answer\": \"a\"}\n";
  expect_error_at(dir / "no_turns.jsonl", "no_turns.jsonl:3", "turns");
  std::ofstream(dir / "empty_turns.jsonl") << "{\"turns\": []}\n";
  expect_error_at(dir / "empty_turns.jsonl", "empty_turns.jsonl:1", "non-empty");
  std::ofstream(dir / "not_text.jsonl") << good << "{\"turns\": [\"q\", 7]}\n";
  expect_error_at(dir / "not_text.jsonl", "not_text.jsonl:2", "string");
  std::ofstream(dir / "array.jsonl") << "[1, 2]\n";
  expect_error_at(dir / "array.jsonl", "array.jsonl:1", "object");
  EXPECT_THROW(load_conversations(dir / "missing.jsonl"), Error);
}

}  // namespace
}  // namespace dspark
