// The trie mask against the token-by-token reference, bit for bit, on many grammar states
// (prefixes of random valid objects, random token walks, complete states) and real
// vocabularies; apply_token_mask; and the mask time per step.
#include "structured/token_mask.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "tokenizer/tokenizer.h"
#include "structured/json_samples.h"
#include "structured/schema_samples.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

using test::eos_of;

// Grammar states worth masking: every kind of mode, various depths.
std::vector<JsonMatcher> sample_states(int num_docs, uint64_t seed) {
  std::vector<JsonMatcher> states;
  std::mt19937_64 rng(seed);
  test::RandomJson gen(seed, 6);
  states.push_back(JsonMatcher());
  for (int i = 0; i < num_docs; ++i) {
    const std::string doc = gen.object();
    JsonMatcher m;
    const size_t cut = rng() % (doc.size() + 1);
    EXPECT_TRUE(m.advance(std::string_view(doc).substr(0, cut))) << doc;
    states.push_back(m);
    if (i % 50 == 0) {  // and the complete one
      JsonMatcher whole;
      EXPECT_TRUE(whole.advance(doc));
      states.push_back(whole);
    }
  }
  // The limits' own states: at max depth, at the end of a whitespace run.
  JsonMatcher deep;
  for (int d = 0; d < JsonMatcher::kMaxDepthLimit; ++d) EXPECT_TRUE(deep.advance("{\"k\":"));
  states.push_back(deep);
  JsonMatcher spaced;
  EXPECT_TRUE(spaced.advance("{\"k\":" + std::string(16, ' ')));
  states.push_back(spaced);
  return states;
}

void expect_trie_equals_reference(const char* name, const Tokenizer& tok, int num_docs) {
  SCOPED_TRACE(name);
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), eos_of(tok)));
  const std::vector<JsonMatcher> states = sample_states(num_docs, 99);
  std::vector<uint64_t> trie(masker.num_words()), ref(masker.num_words());
  int num_empty = 0;
  for (size_t i = 0; i < states.size(); ++i) {
    masker.allowed_tokens(states[i], trie);
    reference::allowed_tokens(masker.vocabulary(), states[i], ref);
    ASSERT_EQ(trie, ref) << "state " << i;
    bool any = false;
    for (const uint64_t w : trie) any |= w != 0;
    num_empty += !any;
  }
  EXPECT_EQ(num_empty, 0);
  // Random token walks reach states the byte-level samples may not (mid-token cuts).
  std::mt19937_64 rng(5);
  for (int walk = 0; walk < 40; ++walk) {
    JsonMatcher m;
    for (int step = 0; step < 40 && !m.complete(); ++step) {
      masker.allowed_tokens(m, trie);
      reference::allowed_tokens(masker.vocabulary(), m, ref);
      ASSERT_EQ(trie, ref) << "walk " << walk << " step " << step;
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < masker.num_logits(); ++id) {
        if (token_mask_allows(trie, id)) allowed.push_back(id);
      }
      ASSERT_FALSE(allowed.empty());
      ASSERT_TRUE(masker.advance(m, allowed[rng() % allowed.size()]));
    }
  }
}

TEST(TokenMask, TrieEqualsReferenceTinyTarget) {
  expect_trie_equals_reference("tiny-target", Tokenizer::from_dir(test::tiny_target_dir()), 600);
}

TEST(TokenMask, TrieEqualsReferenceStories260K) {
  if (!fs::exists(test::stories260k_dir())) GTEST_SKIP() << "no stories260K";
  expect_trie_equals_reference("stories260K", Tokenizer::from_dir(test::stories260k_dir()), 600);
}

TEST(TokenMask, TrieEqualsReferenceGpt2) {
  if (!fs::exists(test::gpt2_tokenizer_json())) GTEST_SKIP() << "no gpt-2 tokenizer";
  expect_trie_equals_reference("gpt-2", Tokenizer::from_file(test::gpt2_tokenizer_json()), 150);
}

