// DSparkProposer against the scalar reference drafter (tests/spec/reference_drafter.h) on a
// random tiny target + random drafter: base logits U_j, Markov-corrected logits, final
// hidden states and confidences (f32: tight tolerance; bf16: a stated looser one), the
// sampling transform of q, rollback (the next round sees exactly the committed context),
// chunking and batching invariance (also of a contextual Markov head), loading a
// published-shaped drafter, and load errors.
// Draft vocabularies: dspark_draft_vocab_test.cpp.
#include "spec/dspark_proposer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "core/rng.h"
#include "loader/safetensors.h"
#include "spec/draft_vocab.h"
#include "spec/drafter_fixtures.h"
#include "spec/dspark_proposer_fixtures.h"
#include "spec/reference_drafter.h"
#include "spec/tail_match.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::DrafterSetup;
using testing::greedy_params;
using testing::kF32;
using testing::make_proposer;
using testing::make_setup;
using testing::observe;
using testing::position_keyed_params;
using testing::proposer_options;
using testing::random_context;
using testing::random_tokens;
using testing::setup;
using testing::Tolerance;

double max_abs_diff(std::span<const float> a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}


// Two requests (contexts of 11 and 5 positions) drafted in one batch; everything the
// proposer computed is compared with the scalar reference run on the same inputs.
void check_parity(const DrafterSetup& s, DType compute, Tolerance tol) {
  auto proposer = make_proposer(s, compute);
  const testing::ReferenceDrafter reference(s.drafter_dir, s.target_dir, compute == DType::kBF16);
  const int64_t vocab = s.target.vocab_size;
  const std::vector<int64_t> lengths = {11, 5};
  std::vector<std::vector<std::vector<float>>> contexts;
  std::vector<std::vector<int32_t>> tokens;
  const SamplingParams sp = greedy_params();
  std::vector<DraftRequest> requests;
  for (size_t r = 0; r < lengths.size(); ++r) {
    contexts.push_back(random_context(s, lengths[r], 100 + r));
    tokens.push_back(random_tokens(lengths[r] + 1, 200 + r));
    observe(*proposer, static_cast<int32_t>(r) + 1, contexts[r], 0, static_cast<int32_t>(lengths[r]));
  }
  for (size_t r = 0; r < lengths.size(); ++r) {
    requests.push_back({static_cast<int32_t>(r) + 1, tokens[r], &sp, nullptr, s.config.num_drafts()});
  }
  std::vector<Draft> drafts(requests.size());
  proposer->propose(requests, drafts);
  double worst_hidden = 0, worst_logits = 0, worst_base = 0, worst_conf = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    const Draft& d = drafts[r];
    ASSERT_EQ(static_cast<int32_t>(d.tokens.size()), s.config.num_drafts());
    std::vector<int32_t> prev = {tokens[r].back()};
    prev.insert(prev.end(), d.tokens.begin(), d.tokens.end() - 1);
    const auto expected = reference.forward(contexts[r], prev);
    const auto got = proposer->inspect(r);
    worst_hidden = std::max(worst_hidden, max_abs_diff(got.hidden, expected.hidden));
    worst_base = std::max(worst_base, max_abs_diff(got.base_logits, expected.base_logits));
    worst_logits = std::max(worst_logits, max_abs_diff(got.logits, expected.logits));
    if (s.config.enable_confidence_head) {
      ASSERT_NE(d.confidence, nullptr);
      worst_conf = std::max(worst_conf, max_abs_diff(got.confidence_logits, expected.confidence_logits));
      for (size_t j = 0; j < d.tokens.size(); ++j) {
        const double c = 1 / (1 + std::exp(-expected.confidence_logits[j] / s.config.confidence_temperature(j)));
        EXPECT_NEAR(d.confidence[j], c, tol.confidence) << "c_" << j + 1;
      }
    } else {
      EXPECT_EQ(d.confidence, nullptr);
    }
    // Greedy drafts are the argmax of the corrected logits, and come without a q (one-hot,
    // and greedy verification never reads it).
    EXPECT_EQ(d.probs, nullptr);
    for (size_t j = 0; j < d.tokens.size(); ++j) {
      const float* row = expected.logits.data() + j * vocab;
      std::vector<float> sorted(row, row + vocab);
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      if (sorted[0] - sorted[1] > 2 * tol.logits) {
        EXPECT_EQ(d.tokens[j], argmax(row, vocab)) << "draft " << j;
      }
      EXPECT_EQ(d.tokens[j], argmax(got.logits.data() + j * vocab, vocab)) << "draft " << j;
    }
  }
  std::printf("max |diff|: hidden %.3g base logits %.3g logits %.3g confidence logits %.3g\n", worst_hidden,
              worst_base, worst_logits, worst_conf);
  EXPECT_LT(worst_hidden, tol.hidden);
  EXPECT_LT(worst_base, tol.logits);
  EXPECT_LT(worst_logits, tol.logits);
  EXPECT_LT(worst_conf, tol.logits);
}


