// Generation under the constraint, simulated on real vocabularies: from an empty output,
// pick allowed tokens (seeded random, or lowest id) for a while, then tokens that follow
// completion(); the mask is never empty before the object is complete, the result parses
// as a JSON object, and after completion only EOS is allowed. Plus the speculative
// decoding calls: valid_prefix_length, mask, mask_rows.
#include "structured/grammar_constraint.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/tokenizer.h"
#include "structured/json_samples.h"
#include "structured/schema_samples.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

using test::eos_of;

using test::parses_as_object;

std::vector<int32_t> set_bits(std::span<const uint64_t> mask, int64_t n) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < n; ++id) {
    if (token_mask_allows(mask, id)) ids.push_back(id);
  }
  return ids;
}

enum class Policy { kRandom, kLowestId };

struct Walk {
  std::vector<int32_t> ids;
  std::string bytes;
};

// num_free tokens chosen by policy, then tokens whose bytes are a prefix of completion()
// (longest first) until the object is complete; asserts a non-empty mask at every step.
Walk generate(const TokenMasker& masker, const JsonMatcherOptions& options, Policy policy,
              int num_free, std::mt19937_64& rng) {
  const TokenBytes& vocab = masker.vocabulary();
  GrammarConstraint c(masker, options);
  Walk walk;
  for (int step = 0; !c.complete(); ++step) {
    const std::vector<int32_t> allowed = set_bits(c.allowed_tokens({}), masker.num_logits());
    EXPECT_FALSE(allowed.empty()) << "dead end after " << walk.bytes;
    if (allowed.empty()) return walk;
    int32_t next = -1;
    if (step < num_free) {
      next = policy == Policy::kRandom ? allowed[rng() % allowed.size()] : allowed.front();
    } else {
      const std::string tail = c.matcher().completion();
      for (const int32_t id : allowed) {
        const std::string& b = vocab.bytes[id];
        if (vocab.roles[id] == TokenRole::kText && tail.compare(0, b.size(), b) == 0 &&
            (next < 0 || b.size() > vocab.bytes[next].size())) {
          next = id;
        }
      }
      EXPECT_GE(next, 0) << "no allowed token continues the completion " << tail;
      if (next < 0) return walk;
    }
    EXPECT_TRUE(c.accept_token(next));
    walk.ids.push_back(next);
    walk.bytes += vocab.bytes[next];
    EXPECT_LT(step, num_free + 10000) << "the completion does not end";
    if (step >= num_free + 10000) return walk;
  }
  // Complete: only EOS.
  const std::vector<int32_t> allowed = set_bits(c.allowed_tokens({}), masker.num_logits());
  std::vector<int32_t> eos;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.roles[id] == TokenRole::kEos) eos.push_back(id);
  }
  EXPECT_EQ(allowed, eos);
  return walk;
}

void random_walks(const char* name, const Tokenizer& tok, int num_walks) {
  SCOPED_TRACE(name);
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), eos_of(tok)));
  const bool byte_level = masker.vocabulary().scheme == TokenByteScheme::kByteLevel;
  std::mt19937_64 rng(2024);
  for (int w = 0; w < num_walks; ++w) {
    // Tight limits on some walks, so that the depth and whitespace limits are reached.
    JsonMatcherOptions options;
    if (w % 3 == 1) options.max_depth = 2;
    if (w % 4 == 2) options.max_whitespace_run = 1;
    const Policy policy = w % 10 == 9 ? Policy::kLowestId : Policy::kRandom;
    const int num_free = static_cast<int>(rng() % 300);
    const Walk walk = generate(masker, options, policy, num_free, rng);
    ASSERT_TRUE(parses_as_object(walk.bytes)) << walk.bytes;
    // What the client sees: decode() of the ids (byte-level: exactly these bytes).
    const std::string text = tok.decode(walk.ids, true);
    EXPECT_TRUE(parses_as_object(text)) << text;
    if (byte_level) {
      EXPECT_EQ(text, walk.bytes);
    }
  }
}

TEST(GrammarConstraint, RandomWalksTinyTarget) {
  random_walks("tiny-target", Tokenizer::from_dir(test::tiny_target_dir()), 300);
}

TEST(GrammarConstraint, RandomWalksStories260K) {
  if (!fs::exists(test::stories260k_dir())) GTEST_SKIP() << "no stories260K";
  random_walks("stories260K", Tokenizer::from_dir(test::stories260k_dir()), 300);
}

class GrammarConstraintTiny : public ::testing::Test {
 protected:
  GrammarConstraintTiny()
      : tok_(Tokenizer::from_dir(test::tiny_target_dir())),
        masker_(token_bytes(tok_, tok_.vocab_size(), eos_of(tok_))) {}

