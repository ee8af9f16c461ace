// Byte-level BPE training: the incremental trainer against a recount-everything reference,
// the written files against the engine tokenizer (round trip, compression, special tokens)
// and determinism of the output files.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/check.h"
#include "data/bpe_encoder.h"
#include "data/bpe_trainer.h"
#include "data/byte_level.h"
#include "data/pretokenizer.h"
#include "data/subprocess.h"
#include "tokenizer/tokenizer.h"

namespace dspark::train {
namespace {

// A few KB of mixed text: prose, arithmetic, indented code, non-ASCII, odd whitespace.
std::vector<std::string> sample_documents() {
  std::vector<std::string> docs;
  const char* names[] = {"Natalia", "Weng", "Betty", "Julie", "James", "Émile", "Zoë"};
  for (int i = 0; i < 24; ++i) {
    std::ostringstream d;
    const char* who = names[i % 7];
    d << "Question: " << who << " sold " << (12 + 7 * i) << " clips in April and half as many in May. "
      << "How many clips did " << who << " sell altogether?\n"
      << "Answer: " << who << " sold " << (12 + 7 * i) << "/2 = <<" << (12 + 7 * i) << "/2="
      << (12 + 7 * i) / 2 << ">>" << (12 + 7 * i) / 2 << " clips in May.\n#### " << (3 * (12 + 7 * i)) / 2;
    docs.push_back(d.str());
  }
  for (int i = 0; i < 12; ++i) {
    std::ostringstream d;
    d << "def function_" << i << "(values, limit=" << i << "):\n"
      << "    \"\"\"Return the values below the limit.\"\"\"\n"
      << "    result = []\n"
      << "    for value in values:\n"
      << "        if value < limit:\n"
      << "            result.append(value)\n"
      << "\t\treturn result  # tabs and spaces\r\n\n\n";
    docs.push_back(d.str());
  }
  docs.push_back("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
                 "First Citizen:\nYou are all resolved rather to die than to famish?\n\n"
                 "All:\nResolved. resolved. We know't, we know't. They'll say it's I'd've done.\n");
  docs.push_back("Unicode: naïve café — 東京 😀 ½ ① \u00a0non-breaking\u2003em-space\n   trailing   ");
  return docs;
}

std::string join(const std::vector<std::string>& docs) {
  std::string all;
  for (const auto& d : docs) all += d;
  return all;
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reference trainer: recounts every pair from scratch before each merge.
std::vector<std::pair<std::string, std::string>> reference_merges(
    const std::vector<std::string>& docs, int64_t num_merges, int64_t min_frequency) {
  Pretokenizer pre;
  std::map<std::string, int64_t> counts;
  for (const auto& d : docs) {
    std::vector<std::string_view> pieces;
    pre.split(d, pieces);
    for (auto p : pieces) ++counts[std::string(p)];
  }
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;
  for (const auto& [w, c] : counts) {
    std::vector<std::string> sym;
    for (char ch : w) sym.emplace_back(1, ch);
    words.emplace_back(sym, c);
  }
  std::set<std::string> vocab;
  for (int b = 0; b < 256; ++b) vocab.insert(std::string(1, static_cast<char>(b)));
  std::set<std::pair<std::string, std::string>> banned;
  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int64_t>(merges.size()) < num_merges) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [sym, c] : words)
      for (size_t i = 0; i + 1 < sym.size(); ++i) pairs[{sym[i], sym[i + 1]}] += c;
    const std::pair<std::string, std::string>* best = nullptr;
    int64_t best_count = 0;
    for (const auto& [p, c] : pairs) {  // map order = lexicographic, so the first max wins
      if (banned.count(p)) continue;
      if (c > best_count) best = &p, best_count = c;
    }
    if (!best || best_count < min_frequency) break;
    const auto pair = *best;
    if (!vocab.insert(pair.first + pair.second).second) {
      banned.insert(pair);
      continue;
    }
    merges.push_back(pair);
    for (auto& [sym, c] : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < sym.size();) {
        if (i + 1 < sym.size() && sym[i] == pair.first && sym[i + 1] == pair.second) {
          out.push_back(pair.first + pair.second);
          i += 2;
        } else {
          out.push_back(sym[i++]);
        }
      }
      sym = std::move(out);
    }
  }
  return merges;
}

BpeModel train(const std::vector<std::string>& docs, int64_t vocab_size, int64_t min_frequency = 2) {
  BpeTrainerOptions options;
  options.vocab_size = vocab_size;
  options.min_frequency = min_frequency;
  BpeTrainer trainer(options);
  for (const auto& d : docs) trainer.add_document(d);
  return trainer.train();
}

TEST(ByteLevel, AlphabetIsABijection) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) seen.insert(byte_to_char(static_cast<uint8_t>(b)));
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(bytes_to_byte_level(" "), "Ġ");
  EXPECT_EQ(bytes_to_byte_level("\n"), "Ċ");
  EXPECT_EQ(bytes_to_byte_level("ab!"), "ab!");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level_to_bytes(bytes_to_byte_level(all)), all);
  EXPECT_THROW(byte_level_to_bytes("東"), Error);
}

TEST(Pretokenizer, PiecesCoverTextAndSplitDigits) {
  Pretokenizer pre;
  const std::string text = "I've 12345 apples,  they'll\n\n    return x+1  ";
  std::vector<std::string_view> pieces;
  pre.split(text, pieces);
  std::string joined;
  for (auto p : pieces) joined += p;
  EXPECT_EQ(joined, text);
  const std::vector<std::string> expected = {"I", "'ve", " ", "1", "2", "3", "4", "5", " apples", ",",
                                             " ", " they", "'ll", "\n\n", "   ", " return", " x",
                                             "+", "1", "  "};
  EXPECT_EQ(std::vector<std::string>(pieces.begin(), pieces.end()), expected);
  EXPECT_THROW(pre.split(std::string("bad \xff utf8"), pieces), Error);
}