TEST(DSparkProposer, ParityWithReferenceF32) { check_parity(setup(DrafterKind::kDSpark), DType::kF32, kF32); }
TEST(DSparkProposer, ParityWithReferenceBF16) {
  check_parity(setup(DrafterKind::kDSpark), DType::kBF16, testing::bf16_tolerance());
}
TEST(DSparkProposer, DFlashParityWithReferenceF32) { check_parity(setup(DrafterKind::kDFlash), DType::kF32, kF32); }
TEST(DSparkProposer, DFlashParityWithReferenceBF16) {
  check_parity(setup(DrafterKind::kDFlash), DType::kBF16, testing::bf16_tolerance());
}

const DrafterSetup& contextual_setup() {
  static const DrafterSetup s = make_setup(DrafterKind::kDSpark, "dspark-contextual", false, false, 12);
  return s;
}

TEST(DSparkProposer, ContextualMarkovParityWithReferenceF32) { check_parity(contextual_setup(), DType::kF32, kF32); }
TEST(DSparkProposer, ContextualMarkovParityWithReferenceBF16) {
  check_parity(contextual_setup(), DType::kBF16, testing::bf16_tolerance());
}

// The contextual head's MLP runs once per position for every request drafting; a request's
// logits and confidences are the same bits alone as in a batch of three (bf16 and f32).
TEST(DSparkProposer, ContextualMarkovDraftsDoNotDependOnTheBatch) {
  const DrafterSetup& s = contextual_setup();
  const SamplingParams sp = greedy_params();
  const std::vector<int64_t> lengths = {9, 14, 4};
  for (DType compute : {DType::kBF16, DType::kF32}) {
    std::vector<std::vector<std::vector<float>>> contexts;
    std::vector<std::vector<int32_t>> tokens;
    for (size_t r = 0; r < lengths.size(); ++r) {
      contexts.push_back(random_context(s, lengths[r], 300 + r));
      tokens.push_back(random_tokens(lengths[r] + 1, 400 + r));
    }
    auto batched = make_proposer(s, compute);
    std::vector<DraftRequest> requests;
    for (size_t r = 0; r < lengths.size(); ++r) {
      observe(*batched, static_cast<int32_t>(r), contexts[r], 0, static_cast<int32_t>(lengths[r]));
      requests.push_back({static_cast<int32_t>(r), tokens[r], &sp, nullptr, s.config.num_drafts()});
    }
    std::vector<Draft> drafts(requests.size());
    batched->propose(requests, drafts);
    for (size_t r = 0; r < lengths.size(); ++r) {
      auto alone = make_proposer(s, compute);
      observe(*alone, 1, contexts[r], 0, static_cast<int32_t>(lengths[r]));
      const DraftRequest one{1, tokens[r], &sp, nullptr, s.config.num_drafts()};
      Draft d;
      alone->propose({&one, 1}, {&d, 1});
      const auto want = alone->inspect(0);
      const auto got = batched->inspect(r);
      ASSERT_EQ(got.logits.size(), want.logits.size());
      EXPECT_EQ(0, std::memcmp(got.logits.data(), want.logits.data(), want.logits.size_bytes())) << "request " << r;
      EXPECT_EQ(0, std::memcmp(got.confidence_logits.data(), want.confidence_logits.data(),
                               want.confidence_logits.size_bytes()));
      EXPECT_EQ(std::vector<int32_t>(d.tokens.begin(), d.tokens.end()),
                std::vector<int32_t>(drafts[r].tokens.begin(), drafts[r].tokens.end()));
    }
  }
}

TEST(DSparkProposer, OwnEmbeddingsAndTiedTargetParity) {
  static const DrafterSetup own = make_setup(DrafterKind::kDSpark, "own-embed", /*own_embeddings=*/true);
  check_parity(own, DType::kF32, kF32);
  static const DrafterSetup tied = make_setup(DrafterKind::kDSpark, "tied-target", false, /*tied_target=*/true);
  check_parity(tied, DType::kF32, kF32);
}

