// Optional oracle: Hugging Face's own JavaScript tokenizers (npm @huggingface/tokenizers)
// encode a few thousand varied texts with each tokenizer, and ours must produce the same
// ids and decode them back to the same text. Skipped unless node and the package are
// present; install with
//   npm install --prefix <build dir> @huggingface/tokenizers
// or point DSPARK_TOKENIZERS_JS at the package directory.
//
// Tokenizers: the two reference fixtures, stories260K, models/tiny-target, and GPT-2's
// vocabulary re-dressed as Llama-3 (Split with its regex + ByteLevel, ignore_merges) and
// as Qwen2 (NFC + Split with its regex), which exercises those regexes with real merges.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;
const std::string kShared = DSPARK_SHARED_DIR "/data/";

fs::path find_package() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("DSPARK_TOKENIZERS_JS")) candidates.emplace_back(env);
  candidates.emplace_back(fs::path(DSPARK_BINARY_DIR) / "node_modules/@huggingface/tokenizers");
  candidates.emplace_back(fs::path(DSPARK_SOURCE_DIR) / "node_modules/@huggingface/tokenizers");
  for (const auto& c : candidates) {
    if (fs::exists(c / "dist/tokenizers.mjs")) return c;
  }
  return {};
}

bool have_node() { return std::system("node --version > /dev/null 2>&1") == 0; }

// encode: one JSON string per input line -> {"ids", "decoded"}; decode: one JSON id list
// per line -> {"decoded"} (without and with skip_special_tokens).
constexpr const char* kScript = R"(
import fs from "fs";
const [,, mode, pkg, tokPath, inPath, outPath] = process.argv;
const { Tokenizer } = await import(pkg);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(tokPath, "utf8")), {});
const decode = (ids, skip) => ids.length
    ? tok.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false }) : "";
const out = [];
for (const line of fs.readFileSync(inPath, "utf8").split("\n")) {
  if (!line) continue;
  if (mode === "encode") {
    const ids = tok.encode(JSON.parse(line), { add_special_tokens: false }).ids;
    out.push(JSON.stringify({ ids, decoded: decode(ids, false) }));
  } else {
    const ids = JSON.parse(line);
    out.push(JSON.stringify({ decoded: decode(ids, false), skipped: decode(ids, true) }));
  }
}
fs.writeFileSync(outPath, out.join("\n") + "\n");
)";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Varied texts: corpus lines and chunks, code, hand-picked edge cases, random Unicode.
std::vector<std::string> make_texts() {
  std::vector<std::string> texts = {
      "", " ", "  ", "\t", "\n", "\n\n\n", " \n \n", "\r\n", "a  b   c    d",
      "Hello world", " Hello World!", "I'LL SEE YOU'RE THERE'S", "don't won't can't",
      "x = 12345678 + 9;\t// done\r\n", "3.14159 1,000,000 2024-01-05",
      "caf\xC3\xA9 cafe\xCC\x81 na\xC3\xAFve \xC3\x85ngstr\xC3\xB6m \xE2\x84\xAB",
      "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xE4\xB8\xAD\xE6\x96\x87 "
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
      "\xF0\x9F\xA6\x99\xF0\x9F\x9A\x80 \xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F",
      "nbsp\xC2\xA0here ideographic\xE3\x80\x80space line\xE2\x80\xA8sep",
      "<|endoftext|>", "a<|endoftext|>b", "<s>Hello</s>", "<s> x", "<unk>",
      "    def f(x):\n        return x  # comment\n",
  };
  const std::string shakespeare = read_file(kShared + "corpus/tinyshakespeare.txt");
  std::istringstream lines(shakespeare);
  std::string line;
  for (int i = 0; i < 400 && std::getline(lines, line);) {
    if (!line.empty()) texts.push_back(line), ++i;
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const size_t start = std::uniform_int_distribution<size_t>(0, shakespeare.size() - 600)(rng);
    texts.push_back(shakespeare.substr(start, std::uniform_int_distribution<size_t>(1, 500)(rng)));
  }
  std::ifstream humaneval(kShared + "eval/humaneval.jsonl");
  for (int i = 0; i < 60 && std::getline(humaneval, line); ++i) {
    texts.push_back(nlohmann::json::parse(line).at("prompt").get<std::string>());
  }
  std::ifstream gsm(kShared + "corpus/gsm8k_train.jsonl");
  for (int i = 0; i < 100 && std::getline(gsm, line); ++i) {
    const auto j = nlohmann::json::parse(line);
    texts.push_back(j.at("question").get<std::string>() + "\n" + j.at("answer").get<std::string>());
  }
  const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x20, 0x7E},     {0x09, 0x0D},     {0xA0, 0x17F},    {0x300, 0x36F},  {0x400, 0x4FF},
      {0x900, 0x97F},   {0x1100, 0x11FF}, {0x2000, 0x206F}, {0x3000, 0x303F}, {0x4E00, 0x4FFF},
      {0xAC00, 0xAD00}, {0x1F300, 0x1F64F}};
  for (int i = 0; i < 600; ++i) {
    std::string s;
    const int len = std::uniform_int_distribution<int>(1, 24)(rng);
    for (int k = 0; k < len; ++k) {
      const auto& r = ranges[std::uniform_int_distribution<size_t>(0, ranges.size() - 1)(rng)];
      tok::utf8_append(s, std::uniform_int_distribution<uint32_t>(r.first, r.second)(rng));
    }
    texts.push_back(s);
  }
  return texts;
}

