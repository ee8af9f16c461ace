// DSparkProposer with a request bound to a grammar (DraftRequest::grammar, as structured
// output gives one): every draft is the drafter's choice among the tokens the grammar
// allows after the drafts before it, the grammar is asked with exactly those drafts, the
// draft stops where no allowed token is left, and a sampled draft's q puts nothing on a
// refused token.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "spec/dspark_proposer.h"
#include "spec/dspark_proposer_fixtures.h"

namespace dspark {
namespace {

using testing::DrafterSetup;
using testing::greedy_params;
using testing::make_proposer;
using testing::observe;
using testing::random_context;
using testing::random_tokens;
using testing::setup;

// Refuses, at draft position j, the token refused[j]; from position stop_at on, everything.
class RefusingGrammar final : public TokenGrammar {
 public:
  RefusingGrammar(std::vector<int32_t> refused, int64_t vocab, size_t stop_at)
      : refused_(std::move(refused)), bits_(static_cast<size_t>((vocab + 63) / 64)), vocab_(vocab),
        stop_at_(stop_at) {}

  std::span<const uint64_t> allowed_tokens(std::span<const int32_t> drafts_before) override {
    calls.emplace_back(drafts_before.begin(), drafts_before.end());
    const size_t j = drafts_before.size();
    std::fill(bits_.begin(), bits_.end(), 0);
    if (j < stop_at_) {
      for (int64_t t = 0; t < vocab_; ++t) bits_[static_cast<size_t>(t >> 6)] |= uint64_t{1} << (t & 63);
      if (j < refused_.size()) bits_[static_cast<size_t>(refused_[j] >> 6)] &= ~(uint64_t{1} << (refused_[j] & 63));
    }
    return bits_;
  }

  std::vector<std::vector<int32_t>> calls;

 private:
  std::vector<int32_t> refused_;
  std::vector<uint64_t> bits_;
  int64_t vocab_;
  size_t stop_at_;
};

TEST(DSparkGrammar, GreedyDraftsAreTheBestAllowedTokensAndStopWhereNoneIs) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  auto p = make_proposer(s, DType::kF32);
  const int64_t vocab = s.target.vocab_size;
  const SamplingParams sp = greedy_params();
  const auto ctx = random_context(s, 6, 31);
  const auto tokens = random_tokens(7, 32);
  observe(*p, 0, ctx, 0, 6);
  Draft free;
  const DraftRequest unbound{0, tokens, &sp, nullptr, 10};
  p->propose({&unbound, 1}, {&free, 1});
  const std::vector<int32_t> free_tokens(free.tokens.begin(), free.tokens.end());
  ASSERT_EQ(free_tokens.size(), 4u);

  // Refuse the drafter's own first choice at every position; nothing from position 3.
  RefusingGrammar grammar(free_tokens, vocab, 3);
  DraftRequest bound{0, tokens, &sp, nullptr, 10};
  bound.grammar = &grammar;
  Draft draft;
  p->propose({&bound, 1}, {&draft, 1});
  const std::vector<int32_t> drafts(draft.tokens.begin(), draft.tokens.end());
  ASSERT_EQ(drafts.size(), 3u);
  // Row j (with the Markov term for the bound drafts before it) decides draft j: its
  // argmax once the refused token is out (lower id first on ties).
  const std::span<const float> logits = p->inspect(0).logits;
  ASSERT_EQ(logits.size(), static_cast<size_t>(3 * vocab));
  for (size_t j = 0; j < 3; ++j) {
    int64_t best = -1;
    for (int64_t t = 0; t < vocab; ++t) {
      if (t == free_tokens[j]) continue;
      if (best < 0 || logits[j * vocab + t] > logits[j * vocab + best]) best = t;
    }
    EXPECT_EQ(drafts[j], best) << j;
    EXPECT_NE(drafts[j], free_tokens[j]) << j;
  }
  ASSERT_EQ(grammar.calls.size(), 4u);  // positions 0..3; position 3 allows nothing
  for (size_t j = 0; j < grammar.calls.size(); ++j) {
    const std::vector<int32_t> before(drafts.begin(), drafts.begin() + static_cast<std::ptrdiff_t>(j));
    EXPECT_EQ(grammar.calls[j], before) << j;
  }
}

TEST(DSparkGrammar, ASampledDraftsQHasNothingOnARefusedToken) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  auto p = make_proposer(s, DType::kF32);
  const int64_t vocab = s.target.vocab_size;
  const auto ctx = random_context(s, 6, 41);
  const auto tokens = random_tokens(7, 42);
  observe(*p, 0, ctx, 0, 6);
  SamplingParams sp;
  sp.temperature = 1.0f;
  Rng rng(3);
  // Refuse the most likely token of every unconstrained row.
  Draft free;
  const DraftRequest unbound{0, tokens, &sp, &rng, 4};
  p->propose({&unbound, 1}, {&free, 1});
  ASSERT_EQ(free.tokens.size(), 4u);
  std::vector<int32_t> refused;
  for (int64_t j = 0; j < 4; ++j) {
    const float* q = free.probs + j * vocab;
    refused.push_back(static_cast<int32_t>(std::max_element(q, q + vocab) - q));
  }
  RefusingGrammar grammar(refused, vocab, 4);
  Rng rng2(3);
  DraftRequest bound{0, tokens, &sp, &rng2, 4};
  bound.grammar = &grammar;
  Draft draft;
  p->propose({&bound, 1}, {&draft, 1});
  ASSERT_EQ(draft.tokens.size(), 4u);
  ASSERT_NE(draft.probs, nullptr);
  for (int64_t j = 0; j < 4; ++j) {
    const float* q = draft.probs + j * vocab;
    EXPECT_EQ(q[refused[j]], 0.0f) << j;
    double sum = 0;
    for (int64_t t = 0; t < vocab; ++t) sum += q[t];
    EXPECT_NEAR(sum, 1.0, 1e-4) << j;
    EXPECT_NE(draft.tokens[j], refused[j]) << j;
    EXPECT_GT(q[draft.tokens[j]], 0.0f) << j;
  }
}

}  // namespace
}  // namespace dspark