  std::vector<int32_t> ids(const std::string& text) const { return tok_.encode(text); }

  // The masked row for the state after text, by the reference.
  std::vector<float> expected_row(const JsonMatcher& state, const std::vector<float>& row) const {
    std::vector<uint64_t> bits(masker_.num_words());
    reference::allowed_tokens(masker_.vocabulary(), state, bits);
    std::vector<float> out = row;
    for (int32_t id = 0; id < masker_.num_logits(); ++id) {
      if (!token_mask_allows(bits, id)) out[id] = -std::numeric_limits<float>::infinity();
    }
    return out;
  }

  Tokenizer tok_;
  TokenMasker masker_;
};

TEST_F(GrammarConstraintTiny, AcceptTokenAndEos) {
  GrammarConstraint c(masker_);
  const int32_t eos = tok_.eos_ids().at(0);
  EXPECT_FALSE(c.accept_token(eos));
  const std::vector<int32_t> text = ids(R"({"answer": 42})");
  for (size_t i = 0; i < text.size(); ++i) {
    EXPECT_FALSE(c.complete());
    ASSERT_TRUE(c.accept_token(text[i])) << i;
  }
  EXPECT_TRUE(c.complete());
  const JsonMatcher done = c.matcher();
  EXPECT_FALSE(c.accept_token(text[0]));
  EXPECT_EQ(c.matcher(), done);
  EXPECT_TRUE(c.accept_token(eos));
  EXPECT_TRUE(c.complete());
  // Special tokens other than EOS are never accepted.
  GrammarConstraint fresh(masker_);
  EXPECT_FALSE(fresh.accept_token(1));
  EXPECT_FALSE(fresh.accept_token(2));
  EXPECT_FALSE(fresh.accept_token(-3));
  EXPECT_FALSE(fresh.accept_token(static_cast<int32_t>(masker_.num_logits())));
}

TEST_F(GrammarConstraintTiny, ValidPrefixLengthCutsAtTheFirstBadDraft) {
  GrammarConstraint c(masker_);
  ASSERT_TRUE(c.accept_token(ids("{")[0]));
  std::vector<int32_t> drafts = ids(R"("key": [1, 2)");
  const int32_t num_good = static_cast<int32_t>(drafts.size());
  EXPECT_EQ(c.valid_prefix_length(drafts), num_good);
  const std::vector<int32_t> bad = ids("}");  // closes an object while an array is open
  drafts.insert(drafts.end(), bad.begin(), bad.end());
  drafts.push_back(ids("]")[0]);
  EXPECT_EQ(c.valid_prefix_length(drafts), num_good);
  EXPECT_EQ(c.valid_prefix_length({}), 0);
  // valid_prefix_length does not move the constraint.
  JsonMatcher expected;
  ASSERT_TRUE(expected.advance("{"));
  EXPECT_EQ(c.matcher(), expected);
}

TEST_F(GrammarConstraintTiny, MaskAndMaskRowsMatchTheReferencePerPosition) {
  GrammarConstraint c(masker_);
  const std::vector<int32_t> prefix = ids(R"({"a": "x)");
  for (const int32_t id : prefix) ASSERT_TRUE(c.accept_token(id));
  const std::vector<int32_t> drafts = ids(R"(y", "b": [true, {"c": -1.5e3}]})");
  ASSERT_EQ(c.valid_prefix_length(drafts), static_cast<int32_t>(drafts.size()));
  const int64_t n = masker_.num_logits();
  const int64_t stride = n + 3;  // rows wider than the vocabulary (padding columns untouched)
  std::mt19937_64 rng(1);
  std::vector<float> logits(static_cast<size_t>((drafts.size() + 1) * stride));
  for (float& x : logits) x = static_cast<float>(rng() % 1000) / 100.0f;
  std::vector<float> rows = logits;
  c.mask_rows(rows.data(), stride, drafts);
  JsonMatcher state = c.matcher();
  for (size_t j = 0; j <= drafts.size(); ++j) {
    const std::vector<float> row(logits.begin() + static_cast<std::ptrdiff_t>(j * stride),
                                 logits.begin() + static_cast<std::ptrdiff_t>(j * stride + n));
    const std::vector<float> want = expected_row(state, row);
    const std::vector<float> got(rows.begin() + static_cast<std::ptrdiff_t>(j * stride),
                                 rows.begin() + static_cast<std::ptrdiff_t>(j * stride + n));
    EXPECT_EQ(got, want) << "row " << j;
    for (int64_t p = n; p < stride; ++p) EXPECT_EQ(rows[j * stride + p], logits[j * stride + p]);
    // mask() of one row gives the same.
    std::vector<float> single = row;
    c.mask(single.data(), std::span<const int32_t>(drafts).first(j));
    EXPECT_EQ(single, want) << "row " << j;
    if (j < drafts.size()) {
      ASSERT_TRUE(masker_.advance(state, drafts[j]));
    }
  }
  EXPECT_TRUE(state.complete());
  // The last row, after the closing brace: EOS only.
  const float* last = rows.data() + drafts.size() * stride;
  for (int64_t id = 0; id < n; ++id) EXPECT_EQ(std::isfinite(last[id]), id == tok_.eos_ids()[0]);
}