nlohmann::json redress(const std::string& regex, bool nfc, bool ignore_merges) {
  auto j = nlohmann::json::parse(read_file(kShared + "tokenizers/gpt-2/tokenizer.json"));
  j["normalizer"] = nfc ? nlohmann::json{{"type", "NFC"}} : nlohmann::json();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
         {"use_regex", false}}}}};
  j["model"]["ignore_merges"] = ignore_merges;
  return j;
}

class TokenizerOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    package_ = find_package();
    if (package_.empty() || !have_node()) {
      GTEST_SKIP() << "node or @huggingface/tokenizers not installed";
    }
    dir_ = fs::temp_directory_path() / ("dspark_tok_oracle_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "oracle.mjs") << kScript;
    texts_ = make_texts();
    std::ofstream in(dir_ / "texts.jsonl");
    for (const auto& t : texts_) in << nlohmann::json(t).dump() << "\n";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void compare(const std::string& name, const fs::path& tokenizer_json) {
    const fs::path out = dir_ / (name + ".out.jsonl");
    run_oracle("encode", tokenizer_json, dir_ / "texts.jsonl", out);
    const Tokenizer tok = Tokenizer::from_file(tokenizer_json);
    std::ifstream results(out);
    std::string line;
    int num_checked = 0, num_id_mismatch = 0, num_text_mismatch = 0;
    for (const auto& text : texts_) {
      ASSERT_TRUE(std::getline(results, line)) << name;
      const auto j = nlohmann::json::parse(line);
      const auto expected = j.at("ids").get<std::vector<int32_t>>();
      const auto ids = tok.encode(text);
      if (ids != expected && ++num_id_mismatch <= 5) {
        ADD_FAILURE() << name << ": ids differ for " << nlohmann::json(text).dump()
                      << "\n ours:   " << ::testing::PrintToString(ids)
                      << "\n oracle: " << ::testing::PrintToString(expected);
      }
      const std::string decoded = tok.decode(expected);
      if (decoded != j.at("decoded").get<std::string>() && ++num_text_mismatch <= 5) {
        ADD_FAILURE() << name << ": decode differs for " << nlohmann::json(text).dump()
                      << "\n ours:   " << nlohmann::json(decoded).dump()
                      << "\n oracle: " << j.at("decoded").dump();
      }
      ++num_checked;
    }
    std::printf("[%s] %d texts, %d id mismatches, %d decode mismatches\n", name.c_str(),
                num_checked, num_id_mismatch, num_text_mismatch);
    EXPECT_EQ(num_id_mismatch, 0);
    EXPECT_EQ(num_text_mismatch, 0);
  }

  void run_oracle(const std::string& mode, const fs::path& tokenizer_json, const fs::path& in,
                  const fs::path& out) {
    const std::string cmd = "node " + (dir_ / "oracle.mjs").string() + " " + mode + " file://" +
                            (package_ / "dist/tokenizers.mjs").string() + " " +
                            tokenizer_json.string() + " " + in.string() + " " + out.string();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  fs::path package_, dir_;
  std::vector<std::string> texts_;
};

TEST_F(TokenizerOracle, Gpt2) { compare("gpt-2", kShared + "tokenizers/gpt-2/tokenizer.json"); }

// Random ids, so decode meets broken UTF-8 and special tokens. Byte-level only: for runs
// of <0xNN> tokens that are not valid UTF-8 the JavaScript port differs from the Rust
// library (which writes one U+FFFD per byte, as we do).
TEST_F(TokenizerOracle, Gpt2DecodesRandomIds) {
  const fs::path tokenizer_json = kShared + "tokenizers/gpt-2/tokenizer.json";
  const Tokenizer tok = Tokenizer::from_file(tokenizer_json);
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> sequences;
  {
    std::ofstream in(dir_ / "ids.jsonl");
    for (int i = 0; i < 1000; ++i) {
      std::vector<int32_t> ids(std::uniform_int_distribution<int>(1, 12)(rng));
      for (auto& id : ids) {
        const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
        id = kind < 5   ? std::uniform_int_distribution<int32_t>(0, 50256)(rng)
             : kind < 9 ? std::uniform_int_distribution<int32_t>(0, 255)(rng)  // single bytes
                        : 50256;
      }
      in << nlohmann::json(ids).dump() << "\n";
      sequences.push_back(ids);
    }
  }
  run_oracle("decode", tokenizer_json, dir_ / "ids.jsonl", dir_ / "ids.out.jsonl");
  std::ifstream results(dir_ / "ids.out.jsonl");
  std::string line;
  int num_mismatch = 0;
  for (const auto& ids : sequences) {
    ASSERT_TRUE(std::getline(results, line));
    const auto j = nlohmann::json::parse(line);
    if (tok.decode(ids) != j.at("decoded").get<std::string>() ||
        tok.decode(ids, true) != j.at("skipped").get<std::string>()) {
      if (++num_mismatch <= 5) ADD_FAILURE() << "decode differs for " << nlohmann::json(ids).dump();
    }
  }
  EXPECT_EQ(num_mismatch, 0);
}

TEST_F(TokenizerOracle, LlamaSpm) {
  compare("llama-spm", kShared + "tokenizers/llama-spm/tokenizer.json");
}

TEST_F(TokenizerOracle, Stories260k) {
  compare("stories260K", kShared + "models/stories260K-hf/tokenizer.json");
}

// The project's own embedded model tokenizer (Qwen2-style regex, trained here).
TEST_F(TokenizerOracle, TinyTarget) {
  const fs::path path = fs::path(DSPARK_SOURCE_DIR) / "models/tiny-target/tokenizer.json";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not present";
  compare("tiny-target", path);
}

TEST_F(TokenizerOracle, Gpt2VocabularyWithLlama3Regex) {
  const auto j = redress(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      false, true);
  std::ofstream(dir_ / "llama3.json") << j.dump();
  compare("llama3-style", dir_ / "llama3.json");
}

TEST_F(TokenizerOracle, Gpt2VocabularyWithQwen2RegexAndNfc) {
  const auto j = redress(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      true, false);
  std::ofstream(dir_ / "qwen2.json") << j.dump();
  compare("qwen2-style", dir_ / "qwen2.json");
}

}  // namespace
}  // namespace dspark
