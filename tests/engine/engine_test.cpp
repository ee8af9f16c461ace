// The engine end to end on tiny random models: plain greedy decoding is the reference;
// speculative decoding (n-gram, draft model), batching with other requests, chunked
// prefill, preemption under KV pressure and cancellation must not change a single token.
#include "engine/engine.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "core/rng.h"
#include "tokenizer/tokenizer.h"
#include "spec/draft_model_proposer.h"
#include "spec/ngram_proposer.h"
#include "support/engine_requests.h"
#include "support/engine_runner.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::greedy;
using testing::run_all;

// A byte-level tokenizer with a 97-token vocabulary (ids 0..96), enough to decode whatever a
// tiny random model emits; EOS is id 2 via generation_config.json.
std::filesystem::path add_tokenizer(const std::filesystem::path& dir) {
  testing::write_tiny_tokenizer(dir, 97);
  std::ofstream(dir / "generation_config.json") << R"({"eos_token_id": 2})";
  return dir;
}

struct Models {
  std::filesystem::path target_dir, draft_dir;
  Models() {
    testing::TinyModelSpec spec;
    spec.num_layers = 2;
    target_dir = add_tokenizer(testing::write_tiny_model(spec, testing::make_temp_dir("engine-target")));
    spec.seed = 99;
    spec.num_layers = 1;
    draft_dir = add_tokenizer(testing::write_tiny_model(spec, testing::make_temp_dir("engine-draft")));
  }
};

const Models& models() {
  static Models m;
  return m;
}

std::unique_ptr<Transformer> load(const std::filesystem::path& dir, int64_t max_sequences = 16) {
  TransformerOptions o;
  o.max_batch_tokens = 128;
  o.max_sequences = max_sequences;
  return Transformer::load(dir, o);
}

std::vector<std::vector<int32_t>> prompts(int n) {
  std::vector<std::vector<int32_t>> out;
  Rng rng(5);
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> p;
    const int len = 3 + static_cast<int>(rng.next_u64() % 40);
    // Repetitive prompts so that n-gram lookup finds matches.
    for (int j = 0; j < len; ++j) p.push_back(static_cast<int32_t>(3 + (j % 7 == 0 ? rng.next_u64() % 90 : j % 5)));
    out.push_back(p);
  }
  return out;
}

std::vector<std::vector<int32_t>> plain_reference(const std::vector<std::vector<int32_t>>& ps, int64_t max_tokens) {
  auto model = load(models().target_dir, 1);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  std::vector<std::vector<int32_t>> out;
  for (const auto& p : ps) {
    Engine engine(*model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 128});
    out.push_back(generate_one(engine, p, greedy(max_tokens)).tokens);
  }
  return out;
}

// The set-up most engine tests share: n prompts, their plain greedy reference of
// max_tokens tokens, and the target with its tokenizer.
struct GreedyCase {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<int32_t>> reference;
  std::unique_ptr<Transformer> model;
  Tokenizer tok;
};

GreedyCase greedy_case(int num_prompts, int64_t max_tokens) {
  auto ps = prompts(num_prompts);
  auto reference = plain_reference(ps, max_tokens);
  return {std::move(ps), std::move(reference), load(models().target_dir), Tokenizer::from_dir(models().target_dir)};
}

TEST(Engine, BatchedChunkedAndPreemptedGreedyEqualsAlone) {
  auto [ps, reference, model, tok] = greedy_case(12, 24);
  // Small chunks and a small KV pool: chunked prefill interleaves with decodes, and
  // requests get preempted and recomputed.
  EngineOptions o{.max_running = 6, .max_batch_tokens = 20, .prefill_chunk = 7, .block_size = 4, .num_kv_blocks = 70};
  Engine engine(*model, tok, o);
  EXPECT_EQ(run_all(engine, ps, greedy(24)), reference);
  EXPECT_GT(engine.stats().num_preemptions, 0);
}

TEST(Engine, NgramSpeculationIsLosslessGreedy) {
  auto [ps, reference, model, tok] = greedy_case(12, 24);
  Engine engine(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
                std::make_unique<NgramProposer>(NgramOptions{1, 4, 6}));
  EXPECT_EQ(run_all(engine, ps, greedy(24)), reference);
  EXPECT_GT(engine.spec_metrics().num_drafts, 0);
}