TEST_F(GrammarConstraintTiny, MaskingAfterAnInvalidDraftThrows) {
  GrammarConstraint c(masker_);
  std::vector<float> row(masker_.num_logits(), 0.0f);
  const std::vector<int32_t> bad = ids("[");
  EXPECT_THROW(c.mask(row.data(), bad), Error);
  std::vector<float> rows(2 * row.size(), 0.0f);
  EXPECT_THROW(c.mask_rows(rows.data(), masker_.num_logits(), bad), Error);
}

// json_schema through the same constraint: random then completion-following tokens; the
// output parses and validates against the schema, only EOS is allowed once complete, and
// speculation's calls agree (valid_prefix_length cuts at the first draft the schema
// refuses; mask_rows row j equals mask() after j drafts).
TEST_F(GrammarConstraintTiny, SchemaWalksValidateAndSpeculationCallsAgree) {
  const TokenBytes& vocab = masker_.vocabulary();
  std::mt19937_64 rng(99);
  for (const auto& sample : test::sample_schemas()) {
    SCOPED_TRACE(sample.name);
    const auto schema = compile_json_schema_text(sample.text);
    const test::SchemaOracle oracle(nlohmann::ordered_json::parse(sample.text));
    for (int w = 0; w < 20; ++w) {
      GrammarConstraint c(masker_, schema);
      std::vector<int32_t> out;
      const int num_free = static_cast<int>(rng() % 80);
      for (int step = 0; !c.complete() && step < num_free + 5000; ++step) {
        const std::vector<int32_t> allowed = set_bits(c.allowed_tokens({}), masker_.num_logits());
        ASSERT_FALSE(allowed.empty()) << "dead end after " << tok_.decode(out, true);
        int32_t next = -1;
        if (step < num_free) {
          next = allowed[rng() % allowed.size()];
        } else {
          const std::string tail = c.completion();
          for (const int32_t id : allowed) {
            const std::string& b = vocab.bytes[id];
            if (vocab.roles[id] == TokenRole::kText && tail.compare(0, b.size(), b) == 0 &&
                (next < 0 || b.size() > vocab.bytes[next].size())) {
              next = id;
            }
          }
          ASSERT_GE(next, 0) << "no allowed token continues " << tail;
        }
        ASSERT_TRUE(c.accept_token(next));
        out.push_back(next);
      }
      ASSERT_TRUE(c.complete());
      const std::string text = tok_.decode(out, true);
      nlohmann::json value;
      ASSERT_NO_THROW(value = nlohmann::json::parse(text)) << text;
      EXPECT_TRUE(oracle.valid(value)) << text;
      EXPECT_EQ(set_bits(c.allowed_tokens({}), masker_.num_logits()), tok_.eos_ids());
      // Replay: drafts = the whole output plus one refused token.
      GrammarConstraint replay(masker_, schema);
      std::vector<int32_t> drafts = out;
      drafts.push_back(ids("}")[0]);
      EXPECT_EQ(replay.valid_prefix_length(drafts), static_cast<int32_t>(out.size()));
      const std::span<const int32_t> some = std::span<const int32_t>(out).first(std::min<size_t>(out.size(), 4));
      const int64_t n = masker_.num_logits();
      std::vector<float> rows(static_cast<size_t>((some.size() + 1) * n), 1.0f);
      replay.mask_rows(rows.data(), n, some);
      for (size_t j = 0; j <= some.size(); ++j) {
        std::vector<float> single(static_cast<size_t>(n), 1.0f);
        replay.mask(single.data(), some.first(j));
        EXPECT_TRUE(std::equal(single.begin(), single.end(), rows.begin() + static_cast<std::ptrdiff_t>(j * n)));
      }
    }
  }
  GrammarConstraint c(masker_, compile_json_schema_text(R"({"type": "object"})"));
  EXPECT_THROW(c.matcher(), Error);  // a schema constraint has no json_object state
  EXPECT_THROW(GrammarConstraint(masker_, std::shared_ptr<const CompiledJsonSchema>()), Error);
  EXPECT_THROW(GrammarConstraint(masker_, std::shared_ptr<const CompiledRegex>()), Error);
}

}  // namespace
}  // namespace dspark