TEST(DSparkProposer, SampledQIsTheRequestTransformOfCorrectedLogits) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  auto proposer = make_proposer(s, DType::kF32);
  const testing::ReferenceDrafter reference(s.drafter_dir, s.target_dir, false);
  const int64_t vocab = s.target.vocab_size;
  const auto ctx = random_context(s, 9, 7);
  const auto tokens = random_tokens(10, 8);
  observe(*proposer, 0, ctx, 0, 9);
  SamplingParams sp;
  sp.temperature = 0.8f;
  sp.top_k = 40;
  sp.top_p = 0.95f;
  sp.repetition_penalty = 1.3f;
  sp.frequency_penalty = 0.7f;
  sp.presence_penalty = -0.4f;
  const int64_t num_prompt = static_cast<int64_t>(tokens.size()) - 3;  // the last 3 count as output
  Rng rng(5);
  const DraftRequest request{0, tokens, &sp, &rng, 3, num_prompt};
  Draft draft;
  proposer->propose({&request, 1}, {&draft, 1});
  ASSERT_EQ(draft.tokens.size(), 3u);
  std::vector<int32_t> prev = {tokens.back(), draft.tokens[0], draft.tokens[1]};
  const auto expected = reference.forward(ctx, prev);
  std::vector<float> q(vocab);
  for (int j = 0; j < 3; ++j) {
    std::vector<int32_t> history = tokens;
    history.insert(history.end(), draft.tokens.begin(), draft.tokens.begin() + j);
    reference::to_probs(expected.logits.data() + j * vocab, q.data(), vocab, sp, history, num_prompt);
    double worst = 0;
    for (int64_t i = 0; i < vocab; ++i) worst = std::max(worst, std::abs(static_cast<double>(q[i]) - draft.probs[j * vocab + i]));
    EXPECT_LT(worst, 1e-4) << "q_" << j + 1;
    EXPECT_GT(draft.probs[j * vocab + draft.tokens[j]], 0.0f) << "draft " << j << " outside the kept set";
  }
  // The same seed draws the same drafts.
  const std::vector<int32_t> first(draft.tokens.begin(), draft.tokens.end());
  Rng again(5);
  const DraftRequest repeat{0, tokens, &sp, &again, 3};
  Draft second;
  proposer->propose({&repeat, 1}, {&second, 1});
  EXPECT_EQ(std::vector<int32_t>(second.tokens.begin(), second.tokens.end()), first);
}

// Block K/V go to scratch slots past the context; after a verification round the next
// observe() overwrites them. A proposer that lived through rounds (prompt in chunks, a
// round with 2 of 4 drafts accepted, another with none, a step without drafting) must
// compute exactly what a fresh one computes from the committed context shown at once —
// and batching must not matter, nor when the context is projected: at once (no pending
// buffer), when a small pending buffer fills, or deferred until the request drafts.
class DSparkProposerLived : public ::testing::TestWithParam<int64_t> {};

// A context window: the block sees only the last W context positions, so what lies before
// them changes nothing (bit for bit), what lies inside does, and a window at least as long
// as the context is no window at all. Rounds go on past the window while the drafter's
// KV blocks stay bounded, however the context is projected (pending modes).
TEST_P(DSparkProposerLived, AContextWindowIgnoresEverythingBeforeIt) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  const SamplingParams sp = greedy_params();
  constexpr int32_t kWindow = 8;
  const auto tokens = random_tokens(80, 31);
  const auto ctx = random_context(s, 79, 32);
  auto with_early = [&](uint64_t seed, int32_t from, int32_t to) {  // ctx with positions [from, to) replaced
    auto other = ctx;
    const auto noise = random_context(s, 79, seed);
    const int64_t h = s.config.target_hidden_size;
    for (size_t l = 0; l < other.size(); ++l)
      std::copy(noise[l].begin() + from * h, noise[l].begin() + to * h, other[l].begin() + from * h);
    return other;
  };
  // Drafts from context length c (c + 1 committed tokens) after observing `c` positions,
  // in pieces of 7, then the window's logits and hidden states.
  auto run = [&](const std::vector<std::vector<float>>& context, int32_t c, int64_t window) {
    auto p = make_proposer(s, DType::kF32, /*max_context_rows=*/6, GetParam(), window);
    for (int32_t start = 0; start < c; start += 7) observe(*p, 1, context, start, std::min(7, c - start));
    const DraftRequest r{1, std::span<const int32_t>(tokens.data(), c + 1), &sp, nullptr, 4};
    Draft d;
    p->propose({&r, 1}, {&d, 1});
    const auto got = p->inspect(0);
    std::vector<float> out(got.logits.begin(), got.logits.end());
    out.insert(out.end(), got.hidden.begin(), got.hidden.end());
    return std::pair{out, p->kv_blocks_in_use()};
  };
  const int32_t c = 30;
  const auto [windowed, blocks] = run(ctx, c, kWindow);
  EXPECT_EQ(windowed, run(with_early(40, 0, c - kWindow), c, kWindow).first);     // before: no effect
  EXPECT_NE(windowed, run(with_early(41, c - kWindow, c), c, kWindow).first);     // inside: matters
  EXPECT_NE(windowed, run(ctx, c, 0).first);                                       // it is a window
  EXPECT_EQ(run(ctx, c, 0).first, run(ctx, c, 64).first);                         // longer than c: none
  EXPECT_NE(run(ctx, c, 0).first, run(with_early(40, 0, c - kWindow), c, 0).first);  // unbounded sees all
  // KV blocks of 4 positions: the window and the block (8 + 4) span at most 4 blocks.
  EXPECT_LE(blocks, 4);
  const auto [longer, longer_blocks] = run(ctx, 78, kWindow);
  EXPECT_LE(longer_blocks, 4);
  EXPECT_EQ(longer, run(with_early(42, 0, 78 - kWindow), 78, kWindow).first);
}