TEST(Engine, DraftModelSpeculationIsLosslessGreedy) {
  auto [ps, reference, model, tok] = greedy_case(10, 20);
  DraftModelOptions d{.num_speculative_tokens = 5, .max_running = 4, .block_size = 4};
  Engine engine(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
                std::make_unique<DraftModelProposer>(load(models().draft_dir, 4), d));
  EXPECT_EQ(run_all(engine, ps, greedy(20)), reference);
  EXPECT_GT(engine.spec_metrics().num_drafts, 0);
}

TEST(Engine, DraftModelGreedyDraftsAreItsArgmaxWithoutQ) {
  // A greedy request without penalties drafts the draft model's own greedy continuation
  // and hands the verifier no q (greedy verification compares tokens); a request that
  // samples, or a greedy one with a repetition penalty, gets q.
  const std::vector<int32_t> prompt = prompts(1)[0];
  auto draft_model = load(models().draft_dir, 1);
  const Tokenizer tok = Tokenizer::from_dir(models().draft_dir);
  Engine plain(*draft_model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 128});
  const std::vector<int32_t> continuation = generate_one(plain, prompt, testing::greedy(5)).tokens;

  DraftModelOptions d{.num_speculative_tokens = 5, .max_running = 4, .block_size = 4};
  DraftModelProposer proposer(load(models().draft_dir, 4), d);
  SamplingParams greedy_sp = testing::greedy(5).sampling, penalised = greedy_sp, sampled;
  penalised.repetition_penalty = 1.3f;
  Rng rng(7);
  const std::vector<DraftRequest> requests = {{0, prompt, &greedy_sp, &rng, 5, static_cast<int64_t>(prompt.size())},
                                              {1, prompt, &penalised, &rng, 5, static_cast<int64_t>(prompt.size())},
                                              {2, prompt, &sampled, &rng, 5, static_cast<int64_t>(prompt.size())}};
  std::vector<Draft> drafts(requests.size());
  proposer.propose(requests, drafts);
  const std::vector<int32_t> greedy_drafts(drafts[0].tokens.begin(), drafts[0].tokens.end());
  ASSERT_EQ(greedy_drafts.size(), 5u);
  const size_t n = std::min(greedy_drafts.size(), continuation.size());  // plain decoding may stop at EOS
  ASSERT_GT(n, 0u);
  EXPECT_EQ(std::vector<int32_t>(greedy_drafts.begin(), greedy_drafts.begin() + n),
            std::vector<int32_t>(continuation.begin(), continuation.begin() + n));
  EXPECT_EQ(drafts[0].probs, nullptr);
  EXPECT_NE(drafts[1].probs, nullptr);
  EXPECT_NE(drafts[2].probs, nullptr);
}

TEST(Engine, DraftModelFeedsOnlyTheRequestsAboutToDraft) {
  // The engine asks the proposer to catch up every decoding request, also those the
  // adaptive schedule gives no drafts: for those the draft model must run nothing, else a
  // schedule that stops drafting still pays a draft-model forward per committed token.
  const std::vector<int32_t> prompt = prompts(1)[0];
  const auto n = static_cast<int64_t>(prompt.size());
  DraftModelOptions d{.num_speculative_tokens = 5, .max_running = 4, .block_size = 4};
  DraftModelProposer proposer(load(models().draft_dir, 4), d);
  SamplingParams sp = testing::greedy(5).sampling;
  Rng rng(7);
  std::vector<DraftRequest> requests = {{0, prompt, &sp, &rng, 0, n}, {1, prompt, &sp, &rng, 5, n}};
  proposer.catch_up(requests);
  EXPECT_EQ(proposer.cached_tokens(0), 0);
  EXPECT_EQ(proposer.cached_tokens(1), n - 1);  // the last committed token is fed when drafting

  std::vector<Draft> drafts(requests.size());
  proposer.propose(requests, drafts);
  EXPECT_TRUE(drafts[0].tokens.empty());
  const std::vector<int32_t> drafted(drafts[1].tokens.begin(), drafts[1].tokens.end());
  ASSERT_EQ(drafted.size(), 5u);
  EXPECT_EQ(proposer.cached_tokens(0), 0);

  // When slot 0 drafts again its backlog is fed, and it drafts what slot 1 did.
  requests[0].max_drafts = 5;
  proposer.propose(requests, drafts);
  EXPECT_EQ(std::vector<int32_t>(drafts[0].tokens.begin(), drafts[0].tokens.end()), drafted);
  EXPECT_EQ(std::vector<int32_t>(drafts[1].tokens.begin(), drafts[1].tokens.end()), drafted);
}

