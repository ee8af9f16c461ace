// Byte-level tokenizers built by the test in the layout Llama-3 and Qwen2/3 ship: a Split
// pre-tokenizer carrying the model's regex, then ByteLevel without its own regex, added
// special tokens, ignore_merges (Llama-3) or an NFC normalizer (Qwen2).
//
// The vocabulary is the 256 byte characters plus, as whole tokens, the pre-tokens the
// regex must produce (computed independently with Python's `regex` module). With
// ignore_merges every correct pre-token is then exactly one id, and a wrong cut shows up
// as byte ids, so encode() checks the regex split piece by piece.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct SplitCase {
  std::string text;
  std::vector<std::string> llama3;  // expected pre-tokens
  std::vector<std::string> qwen2;
};

const std::vector<SplitCase>& split_cases() {
  static const std::vector<SplitCase> cases = {
      {"Hello world! It's 2024-01-05, I'm   fine.\n\n  Ok?",
       {"Hello", " world", "!", " It", "'s", " ", "202", "4", "-", "01", "-", "05", ",", " I",
        "'m", "  ", " fine", ".\n\n", " ", " Ok", "?"},
       {"Hello", " world", "!", " It", "'s", " ", "2", "0", "2", "4", "-", "0", "1", "-", "0",
        "5", ",", " I", "'m", "  ", " fine", ".\n\n", " ", " Ok", "?"}},
      {"x = 12345678 + 9;\t// done\r\n",
       {"x", " =", " ", "123", "456", "78", " +", " ", "9", ";", "\t", "//", " done", "\r\n"},
       {"x", " =", " ", "1", "2", "3", "4", "5", "6", "7", "8", " +", " ", "9", ";", "\t", "//",
        " done", "\r\n"}},
      {"\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9 \xD0\xA2\xD0\x95\xD0\xA1\xD0\xA2 "
       "\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97\xE7\xAC\xA6 \xF0\x9F\xA6\x99 emoji",
       {"\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9", " \xD0\xA2\xD0\x95\xD0\xA1\xD0\xA2",
        " \xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97\xE7\xAC\xA6", " \xF0\x9F\xA6\x99", " emoji"},
       {"\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9", " \xD0\xA2\xD0\x95\xD0\xA1\xD0\xA2",
        " \xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97\xE7\xAC\xA6", " \xF0\x9F\xA6\x99", " emoji"}},
      {"I'LL SEE YOU'RE THERE'S",
       {"I", "'LL", " SEE", " YOU", "'RE", " THERE", "'S"},
       {"I", "'LL", " SEE", " YOU", "'RE", " THERE", "'S"}},
      {"   leading and trailing   ",
       {"  ", " leading", " and", " trailing", "   "},
       {"  ", " leading", " and", " trailing", "   "}},
  };
  return cases;
}

std::string byte_level(std::string_view raw) {
  std::string out;
  tok::byte_level_encode(raw, out);
  return out;
}

struct Flavour {
  const char* regex;
  bool nfc;            // Qwen2: NFC normalizer
  bool bos_template;   // Llama-3: TemplateProcessing prepends <|begin_of_text|>
  bool ignore_merges;
};