TEST_P(DSparkProposerLived, RoundsChunksAndBatchesMatchAFreshProposer) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  const SamplingParams sp = greedy_params();
  const auto ctx = random_context(s, 40, 11);
  const auto tokens = random_tokens(41, 12);
  const auto other_ctx = random_context(s, 20, 13);
  const auto other_tokens = random_tokens(21, 14);
  auto lived = make_proposer(s, DType::kF32, /*max_context_rows=*/6, GetParam());  // forces chunked projection
  // Round 0: a 17-token prompt prefilled in chunks of 10 and 6 (the 17th is the anchor).
  observe(*lived, 2, ctx, 0, 10);
  observe(*lived, 2, ctx, 10, 6);
  auto propose_one = [&](DSparkProposer& p, int32_t slot, int64_t committed) {
    const DraftRequest r{slot, std::span<const int32_t>(tokens.data(), committed), &sp, nullptr, 4};
    Draft d;
    p.propose({&r, 1}, {&d, 1});
    return p.inspect(0);
  };
  propose_one(*lived, 2, 17);
  observe(*lived, 2, ctx, 16, 3);  // anchor + 2 accepted drafts
  propose_one(*lived, 2, 20);
  observe(*lived, 2, ctx, 19, 1);  // nothing accepted: the anchor only
  {
    const DraftRequest idle{2, std::span<const int32_t>(tokens.data(), 20), &sp, nullptr, 0};
    Draft none;
    lived->catch_up({&idle, 1});  // drafts nothing: may leave the context pending
    lived->propose({&idle, 1}, {&none, 1});
    EXPECT_TRUE(none.tokens.empty());
  }
  observe(*lived, 2, ctx, 20, 1);  // that step's anchor
  // Batched with another request this time.
  observe(*lived, 0, other_ctx, 0, 20);
  const std::vector<DraftRequest> both = {{0, other_tokens, &sp, nullptr, 4},
                                          {2, std::span<const int32_t>(tokens.data(), 22), &sp, nullptr, 4}};
  std::vector<Draft> drafts(2);
  lived->propose(both, drafts);
  const auto got = lived->inspect(1);
  const auto got_other = lived->inspect(0);

  auto fresh = make_proposer(s, DType::kF32);
  observe(*fresh, 3, ctx, 0, 21);
  const auto expected = propose_one(*fresh, 3, 22);
  ASSERT_EQ(got.logits.size(), expected.logits.size());
  EXPECT_EQ(0, std::memcmp(got.hidden.data(), expected.hidden.data(), got.hidden.size_bytes()));
  EXPECT_EQ(0, std::memcmp(got.logits.data(), expected.logits.data(), got.logits.size_bytes()));
  EXPECT_EQ(0, std::memcmp(got.confidence_logits.data(), expected.confidence_logits.data(),
                           got.confidence_logits.size_bytes()));
  auto fresh_other = make_proposer(s, DType::kF32);
  observe(*fresh_other, 1, other_ctx, 0, 20);
  const DraftRequest r{1, other_tokens, &sp, nullptr, 4};
  Draft d;
  fresh_other->propose({&r, 1}, {&d, 1});
  const auto alone = fresh_other->inspect(0);
  EXPECT_EQ(0, std::memcmp(got_other.logits.data(), alone.logits.data(), alone.logits.size_bytes()));

  // A released slot starts again from position 0, whatever it had pending.
  observe(*lived, 2, ctx, 21, 1);
  lived->release(2);
  EXPECT_THROW(observe(*lived, 2, ctx, 5, 3), Error);
  observe(*lived, 2, ctx, 0, 21);
  const auto after_release = propose_one(*lived, 2, 22);
  EXPECT_EQ(0, std::memcmp(after_release.logits.data(), expected.logits.data(), expected.logits.size_bytes()));
}