TEST(Engine, TargetAsItsOwnDraftAcceptsEveryGreedyDraft) {
  // With the target as draft model, greedy drafts are exactly the target's choices:
  // every round accepts all K drafts, so tau = K + 1 (a strong check of the bookkeeping).
  const auto ps = prompts(4);
  auto model = load(models().target_dir);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  DraftModelOptions d{.num_speculative_tokens = 4, .max_running = 4, .block_size = 4};
  Engine engine(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
                std::make_unique<DraftModelProposer>(load(models().target_dir, 4), d));
  EXPECT_EQ(run_all(engine, ps, greedy(21)), plain_reference(ps, 21));
  const auto& m = engine.spec_metrics();
  EXPECT_EQ(m.num_accepted_tokens, m.num_draft_tokens);
  EXPECT_DOUBLE_EQ(m.mean_acceptance_length(), 5.0);
}

TEST(Engine, DraftPMinStopsDraftingEarly) {
  const auto ps = prompts(3);
  auto model = load(models().target_dir);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  DraftModelOptions d{.num_speculative_tokens = 6, .p_min = 0.99f, .max_running = 4, .block_size = 4};
  Engine engine(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
                std::make_unique<DraftModelProposer>(load(models().draft_dir, 4), d));
  EXPECT_EQ(run_all(engine, ps, greedy(12)), plain_reference(ps, 12));
  // A random draft model is never that sure: every round stops after its first draft.
  EXPECT_EQ(engine.spec_metrics().num_draft_tokens, engine.spec_metrics().num_drafts);
}

// Proposes random drafts (mostly rejected) and records the committed hidden states the
// engine hands over, keyed by sequence position.
class RecordingProposer final : public Proposer {
 public:
  explicit RecordingProposer(std::vector<int32_t> layers) : layers_(std::move(layers)), rng_(3) {}
  ProposerCapabilities capabilities() const override { return {.needs_target_hidden_states = true}; }
  int32_t num_speculative_tokens() const override { return 3; }
  std::vector<int32_t> target_layers() const override { return layers_; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    for (size_t i = 0; i < requests.size(); ++i) {
      auto& d = drafts_[requests[i].slot];
      d.clear();
      for (int32_t j = 0; j < requests[i].max_drafts; ++j) {
        // Half the time repeat the last token (sometimes right), else random.
        d.push_back(rng_.uniform() < 0.5 ? requests[i].tokens.back() : static_cast<int32_t>(rng_.next_u64() % 97));
      }
      drafts[i] = Draft{d, nullptr, nullptr};
    }
  }
  void release(int32_t slot) override { ++releases_; }
  void observe(std::span<const CommittedHiddenStates> committed) override {
    for (const auto& c : committed) testing::record_hidden_states(c, layers_.size(), rows_[c.slot]);
  }

  std::map<int32_t, std::vector<std::vector<float>>> rows_;  // slot -> position -> layers' rows
  int releases_ = 0;

 private:
  std::vector<int32_t> layers_;
  Rng rng_;
  std::map<int32_t, std::vector<int32_t>> drafts_;
};

TEST(Engine, ProposerSeesExactlyTheCommittedHiddenStates) {
  TransformerOptions o;
  o.max_batch_tokens = 128;
  o.max_sequences = 1;
  o.capture_layers = {0, 1};
  auto model = Transformer::load(models().target_dir, o);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  auto recording = std::make_unique<RecordingProposer>(std::vector<int32_t>{0, 1});
  RecordingProposer* recorder = recording.get();
  Engine engine(*model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 16, .prefill_chunk = 5},
                std::move(recording));
  const std::vector<int32_t> prompt = prompts(1)[0];
  const GenerationResult r = generate_one(engine, prompt, greedy(20));
  EXPECT_GT(engine.spec_metrics().num_drafts, 0);
  EXPECT_LT(engine.spec_metrics().acceptance_rate(), 1.0);
  EXPECT_EQ(recorder->releases_, 1);

  // Reference: the whole final sequence in one forward; every committed position's hidden
  // states must be bit-identical (batch invariance) to what the proposer was shown.
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), r.tokens.begin(), r.tokens.end());
  all.pop_back();  // the last token never had its KV computed
  testing::EngineRunner runner(*model);
  runner.run(runner.add_sequence(), all, 128);
  const ForwardResult& ref = runner.last_result();
  const auto& rows = recorder->rows_[0];
  // The round that finished the request is not shown (a finished request drafts no more).
  ASSERT_LE(rows.size(), all.size());
  ASSERT_GE(rows.size() + 4, all.size());
  const int64_t h = model->config().hidden_size;
  for (size_t pos = 0; pos < rows.size(); ++pos) {
    for (size_t l = 0; l < 2; ++l) {
      const float* expected = ref.hidden_layer(l) + pos * h;
      EXPECT_EQ(0, std::memcmp(rows[pos].data() + l * h, expected, h * sizeof(float))) << "position " << pos;
    }
  }
}