// Schema states: for every sample schema, byte walks (states inside tokens, inside strings
// with and without maxLength, enum values, property names) and token walks.
std::vector<SchemaMatcher> schema_states(const CompiledJsonSchema& schema, int num_walks, uint64_t seed) {
  std::vector<SchemaMatcher> states;
  std::mt19937_64 rng(seed);
  for (int walk = 0; walk < num_walks; ++walk) {
    SchemaMatcher m(schema);
    const int steps = static_cast<int>(rng() % 60);
    for (int step = 0; step < steps && !m.complete(); ++step) {
      std::vector<uint8_t> ok;
      for (int b = 0; b < 256; ++b) {
        if (SchemaMatcher(m).advance(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
      }
      const uint8_t c = rng() % 3 ? static_cast<uint8_t>(m.completion()[0]) : ok[rng() % ok.size()];
      EXPECT_TRUE(m.advance(c));
    }
    states.push_back(m);
  }
  return states;
}

void expect_schema_trie_equals_reference(const char* name, const Tokenizer& tok, int num_walks) {
  SCOPED_TRACE(name);
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), eos_of(tok)));
  std::vector<uint64_t> trie(masker.num_words()), ref(masker.num_words());
  std::mt19937_64 rng(17);
  int num_plain = 0;
  for (const auto& sample : test::sample_schemas()) {
    SCOPED_TRACE(sample.name);
    const auto schema = compile_json_schema_text(sample.text);
    for (const SchemaMatcher& state : schema_states(*schema, num_walks, 23)) {
      masker.allowed_tokens(state, trie);
      reference::allowed_tokens(masker.vocabulary(), state, ref);
      ASSERT_EQ(trie, ref);
      num_plain += state.in_plain_string();
    }
    for (int walk = 0; walk < num_walks; ++walk) {
      SchemaMatcher m(*schema);
      for (int step = 0; step < 30; ++step) {
        masker.allowed_tokens(m, trie);
        reference::allowed_tokens(masker.vocabulary(), m, ref);
        ASSERT_EQ(trie, ref) << "walk " << walk << " step " << step;
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < masker.num_logits(); ++id) {
          if (token_mask_allows(trie, id)) allowed.push_back(id);
        }
        ASSERT_FALSE(allowed.empty()) << "no token allowed";
        if (m.complete()) break;
        num_plain += m.in_plain_string();
        ASSERT_TRUE(masker.advance(m, allowed[rng() % allowed.size()]));
      }
    }
  }
  EXPECT_GT(num_plain, 0);  // the precomputed in-string path was compared too
}

TEST(TokenMask, SchemaTrieEqualsReferenceTinyTarget) {
  expect_schema_trie_equals_reference("tiny-target", Tokenizer::from_dir(test::tiny_target_dir()), 12);
}

TEST(TokenMask, SchemaTrieEqualsReferenceStories260K) {
  if (!fs::exists(test::stories260k_dir())) GTEST_SKIP() << "no stories260K";
  expect_schema_trie_equals_reference("stories260K", Tokenizer::from_dir(test::stories260k_dir()), 12);
}

TEST(TokenMask, SchemaTrieEqualsReferenceGpt2) {
  if (!fs::exists(test::gpt2_tokenizer_json())) GTEST_SKIP() << "no gpt-2 tokenizer";
  expect_schema_trie_equals_reference("gpt-2", Tokenizer::from_file(test::gpt2_tokenizer_json()), 5);
}

// A hand-made vocabulary with shared prefixes, duplicates, padding and special roles.
TEST(TokenMask, SmallVocabularyByHand) {
  TokenBytes tb;
  const std::vector<std::string> bytes = {"",  "{", "{\"", "{\"a", "\"", "}", "", " ", "  ",
                                          "{\"", "a\":", "1}", "1", "x", ""};
  tb.bytes = bytes;
  tb.roles.assign(bytes.size(), TokenRole::kText);
  tb.roles[0] = TokenRole::kEos;
  tb.roles[6] = TokenRole::kNone;
  tb.roles[14] = TokenRole::kNone;
  const TokenMasker masker(tb);
  std::vector<uint64_t> mask(masker.num_words());
  auto allowed = [&](const JsonMatcher& m) {
    masker.allowed_tokens(m, mask);
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < masker.num_logits(); ++id) {
      if (token_mask_allows(mask, id)) ids.push_back(id);
    }
    return ids;
  };
  JsonMatcher m;
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1, 2, 3, 7, 8, 9}));
  ASSERT_TRUE(masker.advance(m, 9));  // {"
  // Inside the key everything but "{"a" fits ('a' after the closing quote).
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1, 2, 4, 5, 7, 8, 9, 10, 11, 12, 13}));
  ASSERT_TRUE(masker.advance(m, 10));  // a":
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1, 2, 3, 4, 7, 8, 9, 11, 12}));
  ASSERT_TRUE(masker.advance(m, 11));  // 1}
  EXPECT_TRUE(m.complete());
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{0}));
  EXPECT_TRUE(masker.advance(m, 0));
  EXPECT_FALSE(masker.advance(m, 5));
  EXPECT_FALSE(masker.advance(m, 99));
  EXPECT_FALSE(masker.advance(m, -1));
}