INSTANTIATE_TEST_SUITE_P(PendingPositions, DSparkProposerLived, ::testing::Values(0, 2, 5, -1),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return info.param < 0 ? std::string("Default") : "Pending" + std::to_string(info.param);
                         });

TEST(DSparkProposer, MaxDraftsLimitsTheOutputNotTheBlock) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  auto p = make_proposer(s, DType::kF32);
  const SamplingParams sp = greedy_params();
  const auto ctx = random_context(s, 6, 21);
  const auto tokens = random_tokens(7, 22);
  observe(*p, 0, ctx, 0, 6);
  Draft full, two, none;
  const DraftRequest all{0, tokens, &sp, nullptr, 10};
  p->propose({&all, 1}, {&full, 1});
  const std::vector<int32_t> full_tokens(full.tokens.begin(), full.tokens.end());
  ASSERT_EQ(full_tokens.size(), 4u);  // capped at the drafter's num_speculative_tokens
  const std::vector<float> full_logits(p->inspect(0).logits.begin(), p->inspect(0).logits.begin() + 2 * 97);
  const DraftRequest limited{0, tokens, &sp, nullptr, 2};
  p->propose({&limited, 1}, {&two, 1});
  ASSERT_EQ(two.tokens.size(), 2u);
  EXPECT_EQ(two.tokens[0], full_tokens[0]);
  EXPECT_EQ(two.tokens[1], full_tokens[1]);
  EXPECT_EQ(0, std::memcmp(p->inspect(0).logits.data(), full_logits.data(), full_logits.size() * sizeof(float)));
  const DraftRequest zero{0, tokens, &sp, nullptr, 0};
  p->propose({&zero, 1}, {&none, 1});
  EXPECT_TRUE(none.tokens.empty());
  EXPECT_TRUE(p->inspect(0).logits.empty());
}

// stage_seconds: propose()'s three stages in the order they run, each adding only the time
// of the calls that draft (so at most their wall time), nothing for a call that does not.
TEST(DSparkProposer, StageSecondsAddUpWhatProposeSpends) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  auto p = make_proposer(s, DType::kF32);
  const std::vector<ProposerStage> fresh = p->stage_seconds();
  ASSERT_EQ(fresh.size(), 3u);
  EXPECT_STREQ(fresh[0].name, "backbone");
  EXPECT_STREQ(fresh[1].name, "heads");
  EXPECT_STREQ(fresh[2].name, "sequential");
  for (const ProposerStage& stage : fresh) EXPECT_EQ(stage.seconds, 0.0);

  const SamplingParams sp = greedy_params();
  observe(*p, 0, random_context(s, 6, 31), 0, 6);
  const auto tokens = random_tokens(7, 32);
  Draft draft;
  double wall = 0;
  for (int round = 0; round < 3; ++round) {
    const DraftRequest r{0, tokens, &sp, nullptr, 4};
    const double start = now_seconds();
    p->propose({&r, 1}, {&draft, 1});
    wall += now_seconds() - start;
  }
  const std::vector<ProposerStage> after = p->stage_seconds();
  double total = 0;
  for (const ProposerStage& stage : after) {
    EXPECT_GT(stage.seconds, 0.0) << stage.name;
    total += stage.seconds;
  }
  EXPECT_LE(total, wall);

  const DraftRequest none{0, tokens, &sp, nullptr, 0};
  p->propose({&none, 1}, {&draft, 1});
  for (size_t k = 0; k < after.size(); ++k) EXPECT_EQ(p->stage_seconds()[k].seconds, after[k].seconds);
}