TEST(Engine, HiddenStateProposerNeedsMatchingCaptureLayers) {
  auto model = load(models().target_dir);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  EXPECT_THROW(Engine(*model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 16},
                      std::make_unique<RecordingProposer>(std::vector<int32_t>{1})),
               Error);
}

// Adaptive-schedule options with this SPS(B) table: 4 running requests, 64 tokens a step.
EngineOptions adaptive_options(std::vector<double> sps) {
  EngineOptions o{.max_running = 4, .max_batch_tokens = 64};
  o.spec_schedule = SpecSchedule::kAdaptive;
  o.step_cost = std::make_shared<StepCostTable>(std::move(sps));
  return o;
}

// SPS(B) = sps_1 / (1 + slope · (B − 1)) for B = 1..64: each extra token adds `slope` of a step.
std::vector<double> affine_sps(double sps_1, double slope) {
  std::vector<double> sps(64);
  for (int b = 1; b <= 64; ++b) sps[b - 1] = sps_1 / (1.0 + slope * (b - 1));
  return sps;
}

// The target drafting for itself, 4 drafts a round: every greedy draft is accepted.
std::unique_ptr<DraftModelProposer> self_drafter() {
  DraftModelOptions d{.num_speculative_tokens = 4, .max_running = 4, .block_size = 4};
  return std::make_unique<DraftModelProposer>(load(models().target_dir, 4), d);
}

TEST(Engine, AdaptiveScheduleKeepsGreedyOutputAndFollowsTheCostTable) {
  auto [ps, reference, model, tok] = greedy_case(8, 20);
  auto run = [&](std::vector<double> sps) {
    Engine engine(*model, tok, adaptive_options(std::move(sps)), self_drafter());
    EXPECT_EQ(run_all(engine, ps, greedy(20)), reference);
    return engine.schedule_metrics();
  };
  // Free extra tokens: everything drafted is verified (the target drafts for itself, so
  // every draft is accepted and predictions approach the truth).
  const ScheduleMetrics idle = run(std::vector<double>(64, 1.0));
  EXPECT_GT(idle.mean_verified_length(), 3.0);
  // Step time grows with the square of the tokens in it: even certain drafts lose, nothing
  // is worth verifying, and the drafter is not even asked.
  std::vector<double> quadratic(64);
  for (int b = 1; b <= 64; ++b) quadratic[b - 1] = 1.0 / (b * b);
  const ScheduleMetrics busy = run(quadratic);
  EXPECT_EQ(busy.verified_drafts, 0);
  EXPECT_GT(busy.request_rounds, 0);
}

TEST(Engine, AdaptiveScheduleVerifiesUnmeasuredPositionsOfProposersWithoutConfidence) {
  // A proposer without a confidence head gets survival from acceptance measured online; a
  // position not yet measured must count as it does in the drafter budget (as certain), or
  // the budget keeps drafting what the admission never verifies and nothing is measured.
  // Here an admission that priced unmeasured drafts at 1/2 would verify none of them:
  // with 4 requests, 4 · SPS(4) = 1.29 beats 4.5 · SPS(5) = 1.18.
  auto [ps, reference, model, tok] = greedy_case(8, 20);
  Engine engine(*model, tok, adaptive_options(affine_sps(1.0, 0.7)), self_drafter());
  EXPECT_EQ(run_all(engine, ps, greedy(20)), reference);
  EXPECT_GT(engine.schedule_metrics().mean_verified_length(), 1.0);
}