TEST(TokenMask, ApplySetsDisallowedToMinusInfinity) {
  const int64_t n = 130;
  std::vector<uint64_t> mask(token_mask_words(n), 0);
  for (const int32_t id : {0, 63, 64, 100, 129}) mask[id >> 6] |= uint64_t{1} << (id & 63);
  std::vector<float> logits(n + 1, 1.5f);  // one extra: must stay untouched
  apply_token_mask(mask, logits.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const bool allowed = token_mask_allows(mask, static_cast<int32_t>(i));
    if (allowed) {
      EXPECT_EQ(logits[i], 1.5f);
    } else {
      EXPECT_TRUE(std::isinf(logits[i]) && logits[i] < 0) << i;
    }
  }
  EXPECT_EQ(logits[n], 1.5f);
  // A full word is left alone, a mask too short is refused.
  std::vector<uint64_t> all(token_mask_words(n), ~uint64_t{0});
  std::vector<float> row(n, 2.0f);
  apply_token_mask(all, row.data(), n);
  for (const float x : row) EXPECT_EQ(x, 2.0f);
  EXPECT_THROW(apply_token_mask(std::span<const uint64_t>(all).first(2), row.data(), n), Error);
}

// Not a pass/fail test: the per-step cost on the embedded model's 8192-token vocabulary
// (and GPT-2's 50257), trie vs reference, over the same states: all sampled states, then
// those inside a string (the precomputed fast path) and those outside one.
TEST(TokenMask, TimePerMask) {
  struct Vocab { const char* name; fs::path path; bool is_dir; };
  for (const Vocab& v : {Vocab{"tiny-target", test::tiny_target_dir(), true},
                         Vocab{"gpt-2", test::gpt2_tokenizer_json(), false}}) {
    if (!fs::exists(v.path)) continue;
    const Tokenizer tok = v.is_dir ? Tokenizer::from_dir(v.path) : Tokenizer::from_file(v.path);
    const TokenMasker masker(token_bytes(tok, tok.vocab_size(), eos_of(tok)));
    const std::vector<JsonMatcher> all = sample_states(999, 3);
    std::vector<JsonMatcher> in_string, outside;
    for (const JsonMatcher& m : all) (m.in_string() ? in_string : outside).push_back(m);
    std::vector<uint64_t> mask(masker.num_words());
    uint64_t sink = 0;
    auto time_us = [&](const std::vector<JsonMatcher>& states, int num, bool reference) {
      using Clock = std::chrono::steady_clock;
      const auto t0 = Clock::now();
      for (int i = 0; i < num; ++i) {
        const JsonMatcher& state = states[static_cast<size_t>(i) % states.size()];
        if (reference) {
          reference::allowed_tokens(masker.vocabulary(), state, mask);
        } else {
          masker.allowed_tokens(state, mask);
        }
        sink += mask[0];
      }
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / num;
    };
    const double trie = time_us(all, 1000, false);
    const double ref = time_us(all, 200, true);
    const double trie_in = time_us(in_string, 1000, false);
    const double trie_out = time_us(outside, 1000, false);
    const double ref_in = time_us(in_string, 200, true);
    double worst = 0;  // the slowest single state, 20 masks each
    for (const JsonMatcher& m : all) worst = std::max(worst, time_us({m}, 20, false));
    std::printf("[ mask time ] %s (vocab %lld), %zu states (%zu in a string): trie %.1f us/mask, "
                "reference %.1f us/mask (%.0fx); in a string %.1f us (reference %.1f), "
                "outside %.1f us; slowest state %.1f us\n",
                v.name, static_cast<long long>(masker.num_logits()), all.size(), in_string.size(),
                trie, ref, ref / trie, trie_in, ref_in, trie_out, worst);
    RecordProperty(std::string(v.name) + "_trie_us", std::to_string(trie));
    // The same masker on json_schema states (the "person" and "maps" samples).
    std::vector<SchemaMatcher> schema_all;
    std::vector<std::shared_ptr<const CompiledJsonSchema>> keep;
    for (const auto& sample : test::sample_schemas()) {
      if (std::string(sample.name) != "person" && std::string(sample.name) != "maps") continue;
      keep.push_back(compile_json_schema_text(sample.text));
      for (const SchemaMatcher& m : schema_states(*keep.back(), 300, 4)) schema_all.push_back(m);
    }
    std::vector<SchemaMatcher> schema_in;
    for (const SchemaMatcher& m : schema_all) if (m.in_plain_string()) schema_in.push_back(m);
    auto schema_time_us = [&](const std::vector<SchemaMatcher>& states, int num) {
      using Clock = std::chrono::steady_clock;
      const auto t0 = Clock::now();
      for (int i = 0; i < num; ++i) {
        masker.allowed_tokens(states[static_cast<size_t>(i) % states.size()], mask);
        sink += mask[0];
      }
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / num;
    };
    std::printf("[ mask time ] %s json_schema: %zu states (%zu in a free string): trie %.1f us/mask, "
                "in a free string %.1f us\n",
                v.name, schema_all.size(), schema_in.size(), schema_time_us(schema_all, 1000),
                schema_in.empty() ? 0.0 : schema_time_us(schema_in, 1000));
    EXPECT_NE(sink, 1u);  // keeps the loops
  }
}

}  // namespace
}  // namespace dspark
