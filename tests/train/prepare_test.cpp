// Corpus preparation on a small fake shared dir: documents of every source, MBPP limited
// to its training split, deterministic validation split, and shards whose decoded
// documents equal the inputs. Also checks the real MBPP file never yields evaluation tasks.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/bpe_model.h"
#include "data/corpus_sources.h"
#include "data/prepare.h"
#include "data/subprocess.h"
#include "data/token_shards.h"
#include "tokenizer/tokenizer.h"

namespace dspark::train {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
}

std::string mbpp_line(int task_id, const std::string& text, const std::string& code) {
  nlohmann::json j;
  j["text"] = text;
  j["code"] = code;
  j["task_id"] = task_id;
  j["test_list"] = {"assert f() == 1"};
  return j.dump() + "\n";
}

// data/corpus and data/eval with a handful of documents each.
class FakeSharedDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path data = root_.path() / "data";
    std::string gsm;
    for (int i = 0; i < 6; ++i) {
      nlohmann::json j;
      j["question"] = "Tom has " + std::to_string(10 + i) + " apples and eats 3. How many are left?";
      j["answer"] = "Tom has " + std::to_string(10 + i) + " - 3 = <<" + std::to_string(10 + i) +
                    "-3=" + std::to_string(7 + i) + ">>" + std::to_string(7 + i) + " left.\n#### " +
                    std::to_string(7 + i);
      gsm += j.dump() + "\n";
    }
    write_file(data / "corpus" / "gsm8k_train.jsonl", gsm);

    std::string play;
    for (int i = 0; i < 12; ++i)
      play += "SPEAKER " + std::to_string(i) + ":\nA line of verse, and then another line.\n\n";
    write_file(data / "corpus" / "tinyshakespeare.txt", play);

    const fs::path src = root_.path() / "stdlib_src";
    write_file(src / "zeta.py", "def zeta():\n    return 'z'\n");
    write_file(src / "alpha.py", "import os\n\n\nclass Alpha:\n    pass\n");
    write_file(src / "pkg" / "__init__.py", "");
    write_file(src / "pkg" / "mod.py", "# -*- coding: utf-8 -*-\nname = 'café'\n");
    write_file(src / "LICENSE.txt", "not python\n");
    fs::create_directories(data / "corpus");
    run_process({"tar", "-cJf", (data / "corpus" / "python_stdlib.tar.xz").string(), "-C",
                 src.string(), "zeta.py", "alpha.py", "pkg", "LICENSE.txt"});

    std::string mbpp;
    mbpp += mbpp_line(3, "Few-shot task.", "def few():\r\n  return 3");
    mbpp += mbpp_line(11, "Test task eleven.", "def test11():\r\n  return 11");
    mbpp += mbpp_line(510, "Test task 510.", "def test510():\r\n  return 510");
    mbpp += mbpp_line(511, "Validation task 511.", "def val511():\r\n  return 511");
    mbpp += mbpp_line(600, "Validation task 600.", "def val600():\r\n  return 600");
    mbpp += mbpp_line(974, "Train task 974.", "def train974():\r\n  return 974\r\n");
    mbpp += mbpp_line(601, "Train task 601.", "def train601(x):\r\n  return x");
    mbpp += mbpp_line(700, "Train task 700.", "def train700():\n  return 700");
    write_file(data / "eval" / "mbpp.jsonl", mbpp);
  }

  CorpusOptions corpus() const { return CorpusOptions{root_.path(), 100, {}}; }

  TempDir root_{"dspark-prepare-test"};
};

// Splits concatenated shard tokens at eos_id into documents.
std::vector<std::vector<int32_t>> split_at_eos(const std::vector<int32_t>& tokens, int32_t eos) {
  std::vector<std::vector<int32_t>> docs;
  std::vector<int32_t> cur;
  for (const int32_t t : tokens) {
    if (t == eos) {
      docs.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(t);
    }
  }
  EXPECT_TRUE(cur.empty()) << "shard does not end with eos";
  return docs;
}

TEST(CorpusSources, MbppTrainingSplitOnly) {
  EXPECT_FALSE(is_mbpp_training_task(1));
  EXPECT_FALSE(is_mbpp_training_task(11));
  EXPECT_FALSE(is_mbpp_training_task(510));
  EXPECT_FALSE(is_mbpp_training_task(600));
  EXPECT_TRUE(is_mbpp_training_task(601));
  EXPECT_TRUE(is_mbpp_training_task(974));
  EXPECT_FALSE(is_mbpp_training_task(975));
}

