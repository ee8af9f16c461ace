// StreamingDecoder against decode(): on random id sequences (uniform ids, byte-fallback
// runs, multi-byte characters split across byte-level tokens, special tokens), the
// concatenation of every push() and flush() must equal decode(all ids), every piece must
// be valid UTF-8, and on ordinary text the output must flow (not pile up until flush).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {
namespace {

const std::string kTokenizers = DSPARK_SHARED_DIR "/data/tokenizers/";

const std::string kMultilingual =
    "Hello, world! caf\xC3\xA9 \xE2\x82\xAC" "42 \xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 "
    "\xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\xA6\x99\xF0\x9F\x9A\x80 \xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8"
    "\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87  spaces\n\tnew line";

void expect_stream_equals_decode(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                 bool skip_special) {
  StreamingDecoder stream(tok, skip_special);
  std::string text;
  for (const int32_t id : ids) {
    const std::string piece = stream.push(id);
    EXPECT_TRUE(tok::utf8_is_valid(piece));
    text += piece;
  }
  const std::string rest = stream.flush();
  EXPECT_TRUE(tok::utf8_is_valid(rest));
  text += rest;
  ASSERT_EQ(text, tok.decode(ids, skip_special)) << "ids: " << ::testing::PrintToString(ids);
}

// Random sequences drawn from several sources, mixed within one sequence.
std::vector<int32_t> random_ids(const Tokenizer& tok, const std::vector<int32_t>& text_ids,
                                std::mt19937& rng) {
  const auto vocab = static_cast<int32_t>(tok.vocab_size());
  std::vector<int32_t> byte_ids, special_ids;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    if (const auto id = tok.token_to_id(name)) byte_ids.push_back(*id);
  }
  for (int32_t id = 0; id < vocab; ++id) {
    if (tok.is_special(id)) special_ids.push_back(id);
  }
  std::uniform_int_distribution<int> length(1, 40), source(0, 9);
  std::vector<int32_t> ids;
  const int n = length(rng);
  for (int i = 0; i < n; ++i) {
    const int s = source(rng);
    if (s < 3) {
      ids.push_back(std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng));
    } else if (s < 5 && !byte_ids.empty()) {
      // A run of 1-4 byte tokens, often a real UTF-8 character.
      const int run = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int k = 0; k < run; ++k) {
        ids.push_back(byte_ids[std::uniform_int_distribution<size_t>(0, byte_ids.size() - 1)(rng)]);
      }
    } else if (s < 6 && !special_ids.empty()) {
      ids.push_back(special_ids[std::uniform_int_distribution<size_t>(0, special_ids.size() - 1)(rng)]);
    } else {
      // A slice of real multilingual text (characters split across tokens included).
      const size_t start = std::uniform_int_distribution<size_t>(0, text_ids.size() - 1)(rng);
      const size_t len = std::uniform_int_distribution<size_t>(1, 6)(rng);
      for (size_t k = start; k < std::min(text_ids.size(), start + len); ++k) ids.push_back(text_ids[k]);
    }
  }
  return ids;
}

void check_random(const std::string& path, uint32_t seed) {
  const Tokenizer tok = Tokenizer::from_file(path);
  const auto text_ids = tok.encode(kMultilingual);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 300; ++trial) {
    const auto ids = random_ids(tok, text_ids, rng);
    expect_stream_equals_decode(tok, ids, /*skip_special=*/true);
    expect_stream_equals_decode(tok, ids, /*skip_special=*/false);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(StreamingDecoder, Gpt2RandomSequencesEqualDecode) {
  check_random(kTokenizers + "gpt-2/tokenizer.json", 1);
}

TEST(StreamingDecoder, LlamaSpmRandomSequencesEqualDecode) {
  check_random(kTokenizers + "llama-spm/tokenizer.json", 2);
}

TEST(StreamingDecoder, Stories260kRandomSequencesEqualDecode) {
  check_random(DSPARK_SHARED_DIR "/data/models/stories260K-hf/tokenizer.json", 3);
}

// On well-formed text the stream keeps up: after each id, all but max_lag bytes of the
// text decoded so far have been emitted.
void check_flows(const std::string& path, const std::string& input, size_t max_lag_allowed) {
  const Tokenizer tok = Tokenizer::from_file(path);
  const auto ids = tok.encode(input);
  StreamingDecoder stream(tok);
  std::string text;
  size_t max_lag = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    text += stream.push(ids[i]);
    const std::string full = tok.decode(std::span(ids.data(), i + 1));
    ASSERT_LE(text.size(), full.size());
    EXPECT_EQ(full.compare(0, text.size(), text), 0);
    max_lag = std::max(max_lag, full.size() - text.size());
  }
  EXPECT_LE(max_lag, max_lag_allowed);
  text += stream.flush();
  EXPECT_EQ(text, input);
}

// Byte-level: a character split across tokens is held back, nothing more (<= 4 bytes).
TEST(StreamingDecoder, Gpt2OutputFlows) {
  check_flows(kTokenizers + "gpt-2/tokenizer.json", kMultilingual, 4);
}

// SentencePiece-style: a run of <0xNN> tokens can only be decided when it ends (one bad
// byte turns the whole run into U+FFFD), so runs are held back whole; text the vocabulary
// covers flows token by token.
TEST(StreamingDecoder, LlamaSpmOutputFlows) {
  const std::string path = kTokenizers + "llama-spm/tokenizer.json";
  check_flows(path, "Once upon a time, there was a little girl.\nShe said: \"Hi!\"", 1);  // "\n" is <0x0A>
  check_flows(path, kMultilingual, 24);  // longest byte run here: 🦙🚀 and Devanagari
}

TEST(StreamingDecoder, LlamaLeadingSpaceIsStrippedOnceOnly) {
  const Tokenizer tok = Tokenizer::from_file(kTokenizers + "llama-spm/tokenizer.json");
  const auto ids = tok.encode("Hello world");  // "▁Hello", "▁world"
  StreamingDecoder stream(tok);
  EXPECT_EQ(stream.push(ids[0]), "Hello");
  EXPECT_EQ(stream.push(ids[1]), " world");
  EXPECT_EQ(stream.flush(), "");
  // BOS first (skipped) does not change that.
  StreamingDecoder with_bos(tok);
  EXPECT_EQ(with_bos.push(1), "");
  EXPECT_EQ(with_bos.push(ids[0]), "Hello");
}

}  // namespace
}  // namespace dspark
