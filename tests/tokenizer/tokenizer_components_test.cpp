// The tokenizer's stages one by one, against hand-worked expectations of Hugging Face
// tokenizers' semantics: UTF-8 replacement (Rust from_utf8_lossy), split behaviours,
// added-token matching flags, Metaspace, NFC/NFD, decoders.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/normalizer.h"
#include "tokenizer/normalizer_nfc.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_added_tokens.h"
#include "tokenizer/tokenizer_decoder.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";
const std::string kMeta = "\xE2\x96\x81";  // ▁

std::string lossy(std::string_view bytes) {
  std::string out;
  utf8_append_lossy(out, bytes);
  return out;
}

TEST(TokenizerUtf8, LossyReplacesMaximalInvalidSubparts) {
  EXPECT_EQ(lossy("abc"), "abc");
  EXPECT_EQ(lossy("\xF0\x9F\xA6\x99"), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(lossy("\xF0\x9F\xA6"), kFffd);                         // truncated: one
  EXPECT_EQ(lossy("a\xC3"), "a" + kFffd);
  EXPECT_EQ(lossy("\xE0\x80\xAF"), kFffd + kFffd + kFffd);          // overlong: per byte
  EXPECT_EQ(lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);          // surrogate
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(lossy("\xE2\x82x\xFF"), kFffd + "x" + kFffd);
  EXPECT_EQ(utf8_find_invalid("ok\xC3\xA9\x80"), 4u);
  EXPECT_TRUE(utf8_is_valid("\xC3\xA9"));
}

std::vector<std::string> split(std::string_view text, SplitBehavior behavior, bool invert) {
  std::vector<Span> matches, spans;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '-') matches.push_back({i, i + 1});
  }
  split_spans(text.size(), matches, behavior, invert, spans);
  std::vector<std::string> out;
  for (const Span& s : spans) out.emplace_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

TEST(TokenizerSplit, DelimiterBehaviours) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split("a-b--c", SplitBehavior::kRemoved, false), (V{"a", "b", "c"}));
  EXPECT_EQ(split("a-b--c", SplitBehavior::kIsolated, false), (V{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(split("a-b--c", SplitBehavior::kMergedWithPrevious, false), (V{"a-", "b-", "-", "c"}));
  EXPECT_EQ(split("a-b--c", SplitBehavior::kMergedWithNext, false), (V{"a", "-b", "-", "-c"}));
  EXPECT_EQ(split("a-b--c", SplitBehavior::kContiguous, false), (V{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(split("a-b--c", SplitBehavior::kRemoved, true), (V{"-", "-", "-"}));
  EXPECT_EQ(split("-a-", SplitBehavior::kMergedWithNext, false), (V{"-a", "-"}));
  EXPECT_EQ(split("", SplitBehavior::kIsolated, false), V{});
}

std::vector<std::string> pre_tokenize(const nlohmann::json& j, std::vector<PreToken> pieces) {
  make_pre_tokenizer(j, "test")->pre_tokenize(pieces);
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(p.text);
  return out;
}

TEST(TokenizerPreTokenizer, MetaspacePrependSchemes) {
  using V = std::vector<std::string>;
  const nlohmann::json first = {{"type", "Metaspace"}, {"replacement", kMeta},
                                {"prepend_scheme", "first"}, {"split", true}};
  EXPECT_EQ(pre_tokenize(first, {{"Hey  friend", true}}),
            (V{kMeta + "Hey", kMeta, kMeta + "friend"}));
  EXPECT_EQ(pre_tokenize(first, {{"Hey", false}}), V{"Hey"});  // not at the text start
  nlohmann::json always = first;
  always["prepend_scheme"] = "always";
  always["split"] = false;
  EXPECT_EQ(pre_tokenize(always, {{"Hey friend", false}}), V{kMeta + "Hey" + kMeta + "friend"});
  const nlohmann::json legacy = {{"type", "Metaspace"}, {"replacement", kMeta},
                                 {"add_prefix_space", false}};
  EXPECT_EQ(pre_tokenize(legacy, {{"a b", true}}), (V{"a", kMeta + "b"}));
}

TEST(TokenizerPreTokenizer, ByteLevelWithGpt2Regex) {
  using V = std::vector<std::string>;
  const nlohmann::json j = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  // "Ġ" is the byte-level form of ' ', "Ċ" of '\n'.
  EXPECT_EQ(pre_tokenize(j, {{"I'm here\n  now", true}}),
            (V{"\xC4\xA0I", "'m", "\xC4\xA0here", "\xC4\x8A\xC4\xA0", "\xC4\xA0now"}));
  const nlohmann::json digits = {{"type", "Digits"}, {"individual_digits", true}};
  EXPECT_EQ(pre_tokenize(digits, {{"a12b", true}}), (V{"a", "1", "2", "b"}));
  const nlohmann::json ws = {{"type", "WhitespaceSplit"}};
  EXPECT_EQ(pre_tokenize(ws, {{" a \t b ", true}}), (V{"a", "b"}));
  const nlohmann::json w = {{"type", "Whitespace"}};
  EXPECT_EQ(pre_tokenize(w, {{"Hey, you!", true}}), (V{"Hey", ",", "you", "!"}));
}

std::vector<std::pair<std::string, int32_t>> segments(const AddedTokenMatcher& m,
                                                      std::string_view text) {
  std::vector<Segment> segs;
  m.split(text, segs);
  std::vector<std::pair<std::string, int32_t>> out;
  for (const auto& s : segs) out.emplace_back(text.substr(s.begin, s.end - s.begin), s.id);
  return out;
}

TEST(TokenizerAddedTokens, LeftmostLongestAndFlags) {
  using V = std::vector<std::pair<std::string, int32_t>>;
  std::vector<AddedToken> tokens(5);
  tokens[0].id = 10, tokens[0].content = "<a>";
  tokens[1].id = 11, tokens[1].content = "<a><b>";
  tokens[2].id = 12, tokens[2].content = "<mask>", tokens[2].lstrip = true;
  tokens[3].id = 13, tokens[3].content = "<r>", tokens[3].rstrip = true;
  tokens[4].id = 14, tokens[4].content = "ab", tokens[4].single_word = true;
  const AddedTokenMatcher m(tokens);
  EXPECT_EQ(segments(m, "x<a><b>y<a>"), (V{{"x", -1}, {"<a><b>", 11}, {"y", -1}, {"<a>", 10}}));
  EXPECT_EQ(segments(m, "a  <mask> b"), (V{{"a", -1}, {"  <mask>", 12}, {" b", -1}}));
  EXPECT_EQ(segments(m, "x<r> \n y"), (V{{"x", -1}, {"<r> \n ", 13}, {"y", -1}}));
  EXPECT_EQ(segments(m, "ab cab ab_ ab"), (V{{"ab", 14}, {" cab ab_ ", -1}, {"ab", 14}}));
  EXPECT_EQ(segments(m, "plain"), (V{{"plain", -1}}));
  EXPECT_EQ(segments(m, ""), V{});
}

TEST(TokenizerNormalizer, NfcAndNfd) {
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");                     // e + acute -> é
  EXPECT_EQ(nfc("a\xCC\x82\xCC\xA3"), "\xE1\xBA\xAD");         // marks reordered, then ậ
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                  // Angstrom sign -> Å
  EXPECT_EQ(nfc("\xE0\xA5\x98"), "\xE0\xA4\x95\xE0\xA4\xBC");  // excluded from composition
  EXPECT_EQ(nfc("plain ascii"), "plain ascii");
  EXPECT_EQ(nfd("\xC3\xA9"), "e\xCC\x81");
  EXPECT_EQ(nfd("\xEA\xB0\x81"), "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8");
}

TEST(TokenizerNormalizer, SequencePrependReplaceStrip) {
  const nlohmann::json j = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}},
        {{"type", "Prepend"}, {"prepend", kMeta}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMeta}},
        {{"type", "Replace"}, {"pattern", {{"Regex", "[0-9]+"}}}, {"content", "#"}}}}};
  const auto n = make_normalizer(j, "test");
  std::string text = "  hi you 42 ";
  n->normalize(text);
  EXPECT_EQ(text, kMeta + "hi" + kMeta + "you" + kMeta + "#" + kMeta);
  std::string empty;
  n->normalize(empty);
  EXPECT_EQ(empty, "");  // Prepend leaves an empty piece empty
  std::string bytes = "a b\n";
  make_normalizer({{"type", "ByteLevel"}}, "test")->normalize(bytes);
  EXPECT_EQ(bytes, "a\xC4\xA0" "b\xC4\x8A");
}