TEST(CorpusSources, RealMbppFileYieldsOnlyTasks601To974) {
  const fs::path mbpp = fs::path(DSPARK_SHARED_DIR) / "data" / "eval" / "mbpp.jsonl";
  if (!fs::exists(mbpp)) GTEST_SKIP() << mbpp << " not present";
  const auto docs = mbpp_training_documents(mbpp);
  EXPECT_EQ(docs.size(), 374u);
  std::set<std::string> train_docs(docs.begin(), docs.end());
  std::ifstream in(mbpp);
  std::string line;
  int64_t eval_tasks = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const auto id = j["task_id"].get<int64_t>();
    const std::string head = "# " + j["text"].get<std::string>() + "\n";
    const bool found = std::any_of(docs.begin(), docs.end(), [&](const std::string& d) {
      return d.compare(0, head.size(), head) == 0;
    });
    if (id >= 601 && id <= 974) {
      EXPECT_TRUE(found) << "training task " << id << " missing";
    } else {
      ++eval_tasks;
      // MBPP has a few duplicated descriptions across splits; the code must differ then.
      if (found) {
        std::string code = j["code"].get<std::string>();
        code.erase(std::remove(code.begin(), code.end(), '\r'), code.end());
        if (code.empty() || code.back() != '\n') code.push_back('\n');
        EXPECT_EQ(train_docs.count(head + code), 0u) << "evaluation task " << id << " used";
      }
    }
  }
  EXPECT_EQ(eval_tasks, 600);
}

TEST(CorpusSources, SplitDocumentsIsDeterministicAndDisjoint) {
  const auto a = split_documents(1000, 0.02, "code");
  const auto b = split_documents(1000, 0.02, "code");
  EXPECT_EQ(a.val, b.val);
  EXPECT_EQ(a.val.size(), 20u);
  EXPECT_EQ(a.train.size(), 980u);
  std::vector<int64_t> all = a.train;
  all.insert(all.end(), a.val.begin(), a.val.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(all[i], i);
  EXPECT_NE(split_documents(1000, 0.02, "prose").val, a.val);  // per-source choice
  EXPECT_EQ(split_documents(5, 0.02, "x").val.size(), 1u);     // at least one held out
  EXPECT_EQ(split_documents(1, 0.02, "x").val.size(), 0u);
  EXPECT_EQ(split_documents(50, 0.0, "x").val.size(), 0u);
}

TEST(CorpusSources, ProseSplitsAtBlankLines) {
  const std::string text = "A:\none\n\nB:\ntwo\n\n\nC:\nthree\n\nD:\nfour\n";
  const auto docs = split_prose(text, 12);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], "A:\none\n\nB:\ntwo\n");
  EXPECT_EQ(docs[1], "C:\nthree\n\nD:\nfour\n");
  EXPECT_EQ(split_prose(text, 1).size(), 4u);
}

TEST_F(FakeSharedDir, SourcesHaveTheExpectedDocuments) {
  const auto gsm = load_source_documents("gsm8k", corpus());
  ASSERT_EQ(gsm.size(), 6u);
  EXPECT_EQ(gsm[0], "Question: Tom has 10 apples and eats 3. How many are left?\n"
                    "Answer: Tom has 10 - 3 = <<10-3=7>>7 left.\n#### 7");
  const auto code = load_source_documents("code", corpus());
  const std::vector<std::string> expected_code = {
      "import os\n\n\nclass Alpha:\n    pass\n",               // alpha.py
      "# -*- coding: utf-8 -*-\nname = 'café'\n",                // pkg/mod.py (empty __init__ skipped)
      "def zeta():\n    return 'z'\n",                         // zeta.py
      "# Train task 601.\ndef train601(x):\n  return x\n",      // MBPP in task order, LF only
      "# Train task 700.\ndef train700():\n  return 700\n",
      "# Train task 974.\ndef train974():\n  return 974\n"};
  EXPECT_EQ(code, expected_code);
  const auto prose = load_source_documents("prose", corpus());
  EXPECT_GE(prose.size(), 3u);
  EXPECT_THROW(load_source_documents("poetry", corpus()), Error);
}