// confidence_repeat_shifts: a greedy request's c_j moves by the agree shift while drafts
// 1..j repeat what followed the context's tail earlier, by the disagree shift otherwise; a
// sampling request's confidences never move (its verified length must not depend on draft j).
TEST(DSparkProposer, RepeatShiftsMoveGreedyConfidencesOnly) {
  DrafterSetup s = make_setup(DrafterKind::kDSpark, "repeat-shifts");
  s.config.confidence_repeat_shifts = {-0.75f, 3.0f};
  std::ofstream(s.drafter_dir / "config.json") << s.config.to_json().dump(2);
  auto p = make_proposer(s, DType::kF32);
  observe(*p, 0, random_context(s, 12, 31), 0, 12);
  const SamplingParams greedy = greedy_params();
  // The drafts depend on the hidden states and the anchor (the last token) only, so two
  // contexts with the same anchor get the same drafts.
  std::vector<int32_t> plain(13);
  for (int32_t i = 0; i < 13; ++i) plain[i] = 40 + i;  // no token repeats: no tail match
  auto propose = [&](const std::vector<int32_t>& tokens, const SamplingParams& sp) {
    const DraftRequest r{0, tokens, &sp, nullptr, 4};
    Draft d;
    p->propose({&r, 1}, {&d, 1});
    return d;
  };
  auto expect_confidences = [&](const Draft& d, int32_t agreeing, bool shifted) {
    for (int32_t j = 0; j < static_cast<int32_t>(d.tokens.size()); ++j) {
      const float z = p->inspect(0).confidence_logits[j];
      const float shift = shifted ? s.config.confidence_repeat_shift(j < agreeing) : 0.0f;
      EXPECT_FLOAT_EQ(d.confidence[j], 1.0f / (1.0f + std::exp(-(z / s.config.confidence_temperature(j) + shift))))
          << "draft " << j + 1;
    }
  };
  const Draft first = propose(plain, greedy);
  const std::vector<int32_t> drafts(first.tokens.begin(), first.tokens.end());
  ASSERT_EQ(drafts.size(), 4u);
  expect_confidences(first, 0, true);
  // The tail "51 52" occurred before, followed by the first two drafts and then another token.
  std::vector<int32_t> looping = plain;
  looping[3] = 51;
  looping[4] = 52;
  looping[5] = drafts[0];
  looping[6] = drafts[1];
  looping[7] = (drafts[2] + 1) % 97;
  ASSERT_EQ(leading_repeat_agreement(looping, drafts, kRepeatMinTail, kRepeatMaxTail), 2);
  const Draft again = propose(looping, greedy);
  ASSERT_EQ(std::vector<int32_t>(again.tokens.begin(), again.tokens.end()), drafts);
  expect_confidences(again, 2, true);
  const SamplingParams sampled = position_keyed_params(3);
  expect_confidences(propose(looping, sampled), 4, false);
}

// repeat_lookup_min_match: a greedy request whose tail matched far enough back drafts the
// loop's continuation, one-hot and without a drafter pass; shorter matches and sampling
// requests draft with the drafter as before.
TEST(DSparkProposer, RepeatLookupDraftsTheLoopWithoutTheDrafter) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  DSparkProposerOptions o;
  o.max_running = 4;
  o.max_model_len = 128;
  o.kv_block_size = 4;
  o.compute = DType::kF32;
  o.repeat_lookup_min_match = 8;
  auto p = DSparkProposer::load(s.drafter_dir, s.target_dir, o);
  observe(*p, 0, random_context(s, 12, 51), 0, 12);
  // "1 2 3" three times and more: the tail matches 9 tokens ending 3 back.
  const std::vector<int32_t> looping{40, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};
  const SamplingParams greedy = greedy_params();
  const DraftRequest r{0, looping, &greedy, nullptr, 4};
  Draft d;
  p->propose({&r, 1}, {&d, 1});
  EXPECT_EQ(std::vector<int32_t>(d.tokens.begin(), d.tokens.end()), (std::vector<int32_t>{1, 2, 3, 1}));
  EXPECT_EQ(d.probs, nullptr);  // one-hot
  ASSERT_NE(d.confidence, nullptr);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(d.confidence[j], kRepeatLookupConfidence);
  EXPECT_TRUE(p->inspect(0).logits.empty());  // no drafter pass
  const DraftRequest two{0, looping, &greedy, nullptr, 2};
  p->propose({&two, 1}, {&d, 1});
  EXPECT_EQ(std::vector<int32_t>(d.tokens.begin(), d.tokens.end()), (std::vector<int32_t>{1, 2}));
  // A match of 4 tokens is too short: the drafter drafts.
  const std::vector<int32_t> short_loop{40, 41, 42, 43, 44, 45, 1, 2, 3, 1, 2, 3, 1};
  const DraftRequest shorter{0, short_loop, &greedy, nullptr, 4};
  p->propose({&shorter, 1}, {&d, 1});
  EXPECT_EQ(d.probs, nullptr);  // greedy: the drafter's argmax, no q either
  EXPECT_FALSE(p->inspect(0).logits.empty());
  // A sampling request always drafts with the drafter (its q is what verification needs).
  const SamplingParams sampled = position_keyed_params(3);
  const DraftRequest rs{0, looping, &sampled, nullptr, 4};
  p->propose({&rs, 1}, {&d, 1});
  EXPECT_NE(d.probs, nullptr);
  EXPECT_FALSE(p->inspect(0).logits.empty());
  o.repeat_lookup_min_match = 17;
  EXPECT_THROW(DSparkProposer::load(s.drafter_dir, s.target_dir, o), Error);
}

