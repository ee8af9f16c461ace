// DSpark and DFlash drafters with a draft vocabulary (spec/draft_vocab.h): a reduced one for
// every request, or a greedy one beside the whole vocabulary, against the scalar reference
// of the full drafter.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "spec/draft_vocab.h"
#include "spec/dspark_proposer.h"
#include "spec/dspark_proposer_fixtures.h"
#include "spec/reference_drafter.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::DrafterSetup;
using testing::greedy_params;
using testing::kF32;
using testing::make_proposer;
using testing::make_setup;
using testing::observe;
using testing::proposer_options;
using testing::random_context;
using testing::random_tokens;
using testing::setup;

// A draft vocabulary (spec/draft_vocab.h), written from the full drafter, for every request
// or for greedy ones only. Where it applies, every logit it computes is the full drafter's
// for the same token (checked against the scalar reference of the full drafter), every other
// token is −∞ with q exactly 0 there, greedy drafts are the argmax over the kept tokens and a
// sampled q is the request's transform of the masked row; where it does not (a sampled
// request beside a greedy vocabulary), the rows are the full drafter's. Draft ids are listed
// out of target order, so d2t offsets go both ways. Both LM-head sources: the target's (rows
// copied from its tied or untied head) and the drafter's own.
void check_draft_vocabulary(const DrafterSetup& s, const std::string& name, DraftVocabUse use) {
  const int64_t vocab = s.target.vocab_size;
  std::vector<int32_t> kept;
  for (int32_t t = static_cast<int32_t>(vocab) - 1; t >= 0; --t) {
    if (t % 3 != 0) kept.push_back(t);
  }
  const auto v_d = static_cast<int64_t>(kept.size());
  DrafterSetup reduced = s;
  reduced.drafter_dir = testing::make_temp_dir(name);
  write_draft_vocab(s.drafter_dir, s.target_dir, kept, use, reduced.drafter_dir);
  reduced.config = DrafterConfig::from_file(reduced.drafter_dir);
  const bool greedy_only = use == DraftVocabUse::kGreedyRequests;
  ASSERT_EQ(greedy_only ? reduced.config.greedy_draft_vocab_size : reduced.config.draft_vocab_size, v_d);
  auto proposer = make_proposer(reduced, DType::kF32);
  const testing::ReferenceDrafter reference(s.drafter_dir, s.target_dir, false);
  const auto ctx = random_context(s, 9, 17);
  const auto tokens = random_tokens(10, 18);
  observe(*proposer, 0, ctx, 0, 9);
  observe(*proposer, 1, ctx, 0, 9);
  const SamplingParams greedy = greedy_params();
  SamplingParams sampled;
  sampled.temperature = 0.8f;
  sampled.top_p = 0.95f;
  sampled.repetition_penalty = 1.3f;
  Rng rng(5);
  const int32_t n = s.config.num_drafts();
  const DraftRequest requests[2] = {{0, tokens, &greedy, nullptr, n}, {1, tokens, &sampled, &rng, n}};
  Draft drafts[2];
  proposer->propose(requests, drafts);
  EXPECT_EQ(drafts[0].probs, nullptr);  // greedy: the argmax, no q
  ASSERT_NE(drafts[1].probs, nullptr);
  std::vector<float> q(vocab);
  for (int r = 0; r < 2; ++r) {
    const Draft& d = drafts[r];
    ASSERT_EQ(static_cast<int32_t>(d.tokens.size()), n);
    std::vector<int32_t> prev = {tokens.back()};
    prev.insert(prev.end(), d.tokens.begin(), d.tokens.end() - 1);
    auto expected = reference.forward(ctx, prev);
    const bool masked = r == 0 || !greedy_only;
    const int64_t head_size = masked ? v_d : vocab;
    for (int32_t j = 0; j < n; ++j) {
      float* want = expected.logits.data() + j * vocab;
      for (int64_t t = 0; t < vocab; ++t) {
        if (masked && t % 3 == 0) want[t] = -std::numeric_limits<float>::infinity();
      }
      const auto got = proposer->inspect(r);
      for (int64_t t = 0; t < vocab; ++t) {
        if (masked && t % 3 == 0) {
          EXPECT_EQ(got.logits[j * vocab + t], want[t]) << "token " << t << " outside the draft vocabulary";
          if (r == 1) {
            EXPECT_EQ(d.probs[j * vocab + t], 0.0f);
          }
        } else {
          EXPECT_NEAR(got.logits[j * vocab + t], want[t], kF32.logits) << "token " << t;
        }
      }
      ASSERT_EQ(got.base_logits.size(), static_cast<size_t>(n * head_size));
      for (int64_t i = 0; i < head_size; ++i) {
        const int64_t t = masked ? kept[i] : i;
        EXPECT_NEAR(got.base_logits[j * head_size + i], expected.base_logits[j * vocab + t], kF32.logits);
      }
      if (masked) EXPECT_NE(d.tokens[j] % 3, 0) << "draft " << j << " outside the draft vocabulary";
      if (r == 0) {
        EXPECT_EQ(d.tokens[j], argmax(want, vocab)) << "draft " << j;
        continue;
      }
      std::vector<int32_t> history = tokens;
      history.insert(history.end(), d.tokens.begin(), d.tokens.begin() + j);
      reference::to_probs(want, q.data(), vocab, sampled, history, static_cast<int64_t>(tokens.size()));
      double worst = 0;
      for (int64_t t = 0; t < vocab; ++t) worst = std::max(worst, std::abs(static_cast<double>(q[t]) - d.probs[j * vocab + t]));
      EXPECT_LT(worst, 1e-4) << "q_" << j + 1;
    }
  }
}