// Writes a tokenizer.json into a fresh directory and returns the directory.
fs::path write_tokenizer(const std::string& name, const Flavour& f,
                         const std::vector<std::string>& words) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[std::string(tok::byte_level_char(b))] = b;
  int next = 256;
  for (const auto& w : words) {
    const std::string key = byte_level(w);
    if (!vocab.contains(key)) vocab[key] = next++;
  }
  // Two real merges ("Ġ t" in the array form, "h e" in the string form), so that words
  // missing from the vocabulary go through BPE too.
  const std::string g = std::string(tok::byte_level_char(' '));
  vocab[g + "t"] = next++;
  vocab["he"] = next++;
  const nlohmann::json merges = nlohmann::json::array({nlohmann::json::array({g, "t"}), "h e"});
  const int bos = next++, eot = next++, eos = next++, tool = next++;
  auto added = [](int id, const char* content, bool special) {
    return nlohmann::json{{"id", id},          {"content", content}, {"single_word", false},
                          {"lstrip", false},   {"rstrip", false},    {"normalized", false},
                          {"special", special}};
  };
  nlohmann::json j;
  j["version"] = "1.0";
  j["added_tokens"] = {added(bos, "<|begin_of_text|>", true), added(eot, "<|eot_id|>", true),
                       added(eos, "<|endoftext|>", true), added(tool, "<tool>", false)};
  j["normalizer"] = f.nfc ? nlohmann::json{{"type", "NFC"}} : nlohmann::json();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"}, {"pattern", {{"Regex", f.regex}}}, {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
         {"use_regex", false}}}}};
  nlohmann::json byte_level_pp = {{"type", "ByteLevel"}, {"add_prefix_space", true},
                                  {"trim_offsets", false}, {"use_regex", true}};
  if (f.bos_template) {
    j["post_processor"] = {
        {"type", "Sequence"},
        {"processors",
         {byte_level_pp,
          {{"type", "TemplateProcessing"},
           {"single",
            {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
             {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
           {"pair", nlohmann::json::array()},
           {"special_tokens",
            {{"<|begin_of_text|>",
              {{"id", "<|begin_of_text|>"}, {"ids", {bos}}, {"tokens", {"<|begin_of_text|>"}}}}}}}}}};
  } else {
    j["post_processor"] = byte_level_pp;
  }
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                  {"use_regex", true}};
  j["model"] = {{"type", "BPE"},         {"dropout", nullptr},
                {"unk_token", nullptr},  {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr}, {"fuse_unk", false},
                {"byte_fallback", false}, {"ignore_merges", f.ignore_merges},
                {"vocab", vocab},        {"merges", merges}};
  const fs::path dir = fs::temp_directory_path() / ("dspark_tok_" + name + "_" +
                                                    std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump(1);
  return dir;
}

std::vector<std::string> all_words(bool qwen) {
  std::vector<std::string> words;
  for (const auto& c : split_cases()) {
    const auto& w = qwen ? c.qwen2 : c.llama3;
    words.insert(words.end(), w.begin(), w.end());
  }
  return words;
}

class ByteLevelFlavours : public ::testing::TestWithParam<bool> {};  // true: Qwen2

TEST_P(ByteLevelFlavours, RegexSplitsMatchReferencePieces) {
  const bool qwen = GetParam();
  const Flavour f{qwen ? kQwen2Regex : kLlama3Regex, qwen, !qwen, true};
  const fs::path dir = write_tokenizer(qwen ? "qwen2" : "llama3", f, all_words(qwen));
  const Tokenizer tok = Tokenizer::from_file(dir / "tokenizer.json");
  for (const auto& c : split_cases()) {
    std::vector<int32_t> expected;
    for (const auto& piece : qwen ? c.qwen2 : c.llama3) {
      const auto id = tok.token_to_id(byte_level(piece));
      ASSERT_TRUE(id.has_value()) << piece;
      expected.push_back(*id);
    }
    EXPECT_EQ(tok.encode(c.text), expected) << c.text;
    EXPECT_EQ(tok.decode(tok.encode(c.text)), c.text);
  }
  fs::remove_all(dir);
}

TEST_P(ByteLevelFlavours, SpecialTokensAreCutOutOfTheText) {
  const bool qwen = GetParam();
  const Flavour f{qwen ? kQwen2Regex : kLlama3Regex, qwen, !qwen, true};
  const fs::path dir = write_tokenizer(qwen ? "qwen2s" : "llama3s", f, {"Hello", " world"});
  const Tokenizer tok = Tokenizer::from_file(dir / "tokenizer.json");
  const int32_t bos = *tok.token_to_id("<|begin_of_text|>");
  const int32_t eot = *tok.token_to_id("<|eot_id|>");
  const int32_t eos = *tok.token_to_id("<|endoftext|>");
  const int32_t tool = *tok.token_to_id("<tool>");
  const int32_t hello = *tok.token_to_id("Hello");
  const int32_t world = *tok.token_to_id(byte_level(" world"));
  const std::string text = "<|begin_of_text|>Hello world<|eot_id|><tool><|endoftext|>";
  const auto ids = tok.encode(text);
  EXPECT_EQ(ids, (std::vector<int32_t>{bos, hello, world, eot, tool, eos}));
  EXPECT_EQ(tok.decode(ids), text);
  // skip_special_tokens drops special added tokens only, not "<tool>".
  EXPECT_EQ(tok.decode(ids, true), "Hello world<tool>");
  EXPECT_TRUE(tok.is_special(eot));
  EXPECT_FALSE(tok.is_special(tool));
  // A partial special token is plain text.
  const auto partial = tok.encode("<|eot_id");
  EXPECT_EQ(std::count(partial.begin(), partial.end(), eot), 0);
  EXPECT_EQ(tok.decode(partial), "<|eot_id");
  // Llama-3's template prepends BOS; Qwen2 adds nothing.
  const auto with_special = tok.encode("Hello", true);
  if (qwen) {
    EXPECT_EQ(with_special, std::vector<int32_t>{hello});
    EXPECT_EQ(tok.bos_id(), -1);
  } else {
    EXPECT_EQ(with_special, (std::vector<int32_t>{bos, hello}));
    EXPECT_EQ(tok.bos_id(), bos);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, ByteLevelFlavours, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Qwen2" : "Llama3"; });

TEST(TokenizerByteLevel, MergesRunWhenWordIsNotInVocabulary) {
  const Flavour f{kLlama3Regex, false, true, true};
  const fs::path dir = write_tokenizer("merges", f, {});
  const Tokenizer tok = Tokenizer::from_file(dir / "tokenizer.json");
  // " the" -> "Ġt" (merge 0) + "he" (merge 1).
  const auto ids = tok.encode(" the");
  EXPECT_EQ(ids, (std::vector<int32_t>{*tok.token_to_id(byte_level(" t")), *tok.token_to_id("he")}));
  fs::remove_all(dir);
}

TEST(TokenizerByteLevel, NfcNormalizerComposes) {
  const Flavour f{kQwen2Regex, true, false, true};
  const fs::path dir = write_tokenizer("nfc", f, {"caf\xC3\xA9"});
  const Tokenizer tok = Tokenizer::from_file(dir / "tokenizer.json");
  // "cafe" + U+0301 COMBINING ACUTE is normalized to "café" (U+00E9), one vocab token.
  const auto ids = tok.encode("cafe\xCC\x81");
  EXPECT_EQ(ids, std::vector<int32_t>{*tok.token_to_id(byte_level("caf\xC3\xA9"))});
  fs::remove_all(dir);
}

TEST(TokenizerByteLevel, FromDirReadsModelConfigs) {
  const Flavour f{kLlama3Regex, false, true, true};
  const fs::path dir = write_tokenizer("dir", f, {"Hi"});
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": "<|begin_of_text|>", "eos_token": {"content": "<|eot_id|>"}})";
  const int32_t bos = 256 + 1 + 2;  // after "Hi", "Ġt", "he"
  const Tokenizer a = Tokenizer::from_dir(dir);
  EXPECT_EQ(a.bos_id(), bos);
  EXPECT_EQ(a.eos_ids(), std::vector<int32_t>{*a.token_to_id("<|eot_id|>")});
  // generation_config's EOS list wins.
  std::ofstream(dir / "generation_config.json")
      << R"({"bos_token_id": 259, "eos_token_id": [261, 260]})";
  const Tokenizer b = Tokenizer::from_dir(dir);
  EXPECT_EQ(b.eos_ids(), (std::vector<int32_t>{261, 260}));
  EXPECT_EQ(b.encode("Hi", true), (std::vector<int32_t>{bos, *b.token_to_id("Hi")}));
  // add_bos_token=false overrides the template; add_eos_token=true appends EOS.
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|endoftext|>",
            "add_bos_token": false, "add_eos_token": true})";
  const Tokenizer c = Tokenizer::from_dir(dir);
  EXPECT_EQ(c.encode("Hi", true),
            (std::vector<int32_t>{*c.token_to_id("Hi"), *c.token_to_id("<|endoftext|>")}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dspark