TEST(DSparkProposer, CapabilitiesAndLayers) {
  auto dspark = make_proposer(setup(DrafterKind::kDSpark), DType::kF32);
  const ProposerCapabilities c = dspark->capabilities();
  EXPECT_TRUE(c.needs_target_hidden_states && c.owns_kv_cache && c.provides_draft_probs && c.provides_confidence);
  EXPECT_EQ(dspark->target_layers(), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(dspark->num_speculative_tokens(), 4);
  auto dflash = make_proposer(setup(DrafterKind::kDFlash), DType::kF32);
  EXPECT_FALSE(dflash->capabilities().provides_confidence);
  EXPECT_EQ(dflash->num_speculative_tokens(), 3);  // γ - 1
}

TEST(DSparkProposer, ContextMustArriveInOrderAndBeComplete) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  auto p = make_proposer(s, DType::kF32);
  const auto ctx = random_context(s, 10, 31);
  const auto tokens = random_tokens(11, 32);
  observe(*p, 0, ctx, 0, 4);
  EXPECT_THROW(observe(*p, 0, ctx, 5, 2), Error);  // a gap
  const SamplingParams sp = greedy_params();
  const DraftRequest r{0, tokens, &sp, nullptr, 4};
  Draft d;
  EXPECT_THROW(p->propose({&r, 1}, {&d, 1}), Error);  // 10 positions precede the anchor, 4 seen
}

TEST(DSparkProposer, LoadsAPublishedShapedDrafter) {
  // Qwen3 layer config, 5 aux layers, block 7, Markov rank 256, confidence head on the
  // Markov feature: the shape of deepseek-ai/dspark_qwen3_4b_block7, with small tensors.
  testing::TinyModelSpec spec;
  spec.model_type = "qwen3";
  spec.vocab_size = 512;
  spec.num_layers = 6;
  const auto target_dir = testing::write_tiny_model(spec, testing::make_temp_dir("published-target"));
  const ModelConfig target = ModelConfig::from_file(target_dir);
  DrafterConfig c = testing::make_drafter_config(target, DrafterKind::kDSpark, {1, 2, 3, 5, 6}, 7, 5, 256);
  c.confidence_temperatures = {1.0f, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f, 1.6f};
  c.confidence_temperatures_sampled = {2.0f, 0.5f, 3.0f, 0.25f, 1.0f, 4.0f, 0.8f};
  const auto drafter_dir = testing::write_random_drafter(c, testing::make_temp_dir("published-drafter"));
  DSparkProposerOptions o;
  o.max_running = 2;
  o.max_model_len = 64;
  auto p = DSparkProposer::load(drafter_dir, target_dir, o);
  EXPECT_EQ(p->target_layers(), (std::vector<int32_t>{0, 1, 2, 4, 5}));
  EXPECT_EQ(p->num_speculative_tokens(), 7);
  EXPECT_TRUE(p->capabilities().provides_confidence);
  DrafterSetup s{target_dir, drafter_dir, c, target};
  const auto ctx = random_context(s, 12, 41);
  const auto tokens = random_tokens(13, 42);
  observe(*p, 1, ctx, 0, 12);
  const SamplingParams sp = greedy_params();
  const DraftRequest r{1, tokens, &sp, nullptr, 7};
  Draft d;
  p->propose({&r, 1}, {&d, 1});
  ASSERT_EQ(d.tokens.size(), 7u);
  for (int j = 0; j < 7; ++j) {
    EXPECT_GT(d.confidence[j], 0.0f);
    EXPECT_LT(d.confidence[j], 1.0f);
    const float z = p->inspect(0).confidence_logits[j];
    EXPECT_FLOAT_EQ(d.confidence[j], 1.0f / (1.0f + std::exp(-z / c.confidence_temperatures[j])));
  }
  // A sampling request gets the temperatures calibrated for sampled verification.
  const SamplingParams sampled = position_keyed_params(5);
  const DraftRequest rs{1, tokens, &sampled, nullptr, 7};
  p->propose({&rs, 1}, {&d, 1});
  ASSERT_EQ(d.tokens.size(), 7u);
  for (int j = 0; j < 7; ++j) {
    const float z = p->inspect(0).confidence_logits[j];
    EXPECT_FLOAT_EQ(d.confidence[j], 1.0f / (1.0f + std::exp(-z / c.confidence_temperatures_sampled[j]))) << j;
  }
}