// Wraps a proposer and rewrites each of its drafts: `rewrite` edits the tokens (a copy the
// wrapper owns) and returns the Draft over them.
class RewritingProposer final : public Proposer {
 public:
  using Rewrite = std::function<Draft(std::vector<int32_t>& tokens)>;
  RewritingProposer(std::unique_ptr<Proposer> inner, Rewrite rewrite)
      : inner_(std::move(inner)), rewrite_(std::move(rewrite)), drafts_(4) {}
  ProposerCapabilities capabilities() const override { return {.owns_kv_cache = true}; }
  int32_t num_speculative_tokens() const override { return inner_->num_speculative_tokens(); }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    inner_->propose(requests, drafts);
    for (size_t i = 0; i < requests.size(); ++i) {
      std::vector<int32_t>& d = drafts_[requests[i].slot];
      d.assign(drafts[i].tokens.begin(), drafts[i].tokens.end());
      drafts[i] = rewrite_(d);
    }
  }
  void release(int32_t slot) override { inner_->release(slot); }

 private:
  std::unique_ptr<Proposer> inner_;
  Rewrite rewrite_;
  std::vector<std::vector<int32_t>> drafts_;  // [slot]
};

// The self-drafter with each draft replaced by a wrong token with probability 0.2,
// independently, and without confidences: every position a round reaches (all earlier
// drafts accepted) passes with probability 0.8, so drafts 1..i survive with 0.8^i.
std::unique_ptr<Proposer> noisy_self_drafter() {
  auto rng = std::make_shared<Rng>(11);
  return std::make_unique<RewritingProposer>(self_drafter(), [rng](std::vector<int32_t>& d) {
    for (int32_t& t : d) {
      if (rng->uniform() < 0.2) t = (t + 1) % 97;
    }
    return Draft{d, nullptr, nullptr};
  });
}

TEST(Engine, AdaptiveScheduleMultipliesMeasuredPassRates) {
  // Step time 1 + 0.05 (B − 1). With the true survival 0.8, 0.64, 0.51, 0.41 every plan at
  // 1..4 requests verifies all 4 drafts. Multiplying the measured survival through each
  // position (0.8, 0.64, ...) instead of the pass rate at it would compound it (0.8, 0.51,
  // 0.26, 0.11) and cut the plans to 2–3 drafts once the positions are measured.
  auto [ps, reference, model, tok] = greedy_case(8, 60);
  Engine engine(*model, tok, adaptive_options(affine_sps(1.0, 0.05)), noisy_self_drafter());
  EXPECT_EQ(run_all(engine, ps, greedy(60)), reference);
  const SpecDecodeMetrics& m = engine.spec_metrics();
  EXPECT_GT(engine.schedule_metrics().mean_verified_length(), 3.7);
  EXPECT_NEAR(m.position_pass_rate(2), 0.8, 0.1);
  EXPECT_GE(m.reached_per_position[3], 32);  // position 4 was measured: the plans above used it
}

// Wraps a proposer: counts the calls that asked for drafts and makes each of them take at
// least `delay` seconds (a drafter slower than the machine's target steps).
class SlowProposer final : public Proposer {
 public:
  SlowProposer(std::unique_ptr<Proposer> inner, double delay) : inner_(std::move(inner)), delay_(delay) {}
  ProposerCapabilities capabilities() const override { return inner_->capabilities(); }
  int32_t num_speculative_tokens() const override { return inner_->num_speculative_tokens(); }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    const bool asked = std::any_of(requests.begin(), requests.end(), [](const DraftRequest& r) { return r.max_drafts > 0; });
    inner_->propose(requests, drafts);
    if (!asked) return;
    ++drafting_calls;
    const double until = now_seconds() + delay_;
    while (now_seconds() < until) {
    }
  }
  void release(int32_t slot) override { inner_->release(slot); }
  int64_t drafting_calls = 0;

 private:
  std::unique_ptr<Proposer> inner_;
  double delay_;
};

// The self-drafter with every first draft wrong and every draft's confidence 0.9, from the
// given source (Draft::confidence_source).
std::unique_ptr<Proposer> overconfident_self_drafter(ConfidenceSource source) {
  static const std::vector<float> confidence(8, 0.9f);
  return std::make_unique<RewritingProposer>(self_drafter(), [source](std::vector<int32_t>& d) {
    if (!d.empty()) d[0] = (d[0] + 1) % 97;
    return Draft{d, nullptr, confidence.data(), source};
  });
}

