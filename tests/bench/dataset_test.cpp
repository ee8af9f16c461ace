#include "bench/dataset.h"

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

}  // namespace
}  // namespace dspark