// Load errors name the directory, tensor and both shapes / values.
TEST(DSparkProposer, LoadErrors) {
  const DrafterSetup& s = setup(DrafterKind::kDSpark);
  DSparkProposerOptions o;
  o.max_model_len = 64;
  auto message = [&](const std::filesystem::path& drafter, DSparkProposerOptions options) -> std::string {
    try {
      DSparkProposer::load(drafter, s.target_dir, options);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  auto rewrite = [&](const std::string& name, std::function<void(std::vector<TensorToWrite>&)> edit) {
    const auto dir = testing::make_temp_dir(name);
    std::filesystem::copy_file(s.drafter_dir / "config.json", dir / "config.json");
    const WeightStore store(s.drafter_dir);
    std::vector<TensorToWrite> tensors;
    for (const std::string& n : store.names()) {
      const TensorInfo& t = store.get(n);
      tensors.push_back(make_f32_tensor(n, t.shape, store.load_f32(n, t.shape)));
    }
    edit(tensors);
    write_safetensors(dir / "model.safetensors", tensors);
    return dir;
  };
  const auto wrong_fc = rewrite("wrong-fc", [](auto& ts) {
    for (auto& t : ts) {
      if (t.name == "fc.weight") t = make_f32_tensor("fc.weight", {64, 64}, std::vector<float>(64 * 64));
    }
  });
  EXPECT_NE(message(wrong_fc, o).find("tensor 'fc.weight' has shape [64, 64] but the config implies [64, 128]"),
            std::string::npos);
  const auto missing = rewrite("missing-norm", [](auto& ts) {
    std::erase_if(ts, [](const TensorToWrite& t) { return t.name == "layers.1.post_attention_layernorm.weight"; });
  });
  EXPECT_NE(message(missing, o).find("no tensor 'layers.1.post_attention_layernorm.weight'"), std::string::npos);
  const auto vocab_map = rewrite("d2t", [](auto& ts) { ts.push_back(make_f32_tensor("d2t", {4}, std::vector<float>(4))); });
  EXPECT_NE(message(vocab_map, o).find("a reduced draft vocabulary's map, but its draft_vocab_size 97 is the whole"),
            std::string::npos);
  // A reduced vocabulary: the map, its shape and its own LM head rows are required.
  const std::vector<int32_t> kept = {5, 3, 9, 40};
  const auto reduced = testing::make_temp_dir("reduced-errors");
  write_draft_vocab(s.drafter_dir, s.target_dir, kept, DraftVocabUse::kEveryRequest, reduced);
  auto reduced_without = [&](const std::string& dropped) {
    const auto dir = testing::make_temp_dir("reduced-without-" + dropped);
    std::filesystem::copy_file(reduced / "config.json", dir / "config.json");
    const WeightStore store(reduced);
    std::vector<TensorToWrite> tensors;
    for (const std::string& n : store.names()) {
      const TensorInfo& t = store.find(n);
      if (n != dropped) tensors.push_back({n, t.dtype, t.shape, {t.bytes.begin(), t.bytes.end()}, t.supported ? "" : t.dtype_tag});
    }
    write_safetensors(dir / "model.safetensors", tensors);
    return dir;
  };
  EXPECT_EQ(message(reduced, o), "");
  EXPECT_NE(message(reduced_without("d2t"), o).find("has no tensor 'd2t'"), std::string::npos);
  EXPECT_NE(message(reduced_without("lm_head.weight"), o).find("no tensor 'lm_head.weight' (shape [4, 64])"),
            std::string::npos);
  EXPECT_THROW(write_draft_vocab(reduced, s.target_dir, kept, DraftVocabUse::kGreedyRequests, testing::make_temp_dir("twice")), Error);
  const std::vector<int32_t> repeated = {5, 5};
  EXPECT_THROW(
      write_draft_vocab(s.drafter_dir, s.target_dir, repeated, DraftVocabUse::kEveryRequest, testing::make_temp_dir("rep")),
      Error);
  DSparkProposerOptions too_many = o;
  too_many.num_speculative_tokens = 5;
  EXPECT_NE(message(s.drafter_dir, too_many).find("5 drafts per round were asked for"), std::string::npos);
  DSparkProposerOptions no_len;
  EXPECT_NE(message(s.drafter_dir, no_len).find("max_model_len must be >= 1"), std::string::npos);
}

}  // namespace
}  // namespace dspark