TEST_F(FakeSharedDir, PreparedShardsDecodeToTheDocuments) {
  const fs::path tok_dir = root_.path() / "tokenizer";
  BpeTrainerOptions trainer;
  trainer.vocab_size = 400;
  BpeTrainStats stats;
  write_tokenizer_files(train_corpus_tokenizer(corpus(), kCorpusSources, 0.2, trainer, &stats), tok_dir);
  EXPECT_GT(stats.num_documents, 10);
  const Tokenizer tok = Tokenizer::from_dir(tok_dir);

  PrepareOptions options;
  options.corpus = corpus();
  options.val_fraction = 0.2;
  options.tokenizer_dir = tok_dir;
  options.out_dir = root_.path() / "shards";
  const auto prepared = prepare_corpus(options, engine_corpus_encoder(tok));
  ASSERT_EQ(prepared.size(), 3u);

  const TokenShards shards(options.out_dir);
  EXPECT_EQ(shards.vocab_size(), tok.vocab_size());
  EXPECT_EQ(shards.eos_id(), 0);
  EXPECT_EQ(shards.pad_id(), 1);
  EXPECT_EQ(shards.mask_id(), 2);
  EXPECT_EQ(fs::path(shards.tokenizer_dir()), fs::absolute(tok_dir).lexically_normal());
  ASSERT_EQ(shards.num_sources(), 3u);
  std::string all_text;
  for (const auto& name : kCorpusSources) {
    const size_t i = shards.index_of(name);
    const auto docs = load_source_documents(name, corpus());
    const auto split = split_documents(static_cast<int64_t>(docs.size()), 0.2, name);
    EXPECT_FALSE(split.val.empty());
    EXPECT_EQ(shards.sources()[i].documents, static_cast<int64_t>(docs.size()));
    EXPECT_EQ(static_cast<int64_t>(shards.train(i).size()), prepared[i].train_tokens);
    for (const auto& [indices, tokens] : {std::pair{split.train, shards.train(i)},
                                          std::pair{split.val, shards.val(i)}}) {
      const auto decoded = split_at_eos(tokens, shards.eos_id());
      ASSERT_EQ(decoded.size(), indices.size()) << name;
      for (size_t k = 0; k < indices.size(); ++k) {
        const std::string text = tok.decode(decoded[k]);
        EXPECT_EQ(text, docs[indices[k]]) << name << " document " << indices[k];
        all_text += text;
      }
    }
  }
  for (const char* banned : {"Few-shot", "eleven", "510", "511", "600"})
    EXPECT_EQ(all_text.find(banned), std::string::npos) << banned;
  for (const char* wanted : {"train601", "train700", "train974", "Alpha", "café", "SPEAKER 11"})
    EXPECT_NE(all_text.find(wanted), std::string::npos) << wanted;
  EXPECT_THROW(shards.index_of("poetry"), Error);
}

TEST_F(FakeSharedDir, ShardReaderRejectsTruncatedFiles) {
  PrepareOptions options;
  options.corpus = corpus();
  options.sources = {"gsm8k"};
  options.out_dir = root_.path() / "shards";
  CorpusEncoder bytes_encoder;  // one token per byte, enough to exercise the file format
  bytes_encoder.vocab_size = 259;
  bytes_encoder.eos_id = 0;
  bytes_encoder.pad_id = 1;
  bytes_encoder.mask_id = 2;
  bytes_encoder.encode = [](std::string_view s) {
    std::vector<int32_t> ids;
    for (const char c : s) ids.push_back(3 + static_cast<uint8_t>(c));
    return ids;
  };
  prepare_corpus(options, bytes_encoder);
  EXPECT_NO_THROW(TokenShards{options.out_dir});
  fs::resize_file(options.out_dir / "gsm8k.train.bin", 6);
  EXPECT_THROW(TokenShards{options.out_dir}, Error);
  // A reader that can do without the source leaves it out and says why.
  const TokenShards lenient(options.out_dir, ShardErrors::kSkipSource);
  EXPECT_EQ(lenient.num_sources(), 0u);
  ASSERT_EQ(lenient.skipped().size(), 1u);
  EXPECT_EQ(lenient.skipped()[0].name, "gsm8k");
  EXPECT_NE(lenient.skipped()[0].reason.find("gsm8k.train.bin: 6 bytes"), std::string::npos)
      << lenient.skipped()[0].reason;
  EXPECT_TRUE(lenient.was_skipped("gsm8k"));
  EXPECT_FALSE(lenient.was_skipped("code"));
  EXPECT_THROW(lenient.index_of("gsm8k"), Error);
}

}  // namespace
}  // namespace dspark::train