TEST(DSparkProposer, ReducedDraftVocabularyIsTheFullDrafterOnItsTokens) {
  constexpr DraftVocabUse kEvery = DraftVocabUse::kEveryRequest;
  check_draft_vocabulary(setup(DrafterKind::kDSpark), "reduced-vocab", kEvery);
  check_draft_vocabulary(setup(DrafterKind::kDFlash), "reduced-vocab-dflash", kEvery);
  static const DrafterSetup own = make_setup(DrafterKind::kDSpark, "reduced-own", /*own_embeddings=*/true);
  check_draft_vocabulary(own, "reduced-vocab-own", kEvery);
  static const DrafterSetup tied = make_setup(DrafterKind::kDSpark, "reduced-tied", false, /*tied_target=*/true);
  check_draft_vocabulary(tied, "reduced-vocab-tied", kEvery);
}

// Greedy requests with a logit bias draft through their transform. One that favours a token
// drafts from the whole vocabulary: a token the greedy vocabulary lacks can be what the bias
// makes the argmax. One that only bans tokens keeps the greedy vocabulary, less the banned.
TEST(DSparkProposer, BiasedGreedyRequestsDraftFromTheVocabularyTheirBiasNeeds) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  std::vector<int32_t> kept;
  for (int32_t t = 1; t < static_cast<int32_t>(s.target.vocab_size); t += 2) kept.push_back(t);
  DrafterSetup greedy_vocab = s;
  greedy_vocab.drafter_dir = testing::make_temp_dir("greedy-vocab-biased");
  write_draft_vocab(s.drafter_dir, s.target_dir, kept, DraftVocabUse::kGreedyRequests, greedy_vocab.drafter_dir);
  greedy_vocab.config = DrafterConfig::from_file(greedy_vocab.drafter_dir);
  auto proposer = make_proposer(greedy_vocab, DType::kF32);
  const auto ctx = random_context(s, 9, 17);
  const auto tokens = random_tokens(10, 18);
  for (int32_t slot = 0; slot < 3; ++slot) observe(*proposer, slot, ctx, 0, 9);
  const SamplingParams plain = greedy_params();
  const int32_t n = s.config.num_drafts();
  Draft unbiased[1];
  const DraftRequest alone[1] = {{0, tokens, &plain, nullptr, n}};
  proposer->propose(alone, unbiased);
  const int32_t banned = unbiased[0].tokens[0];
  SamplingParams favouring = plain, banning = plain;
  favouring.logit_bias = {{4, 100.0f}};  // even: outside the greedy vocabulary
  banning.logit_bias = {{banned, -100.0f}};
  const DraftRequest requests[3] = {
      {0, tokens, &plain, nullptr, n}, {1, tokens, &favouring, nullptr, n}, {2, tokens, &banning, nullptr, n}};
  Draft drafts[3];
  proposer->propose(requests, drafts);
  EXPECT_EQ(drafts[0].probs, nullptr);
  for (int32_t j = 0; j < n; ++j) EXPECT_EQ(drafts[0].tokens[j] % 2, 1) << "draft " << j << ": greedy vocabulary";
  ASSERT_NE(drafts[1].probs, nullptr) << "a biased greedy request's q is its transform, one-hot";
  ASSERT_EQ(static_cast<int32_t>(drafts[1].tokens.size()), n);
  for (int32_t j = 0; j < n; ++j) {
    EXPECT_EQ(drafts[1].tokens[j], 4) << "draft " << j;
    EXPECT_EQ(drafts[1].probs[j * s.target.vocab_size + 4], 1.0f) << "draft " << j;
  }
  ASSERT_NE(drafts[2].probs, nullptr);
  ASSERT_EQ(static_cast<int32_t>(drafts[2].tokens.size()), n);
  for (int32_t j = 0; j < n; ++j) {
    EXPECT_EQ(drafts[2].tokens[j] % 2, 1) << "draft " << j << ": a ban keeps the greedy vocabulary";
    EXPECT_NE(drafts[2].tokens[j], banned) << "draft " << j;
  }
}