TEST(Engine, VerifiedRoundsCorrectEveryConfidenceSource) {
  auto [ps, reference, model, tok] = greedy_case(4, 20);
  auto predicted_first = [&](ConfidenceSource source, bool adapt) {
    EngineOptions options{.max_running = 4, .max_batch_tokens = 64};
    options.adapt_confidence = adapt;
    Engine engine(*model, tok, options, overconfident_self_drafter(source));
    EXPECT_EQ(run_all(engine, ps, greedy(20)), reference);
    EXPECT_EQ(engine.spec_metrics().calibration_survived[0], 0);
    return engine.spec_metrics().predicted_survival(0);
  };
  // Every round rejects the first draft: the 0.9 of a head, and of a lookup, is corrected
  // down by the rounds before.
  EXPECT_LT(predicted_first(ConfidenceSource::kHead, true), 0.6);
  EXPECT_LT(predicted_first(ConfidenceSource::kLookupWrapping, true), 0.6);
  // Unless adaptation is off: the proposer's confidences pass as they are.
  EXPECT_NEAR(predicted_first(ConfidenceSource::kHead, false), 0.9, 1e-6);
}

// The self-drafter (its drafts are the target's own: greedy ones always right, sampled ones
// drawn from q = p, so always accepted), its q kept, with a head that doubts the third and
// fourth drafts (0.02): the schedule cuts them, so no verified round shows how they fare.
class DoubtfulTailSelfDrafter final : public Proposer {
 public:
  ProposerCapabilities capabilities() const override { return inner_->capabilities(); }
  int32_t num_speculative_tokens() const override { return inner_->num_speculative_tokens(); }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    inner_->propose(requests, drafts);
    for (Draft& d : drafts) {
      d.confidence = kConfidence.data();
      d.confidence_source = ConfidenceSource::kHead;
    }
  }
  void observe(std::span<const CommittedHiddenStates> committed) override { inner_->observe(committed); }
  void release(int32_t slot) override { inner_->release(slot); }

 private:
  static constexpr std::array<float, 4> kConfidence = {0.9f, 0.9f, 0.02f, 0.02f};
  std::unique_ptr<Proposer> inner_ = self_drafter();
};

TEST(Engine, RoundsLearnTheFirstCutDraftTheyReach) {
  // Step time 1 + 0.05 (B - 1): a third draft predicted to survive with 0.9 · 0.9 · 0.02 is
  // not worth its token, so rounds verify two drafts, both accepted. The bonus token then
  // shows that the third would have survived as well: the head's offset at position 3
  // rises until the third draft is verified too. Learned from verified positions alone,
  // position 3 would never be observed and every round would stop at two.
  auto [ps, reference, model, tok] = greedy_case(8, 40);
  Engine engine(*model, tok, adaptive_options(affine_sps(1.0, 0.05)), std::make_unique<DoubtfulTailSelfDrafter>());
  EXPECT_EQ(run_all(engine, ps, greedy(40)), reference);
  const ConfidenceCalibrator& calibrator = engine.confidence_calibrator();
  EXPECT_GE(calibrator.num_positions(ConfidenceSource::kHead, /*greedy=*/true), 3);
  EXPECT_GT(calibrator.offset(ConfidenceSource::kHead, true, 2), 2.0);
  EXPECT_GT(engine.schedule_metrics().mean_verified_length(), 2.5);

  // Sampled requests learn it too, in their own offsets, from the acceptance test's
  // probability at the cut draft: min(1, p(x) / q(x)), 1 here.
  Engine sampled(*model, tok, adaptive_options(affine_sps(1.0, 0.05)), std::make_unique<DoubtfulTailSelfDrafter>());
  GenerationOptions g = greedy(40);
  g.sampling.temperature = 1.0f;
  run_all(sampled, ps, g);
  const ConfidenceCalibrator& sampled_calibrator = sampled.confidence_calibrator();
  EXPECT_GE(sampled_calibrator.num_positions(ConfidenceSource::kHead, /*greedy=*/false), 3);
  EXPECT_GT(sampled_calibrator.offset(ConfidenceSource::kHead, false, 2), 1.0);
}

