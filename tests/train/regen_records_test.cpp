// Regen data on disk: a corrupt line or record is skipped and counted, never fatal; a
// truncated last line (a killed writer) is ignored without being counted; the answer's
// sampling temperature round-trips and may be absent (older files); the held-out sequences a
// training run keeps span every file, not just the first.
#include "train/draft/regen_records.h"
#include "train/draft/regen_split.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

RegenRecord record(const std::string& id, std::vector<int32_t> prompt, std::vector<int32_t> completion) {
  RegenRecord r;
  r.id = id;
  r.source = "gsm8k";
  r.prompt_ids = std::move(prompt);
  r.completion_ids = std::move(completion);
  r.finish_reason = "length";
  return r;
}

TEST(RegenRecords, CorruptLinesAndOutOfVocabularyRecordsAreSkippedAndCounted) {
  const fs::path dir = fs::temp_directory_path() / ("dspark_regen_records_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream a(dir / "a.jsonl");
    a << regen_record_to_json(record("gsm8k:1", {3, 4}, {5, 6, 7})) << "\n";
    a << "{\"id\": \"gsm8k:2\", \"prompt_ids\": [3, 4], \"completion_ids\": [5,\n";  // cut mid-record
    a << "not json at all\n";
    a << "{\"id\": \"gsm8k:3\", \"prompt_ids\": \"three\", \"completion_ids\": []}\n";  // wrong field type
    a << regen_record_to_json(record("gsm8k:4", {3, 4}, {5, 100})) << "\n";           // id 100 >= vocab
    a << regen_record_to_json(record("gsm8k:5", {-1}, {5})) << "\n";                   // negative id
    a << regen_record_to_json(record("gsm8k:6", {9}, {8, 7})) << "\n";
    a << "{\"id\": \"gsm8k:7\", \"prompt_ids\": [1, 2";  // a killed writer's last line
    std::ofstream b(dir / "b.jsonl");
    b << regen_record_to_json(record("code:1", {1}, {2, 3})) << "\n";
    std::ofstream ignored(dir / "notes.txt");
    ignored << "not data\n";
  }
  RegenReadReport report;
  const std::vector<RegenRecord> records = read_regen_data(dir, 100, &report);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].id, "gsm8k:1");
  EXPECT_EQ(records[1].id, "gsm8k:6");
  EXPECT_EQ(records[2].id, "code:1");
  EXPECT_EQ(report.corrupt_lines, 3);
  EXPECT_EQ(report.out_of_vocab, 2);
  EXPECT_NE(report.first_problem.find("a.jsonl:2"), std::string::npos) << report.first_problem;
  EXPECT_NE(report.summary().find("skipped 3 corrupt line(s) and 2 record(s)"), std::string::npos);

  // Without a vocabulary only the corrupt lines go; resuming regen reads the same way.
  RegenReadReport no_vocab;
  EXPECT_EQ(read_regen_data(dir, 0, &no_vocab).size(), 5u);
  EXPECT_EQ(no_vocab.out_of_vocab, 0);
  EXPECT_EQ(read_regen_records(dir / "a.jsonl").size(), 4u);

  // Clean data reports nothing.
  RegenReadReport clean;
  EXPECT_EQ(read_regen_data(dir / "b.jsonl", 100, &clean).size(), 1u);
  EXPECT_EQ(clean.summary(), "");
  fs::remove_all(dir);
}

TEST(RegenRecords, TheAnswersTemperatureRoundTripsAndMayBeAbsent) {
  RegenRecord r = record("gsm8k:2", {3}, {4, 5});
  EXPECT_EQ(regen_record_from_json(regen_record_to_json(r), "x").temperature, -1.0f);  // not recorded
  EXPECT_EQ(regen_record_to_json(r).find("temperature"), std::string::npos);
  r.temperature = 0.0f;
  EXPECT_EQ(regen_record_from_json(regen_record_to_json(r), "x").temperature, 0.0f);
  r.temperature = 1.0f;
  EXPECT_EQ(regen_record_from_json(regen_record_to_json(r), "x").temperature, 1.0f);
  EXPECT_THROW(regen_record_from_json(R"({"id": "a", "prompt_ids": [1], "completion_ids": [2], "temperature": -1})",
                                      "x"),
               Error);
  EXPECT_THROW(regen_record_from_json(R"({"id": "a", "prompt_ids": [1], "completion_ids": [2], "temperature": "hot"})",
                                      "x"),
               Error);
}

TEST(RegenSplit, TheKeptHeldOutSequencesSpanEveryFileAndSource) {
  const fs::path dir = fs::temp_directory_path() / ("dspark_regen_split_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    // The same prompts answered twice, greedy then sampled, as `dspark-train regen` writes them.
    std::ofstream greedy(dir / "regen_greedy.jsonl"), sampled(dir / "regen_t1.jsonl");
    for (const std::string source : {"gsm8k", "mbpp"}) {
      for (int i = 0; i < 40; ++i) {
        RegenRecord r = record(source + ":" + std::to_string(i), {source == "mbpp" ? 1 : 0, i}, {3, 4, 5});
        r.source = source;
        r.temperature = 0.0f;
        greedy << regen_record_to_json(r) << "\n";
        r.temperature = 1.0f;
        sampled << regen_record_to_json(r) << "\n";
      }
    }
  }
  const RegenSplit all = split_regen_data(dir, RegenSplitOptions{0, -1, 0.5, 512, 1000}, "test");
  ASSERT_GE(all.val.size(), 8u);
  const RegenSplit s = split_regen_data(dir, RegenSplitOptions{0, -1, 0.5, 512, 8}, "test");
  ASSERT_EQ(s.val.size(), 8u);
  int sampled = 0;
  for (const DraftSequence& q : s.val) sampled += q.sampled ? 1 : 0;
  EXPECT_EQ(sampled, 4) << "half the held-out answers are sampled, so half the kept ones are";
  // Evenly spaced: the first kept is the first held-out, and the kept ones are a subset in order.
  EXPECT_EQ(s.val.front().tokens, all.val.front().tokens);
  EXPECT_FALSE(s.val.front().sampled);
  EXPECT_TRUE(s.val.back().sampled);
  int mbpp = 0;
  for (const DraftSequence& q : s.val) mbpp += q.tokens[0] == 1 ? 1 : 0;
  EXPECT_GE(mbpp, 2) << "both sources of both files are kept";
  EXPECT_LE(mbpp, 6) << "both sources of both files are kept";
  EXPECT_FALSE(s.train.empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dspark::train