TEST(DSparkProposer, GreedyDraftVocabularyServesGreedyRequestsOnly) {
  constexpr DraftVocabUse kGreedy = DraftVocabUse::kGreedyRequests;
  check_draft_vocabulary(setup(DrafterKind::kDSpark), "greedy-vocab", kGreedy);
  check_draft_vocabulary(setup(DrafterKind::kDFlash), "greedy-vocab-dflash", kGreedy);
  static const DrafterSetup own = make_setup(DrafterKind::kDSpark, "greedy-own", /*own_embeddings=*/true);
  check_draft_vocabulary(own, "greedy-vocab-own", kGreedy);

  // Turned off (--no-greedy-draft-vocab), greedy requests draft from the whole vocabulary:
  // the same drafts and logits as the drafter without a greedy vocabulary.
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  std::vector<int32_t> kept;
  for (int32_t t = 1; t < static_cast<int32_t>(s.target.vocab_size); t += 2) kept.push_back(t);
  DrafterSetup greedy = s;
  greedy.drafter_dir = testing::make_temp_dir("greedy-vocab-off");
  write_draft_vocab(s.drafter_dir, s.target_dir, kept, kGreedy, greedy.drafter_dir);
  DSparkProposerOptions o = proposer_options(DType::kF32);
  o.greedy_draft_vocab = false;
  auto off = DSparkProposer::load(greedy.drafter_dir, s.target_dir, o);
  auto whole = make_proposer(s, DType::kF32);
  const auto ctx = random_context(s, 9, 27);
  const auto tokens = random_tokens(10, 28);
  const SamplingParams sp = greedy_params();
  const DraftRequest request{0, tokens, &sp, nullptr, s.config.num_drafts()};
  Draft a, b;
  for (DSparkProposer* p : {off.get(), whole.get()}) observe(*p, 0, ctx, 0, 9);
  off->propose({&request, 1}, {&a, 1});
  whole->propose({&request, 1}, {&b, 1});
  EXPECT_EQ(std::vector<int32_t>(a.tokens.begin(), a.tokens.end()), std::vector<int32_t>(b.tokens.begin(), b.tokens.end()));
  const auto la = off->inspect(0).logits, lb = whole->inspect(0).logits;
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) ASSERT_EQ(la[i], lb[i]) << i;
}

}  // namespace
}  // namespace dspark
