// token_bytes() on real tokenizers: the scheme decode() agrees with, roles of special ids,
// and the bytes of any token sequence concatenating to what decode() returns.
#include "structured/token_bytes.h"

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_utf8.h"
#include "structured/json_samples.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

struct Case {
  const char* name;
  fs::path path;
  bool is_dir;
  TokenByteScheme scheme;
};

std::vector<Case> cases() {
  return {
      {"tiny-target", test::tiny_target_dir(), true, TokenByteScheme::kByteLevel},
      {"stories260K", test::stories260k_dir(), true, TokenByteScheme::kSentencePiece},
      {"gpt-2", test::gpt2_tokenizer_json(), false, TokenByteScheme::kByteLevel},
      {"llama-spm", test::llama_spm_tokenizer_json(), false, TokenByteScheme::kSentencePiece},
  };
}

Tokenizer load(const Case& c) {
  return c.is_dir ? Tokenizer::from_dir(c.path) : Tokenizer::from_file(c.path);
}

// The EOS ids a server would use: the configured ones, else "<|endoftext|>" / "</s>".
std::vector<int32_t> eos_of(const Tokenizer& tok) {
  if (!tok.eos_ids().empty()) return tok.eos_ids();
  for (const char* name : {"<|endoftext|>", "</s>"}) {
    if (auto id = tok.token_to_id(name)) return {*id};
  }
  return {};
}

TEST(TokenBytes, SchemeRolesAndSingleBytes) {
  for (const Case& c : cases()) {
    if (!fs::exists(c.path)) continue;
    SCOPED_TRACE(c.name);
    const Tokenizer tok = load(c);
    const std::vector<int32_t> eos = eos_of(tok);
    ASSERT_FALSE(eos.empty());
    const TokenBytes tb = token_bytes(tok, tok.vocab_size(), eos);
    EXPECT_EQ(tb.scheme, c.scheme);
    EXPECT_EQ(tb.num_disagreeing, 0);
    ASSERT_EQ(tb.size(), tok.vocab_size());
    std::vector<bool> single(256, false);
    for (int32_t id = 0; id < tb.size(); ++id) {
      const bool is_eos = std::find(eos.begin(), eos.end(), id) != eos.end();
      if (is_eos) {
        EXPECT_EQ(tb.roles[id], TokenRole::kEos);
      } else if (tok.is_special(id)) {
        EXPECT_EQ(tb.roles[id], TokenRole::kNone) << id;
      } else {
        EXPECT_EQ(tb.roles[id], TokenRole::kText) << id;
      }
      if (tb.roles[id] == TokenRole::kText) {
        EXPECT_FALSE(tb.bytes[id].empty());
        if (tb.bytes[id].size() == 1) single[static_cast<uint8_t>(tb.bytes[id][0])] = true;
      } else {
        EXPECT_TRUE(tb.bytes[id].empty());
      }
    }
    // Byte-level alphabets and byte fallback both cover every byte: the grammar can
    // always be followed byte by byte.
    for (int b = 0; b < 256; ++b) EXPECT_TRUE(single[b]) << "no token for byte " << b;
  }
}

TEST(TokenBytes, PaddingRowsAreNeverText) {
  const Tokenizer tok = Tokenizer::from_dir(test::tiny_target_dir());
  const int64_t n = tok.vocab_size() + 70;
  const std::vector<int32_t> eos = {0, static_cast<int32_t>(n + 5)};  // out of range: ignored
  const TokenBytes tb = token_bytes(tok, n, eos);
  ASSERT_EQ(tb.size(), n);
  for (int64_t id = tok.vocab_size(); id < n; ++id) EXPECT_EQ(tb.roles[id], TokenRole::kNone);
  EXPECT_EQ(tb.roles[0], TokenRole::kEos);
}

std::string concat(const TokenBytes& tb, const std::vector<int32_t>& ids) {
  std::string out;
  for (const int32_t id : ids) out += tb.bytes[id];
  return out;
}

TEST(TokenBytes, EncodedJsonConcatenatesToItsText) {
  for (const Case& c : cases()) {
    if (!fs::exists(c.path)) continue;
    SCOPED_TRACE(c.name);
    const Tokenizer tok = load(c);
    const TokenBytes tb = token_bytes(tok, tok.vocab_size(), eos_of(tok));
    test::RandomJson gen(7);
    for (int i = 0; i < 200; ++i) {
      const std::string text = gen.object();
      const std::vector<int32_t> ids = tok.encode(text);
      const std::string bytes = concat(tb, ids);
      // SentencePiece normalizers (and GPT-2's add_prefix_space) prepend a space.
      EXPECT_TRUE(bytes == text || bytes == " " + text) << bytes << " vs " << text;
    }
  }
}

// Random text-token sequences: decode() equals the concatenated bytes, up to what decode
// itself adds (U+FFFD for broken UTF-8, the SentencePiece leading-space strip).
TEST(TokenBytes, RandomSequencesDecodeToTheirBytes) {
  for (const Case& c : cases()) {
    if (!fs::exists(c.path)) continue;
    SCOPED_TRACE(c.name);
    const Tokenizer tok = load(c);
    const TokenBytes tb = token_bytes(tok, tok.vocab_size(), eos_of(tok));
    std::vector<int32_t> text_ids;
    for (int32_t id = 0; id < tb.size(); ++id) {
      if (tb.roles[id] == TokenRole::kText) text_ids.push_back(id);
    }
    std::mt19937_64 rng(11);
    int num_compared = 0;
    for (int i = 0; i < 3000; ++i) {
      std::vector<int32_t> ids(1 + rng() % 6);
      for (int32_t& id : ids) id = text_ids[rng() % text_ids.size()];
      const std::string bytes = concat(tb, ids);
      const std::string decoded = tok.decode(ids);
      if (c.scheme == TokenByteScheme::kByteLevel) {
        std::string lossy;
        tok::utf8_append_lossy(lossy, bytes);
        EXPECT_EQ(decoded, lossy);
        ++num_compared;
      } else if (tok::utf8_is_valid(bytes)) {
        EXPECT_TRUE(decoded == bytes || " " + decoded == bytes) << bytes << " vs " << decoded;
        ++num_compared;
      }
    }
    EXPECT_GT(num_compared, 1000);
  }
}

}  // namespace
}  // namespace dspark