TEST(BpeTrainer, MatchesRecountingReference) {
  const auto docs = sample_documents();
  // min_frequency 1 runs deep into count ties, which exercises the tie-breaking order.
  for (const int64_t min_frequency : {2, 1}) {
    const int64_t num_merges = 600;
    const BpeModel model = train(docs, 3 + 256 + num_merges, min_frequency);
    const auto expected = reference_merges(docs, num_merges, min_frequency);
    EXPECT_GT(expected.size(), 150u);
    ASSERT_EQ(model.merges.size(), expected.size()) << "min_frequency " << min_frequency;
    for (size_t r = 0; r < expected.size(); ++r) {
      EXPECT_EQ(model.tokens[model.merges[r].first], expected[r].first) << "merge " << r;
      EXPECT_EQ(model.tokens[model.merges[r].second], expected[r].second) << "merge " << r;
    }
  }
}

TEST(BpeTrainer, StopsWhenNoPairIsFrequentEnough) {
  const BpeModel model = train({"abab xyz"}, 3 + 256 + 100);
  // Only "ab" occurs twice; nothing else reaches min_frequency 2.
  ASSERT_EQ(model.merges.size(), 1u);
  EXPECT_EQ(model.tokens.back(), "ab");
}

TEST(BpeTrainer, RejectsBadOptions) {
  BpeTrainerOptions options;
  options.vocab_size = 200;
  EXPECT_THROW(BpeTrainer{options}, Error);
  options = {};
  options.special_tokens = {"<a>", "<a>"};
  EXPECT_THROW(BpeTrainer{options}, Error);
}

class BpeFilesTest : public ::testing::Test {
 protected:
  TempDir dir_{"dspark-bpe-test"};
};

TEST_F(BpeFilesTest, EngineTokenizerLoadsRoundTripsAndCompresses) {
  const auto docs = sample_documents();
  const BpeModel model = train(docs, 450);
  ASSERT_EQ(model.vocab_size(), 450);
  write_tokenizer_files(model, dir_.path());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_TRUE(std::filesystem::exists(dir_.path() / f)) << f;

  const Tokenizer tok = Tokenizer::from_dir(dir_.path());
  EXPECT_EQ(tok.vocab_size(), 450);
  const BpeEncoder reference(read_tokenizer_json(dir_.path() / "tokenizer.json"));
  const std::string text = join(docs);
  const std::vector<int32_t> ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_LT(ids.size() * 2, text.size()) << "expected at least 2 bytes per token";
  EXPECT_EQ(ids, reference.encode(text));
  for (const auto& d : docs) {
    const auto doc_ids = tok.encode(d);
    EXPECT_EQ(doc_ids, reference.encode(d)) << d;
    EXPECT_EQ(tok.decode(doc_ids), d);
  }
  // Text the tokenizer never saw still round-trips through single bytes.
  const std::string unseen = "Ωμέγα \x01\x7f 🚀 9876543210 ÿ";
  EXPECT_EQ(tok.decode(tok.encode(unseen)), unseen);
}

TEST_F(BpeFilesTest, SpecialTokensHaveReservedIdsAndAreSplitOut) {
  write_tokenizer_files(train(sample_documents(), 400), dir_.path());
  const Tokenizer tok = Tokenizer::from_dir(dir_.path());
  EXPECT_EQ(tok.token_to_id("<|endoftext|>"), 0);
  EXPECT_EQ(tok.token_to_id("<|pad|>"), 1);
  EXPECT_EQ(tok.token_to_id("<|mask|>"), 2);
  for (int32_t id : {0, 1, 2}) EXPECT_TRUE(tok.is_special(id));
  EXPECT_FALSE(tok.is_special(3));
  EXPECT_EQ(tok.bos_id(), -1);
  EXPECT_EQ(tok.eos_ids(), std::vector<int32_t>{0});

  const std::string text = "clips<|endoftext|>Question<|mask|><|pad|> x";
  const auto ids = tok.encode(text);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 0), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), "clipsQuestion x");
  const auto before = tok.encode("clips");
  ASSERT_LT(before.size(), ids.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), ids.begin()));
  EXPECT_EQ(ids[before.size()], 0);
  // add_special_tokens adds nothing: no BOS, add_eos_token false.
  EXPECT_EQ(tok.encode("clips", true), before);
}

TEST_F(BpeFilesTest, TrainingIsDeterministic) {
  auto docs = sample_documents();
  write_tokenizer_files(train(docs, 500), dir_.path() / "a");
  std::reverse(docs.begin(), docs.end());  // the order documents arrive in does not matter
  write_tokenizer_files(train(docs, 500), dir_.path() / "b");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    const std::string a = read_bytes(dir_.path() / "a" / f);
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, read_bytes(dir_.path() / "b" / f)) << f;
  }
}

TEST_F(BpeFilesTest, ReadBackGivesTheSameModel) {
  const BpeModel model = train(sample_documents(), 450);
  write_tokenizer_files(model, dir_.path());
  const BpeModel back = read_tokenizer_json(dir_.path() / "tokenizer.json");
  EXPECT_EQ(back.special_tokens, model.special_tokens);
  EXPECT_EQ(back.tokens, model.tokens);
  EXPECT_EQ(back.merges, model.merges);
  EXPECT_EQ(back.pattern, model.pattern);
}

}  // namespace
}  // namespace dspark::train