TEST(Engine, AdaptiveScheduleStopsDraftingWhenTheDrafterCostsMoreThanItSaves) {
  auto [ps, reference, model, tok] = greedy_case(8, 40);
  // The cost table says 10 ms per step, +10% per extra token. The target drafts for itself,
  // so every draft is accepted and verifying four of them is worth 5 tokens a step.
  const std::vector<double> sps = affine_sps(100.0, 0.1);
  auto run = [&](double delay, int64_t& drafting_calls) {
    auto proposer = std::make_unique<SlowProposer>(self_drafter(), delay);
    SlowProposer* slow = proposer.get();
    Engine engine(*model, tok, adaptive_options(sps), std::move(proposer));
    EXPECT_EQ(run_all(engine, ps, greedy(40)), reference);
    drafting_calls = slow->drafting_calls;
    return engine.schedule_metrics();
  };
  // The real drafter (a few ms at most) pays: 4 requests x 5 tokens in 29 ms + its time
  // beat 4 x 1 token in 13 ms while it takes under 36 ms. It drafts in almost every step.
  int64_t fast_calls = 0;
  const ScheduleMetrics fast = run(0.0, fast_calls);
  EXPECT_GE(fast_calls, fast.steps * 8 / 10);
  EXPECT_GT(fast.mean_verified_length(), 1.5);
  // One that takes 300 ms never pays (at 4 requests or at 1) and is measured once after its
  // warm-up call, then asked again only every 64th step.
  int64_t slow_calls = 0;
  const ScheduleMetrics slow = run(0.3, slow_calls);
  EXPECT_LE(slow_calls, 2 + slow.steps / 64) << "fast drafter: " << fast_calls << " calls";
  EXPECT_GT(fast_calls, 4 * slow_calls);
  EXPECT_LT(slow.mean_verified_length(), 0.5);
}

TEST(Engine, CancelFreesBlocksAndFinishesRequest) {
  auto model = load(models().target_dir);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  Engine engine(*model, tok, EngineOptions{.max_running = 2, .max_batch_tokens = 64});
  FinishReason reason = FinishReason::kLength;
  bool finished = false;
  testing::RequestDriver driver(engine);
  const int64_t id = driver.add(prompts(1)[0], greedy(1000), [&](const RequestOutput& o) {
    if (o.finished) {
      finished = true;
      reason = o.finish_reason;
    }
  });
  for (int i = 0; i < 3; ++i) driver.step();
  EXPECT_GT(engine.stats().kv_blocks_used, 0);
  engine.cancel(id);
  driver.step();
  EXPECT_TRUE(finished);
  EXPECT_EQ(reason, FinishReason::kCancelled);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_FALSE(engine.has_unfinished());
}

TEST(Engine, RejectsInvalidRequests) {
  auto model = load(models().target_dir);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  Engine engine(*model, tok, EngineOptions{.max_running = 2, .max_batch_tokens = 64, .max_waiting = 1});
  EXPECT_THROW(engine.add_request({}, greedy(4)), Error);
  EXPECT_THROW(engine.add_request(std::vector<int32_t>(256, 5), greedy(4)), Error);  // fills the context
  EXPECT_THROW(engine.add_request({5, 97}, greedy(4)), Error);                      // id outside vocab
  GenerationOptions bad = greedy(4);
  bad.sampling.top_p = 0;
  EXPECT_THROW(engine.add_request({5}, bad), Error);
  EXPECT_NO_THROW(engine.add_request({5}, greedy(4)));
  EXPECT_THROW(engine.add_request({5}, greedy(4)), Error);  // queue full
}

TEST(Engine, MaxTokensAndContextLimit) {
  auto model = load(models().target_dir);
  const Tokenizer tok = Tokenizer::from_dir(models().target_dir);
  Engine engine(*model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 128},
                std::make_unique<NgramProposer>(NgramOptions{1, 3, 8}));
  const auto r = generate_one(engine, {5, 6, 5, 6, 5, 6}, greedy(7));
  EXPECT_EQ(r.tokens.size(), 7u);
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
  // Context: 256 positions; a 250-token prompt leaves 6.
  const auto r2 = generate_one(engine, std::vector<int32_t>(250, 9), greedy(100));
  EXPECT_EQ(r2.tokens.size(), 6u);
}

}  // namespace
}  // namespace dspark