std::string decode(const nlohmann::json& j, std::vector<std::string> tokens) {
  make_decoder(j, "test")->decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

TEST(TokenizerDecoder, LlamaChain) {
  const nlohmann::json j = {
      {"type", "Sequence"},
      {"decoders",
       {{{"type", "Replace"}, {"pattern", {{"String", kMeta}}}, {"content", " "}},
        {{"type", "ByteFallback"}},
        {{"type", "Fuse"}},
        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  EXPECT_EQ(decode(j, {kMeta + "Hello", kMeta + "world"}), "Hello world");
  EXPECT_EQ(decode(j, {kMeta, "<0xE2>", "<0x82>", "<0xAC>"}), "\xE2\x82\xAC");
  // A run that is not valid UTF-8 becomes one U+FFFD per byte, valid bytes included.
  EXPECT_EQ(decode(j, {"<0x41>", "<0xE2>", "x"}), kFffd + kFffd + "x");
  EXPECT_EQ(decode(j, {kMeta + kMeta + "a"}), " a");  // Strip removes one space only
}

TEST(TokenizerDecoder, MetaspaceAndByteLevel) {
  const nlohmann::json meta = {{"type", "Metaspace"}, {"replacement", kMeta},
                               {"prepend_scheme", "always"}};
  EXPECT_EQ(decode(meta, {kMeta + "Hey", kMeta + "friend"}), "Hey friend");
  nlohmann::json never = meta;
  never["prepend_scheme"] = "never";
  EXPECT_EQ(decode(never, {kMeta + "Hey"}), " Hey");
  const nlohmann::json bl = {{"type", "ByteLevel"}};
  EXPECT_EQ(decode(bl, {"Hello", "\xC4\xA0world", "\xC4\x8A"}), "Hello world\n");
  EXPECT_EQ(decode(bl, {"\xC3\xA2\xC4\xA2"}), kFffd);  // bytes E2 82: incomplete
  EXPECT_EQ(decode(bl, {"<|end of text|>"}), "<|end of text|>");  // ' ' not in the alphabet
}

}  // namespace
}  // namespace dspark::tok
