// Reference fixtures: every case of shared/data/tokenizers/{gpt-2,llama-spm}/cases.jsonl
// (ids produced by Hugging Face tokenizers with add_special_tokens=False) must encode to
// exactly those ids and decode back to the text; the stories260K model directory must
// load with its BOS/EOS configuration.
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace dspark {
namespace {

const std::string kTokenizers = DSPARK_SHARED_DIR "/data/tokenizers/";

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<Case> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    cases.push_back({j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>()});
  }
  return cases;
}

void check_cases(const std::string& name, size_t expected_count) {
  const Tokenizer tok = Tokenizer::from_file(kTokenizers + name + "/tokenizer.json");
  const auto cases = read_cases(kTokenizers + name + "/cases.jsonl");
  ASSERT_EQ(cases.size(), expected_count);
  int num_encode_ok = 0, num_decode_ok = 0;
  for (const Case& c : cases) {
    const auto ids = tok.encode(c.text, /*add_special_tokens=*/false);
    EXPECT_EQ(ids, c.ids) << name << " text: '" << c.text << "'";
    num_encode_ok += ids == c.ids;
    const std::string text = tok.decode(c.ids);
    EXPECT_EQ(text, c.text) << name;
    num_decode_ok += text == c.text;
  }
  EXPECT_EQ(num_encode_ok, static_cast<int>(expected_count));
  EXPECT_EQ(num_decode_ok, static_cast<int>(expected_count));
}

TEST(TokenizerReference, Gpt2CasesEncodeAndDecodeExactly) { check_cases("gpt-2", 46); }

TEST(TokenizerReference, LlamaSpmCasesEncodeAndDecodeExactly) { check_cases("llama-spm", 46); }

TEST(TokenizerReference, Gpt2Vocabulary) {
  const Tokenizer tok = Tokenizer::from_file(kTokenizers + "gpt-2/tokenizer.json");
  EXPECT_EQ(tok.vocab_size(), 50257);
  EXPECT_EQ(tok.token_to_id("<|endoftext|>"), 50256);
  EXPECT_TRUE(tok.is_special(50256));
  EXPECT_FALSE(tok.is_special(15496));
  EXPECT_EQ(tok.id_to_token(15496), "Hello");
  EXPECT_EQ(tok.id_to_token(18435), "\xC4\xA0Hello");  // "ĠHello"
  // The ByteLevel post_processor adds nothing.
  EXPECT_EQ(tok.encode("Hello world", true), tok.encode("Hello world", false));
  EXPECT_EQ(tok.bos_id(), -1);
  // The special token is cut out of the text; skip_special_tokens drops it on decode.
  const auto ids = tok.encode("Hello<|endoftext|> world");
  EXPECT_EQ(ids, (std::vector<int32_t>{15496, 50256, 995}));
  EXPECT_EQ(tok.decode(ids), "Hello<|endoftext|> world");
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), "Hello world");
}

TEST(TokenizerReference, LlamaSpmSpecialsAndTemplate) {
  const Tokenizer tok = Tokenizer::from_file(kTokenizers + "llama-spm/tokenizer.json");
  EXPECT_EQ(tok.vocab_size(), 32000);
  // The TemplateProcessing post_processor prepends <s>.
  EXPECT_EQ(tok.bos_id(), 1);
  const auto plain = tok.encode("Hello world");
  auto with_bos = plain;
  with_bos.insert(with_bos.begin(), 1);
  EXPECT_EQ(tok.encode("Hello world", true), with_bos);
  // Legacy Llama: a special token in the text, then the rest gets its own "▁" prefix.
  const auto ids = tok.encode("<s>Hello");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end()), tok.encode("Hello"));
  EXPECT_EQ(tok.decode(ids, true), "Hello");
  // Byte fallback: a character outside the vocabulary becomes its UTF-8 bytes.
  const auto emoji = tok.encode("\xF0\x9F\xA6\x99");  // 🦙
  EXPECT_EQ(emoji, (std::vector<int32_t>{29871, 243, 162, 169, 156}));
  EXPECT_EQ(tok.decode(emoji), "\xF0\x9F\xA6\x99");
}

TEST(TokenizerReference, Stories260kDirectory) {
  const Tokenizer tok = Tokenizer::from_dir(DSPARK_SHARED_DIR "/data/models/stories260K-hf");
  EXPECT_EQ(tok.vocab_size(), 512);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(tok.id_to_token(1), "<s>");
  EXPECT_TRUE(tok.is_special(2));
  const std::string text = "Once upon a time, there was a little girl named Lily.";
  const auto ids = tok.encode(text, /*add_special_tokens=*/true);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], 1);                                     // add_bos_token: true
  EXPECT_NE(ids.back(), 2);                                 // add_eos_token: false
  EXPECT_EQ(tok.encode("", true), std::vector<int32_t>{1});  // BOS alone
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), text);
  // Characters outside the 512-token vocabulary go through byte fallback and back.
  const std::string exotic = "caf\xC3\xA9 \xE2\x82\xAC 42 \xF0\x9F\x98\x80!";
  EXPECT_EQ(tok.decode(tok.encode(exotic)), exotic);
}

// One Tokenizer shared by several threads gives every thread the single-threaded result.
TEST(TokenizerReference, ConcurrentEncodeMatchesSequential) {
  for (const std::string name : {"gpt-2", "llama-spm"}) {
    const Tokenizer tok = Tokenizer::from_file(kTokenizers + name + "/tokenizer.json");
    const auto cases = read_cases(kTokenizers + name + "/cases.jsonl");
    constexpr int kThreads = 4;
    std::vector<int> num_bad(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 20; ++round) {
          for (size_t i = t; i < cases.size(); i += 1 + t % 2) {
            num_bad[t] += tok.encode(cases[i].text) != cases[i].ids;
            num_bad[t] += tok.decode(cases[i].ids) != cases[i].text;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(num_bad[t], 0) << name << " thread " << t;
  }
}

}  // namespace
}  // namespace dspark
