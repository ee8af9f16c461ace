// Per-request options that reach into the engine's sampling and speculation: presence and
// frequency penalties, logprobs, and the request's own cap on verified drafts. Each must
// keep speculative decoding lossless: greedy outputs (and their logprobs) identical to
// plain decoding, and the drafter's distribution the same transform as the target's.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"
#include "engine/engine.h"
#include "engine/token_logprobs.h"
#include "kernels/sampling.h"
#include "tokenizer/tokenizer.h"
#include "spec/draft_model_proposer.h"
#include "spec/ngram_proposer.h"
#include "support/engine_requests.h"
#include "support/engine_runner.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

using testing::repetitive_prompt;

const std::filesystem::path& target_dir() {
  static const std::filesystem::path dir = testing::write_tiny_engine_model("request-options-target", 1, 2);
  return dir;
}

std::unique_ptr<Transformer> load(int64_t max_sequences = 4) {
  return testing::load_tiny_engine_model(target_dir(), max_sequences);
}

GenerationOptions penalised_greedy(int64_t max_tokens) {
  GenerationOptions g = testing::greedy(max_tokens);
  g.sampling.presence_penalty = 0.8f;
  g.sampling.frequency_penalty = 0.5f;
  g.sampling.repetition_penalty = 1.2f;
  return g;
}

struct Runs {
  std::unique_ptr<Transformer> model = load();
  Tokenizer tok = Tokenizer::from_dir(target_dir());

  GenerationResult plain(const std::vector<int32_t>& prompt, const GenerationOptions& g) {
    Engine engine(*model, tok, EngineOptions{.max_running = 1, .max_batch_tokens = 128});
    return generate_one(engine, prompt, g);
  }
  // The target drafting for itself: with the same transform on both sides, every greedy
  // draft is the target's own choice.
  GenerationResult self_drafted(const std::vector<int32_t>& prompt, const GenerationOptions& g) {
    DraftModelOptions d{.num_speculative_tokens = 4, .max_running = 2, .block_size = 4};
    Engine engine(*model, tok, EngineOptions{.max_running = 2, .max_batch_tokens = 64},
                  std::make_unique<DraftModelProposer>(load(2), d));
    return generate_one(engine, prompt, g);
  }
  GenerationResult ngram(const std::vector<int32_t>& prompt, const GenerationOptions& g) {
    Engine engine(*model, tok, EngineOptions{.max_running = 2, .max_batch_tokens = 64},
                  std::make_unique<NgramProposer>(NgramOptions{1, 4, 6}));
    return generate_one(engine, prompt, g);
  }
};

TEST(RequestOptions, PenaltiesChangeTheOutputAndStayLosslessUnderSpeculation) {
  Runs runs;
  for (uint64_t seed : {1, 2, 3}) {
    const auto prompt = repetitive_prompt(seed);
    const GenerationOptions g = penalised_greedy(24);
    const GenerationResult plain = runs.plain(prompt, g);
    EXPECT_NE(plain.tokens, runs.plain(prompt, testing::greedy(24)).tokens) << "the penalties did nothing";
    EXPECT_EQ(runs.ngram(prompt, g).tokens, plain.tokens) << "seed " << seed;
    const GenerationResult self = runs.self_drafted(prompt, g);
    EXPECT_EQ(self.tokens, plain.tokens) << "seed " << seed;
    // The drafter applies the same penalties over the same output span, so it never
    // disagrees with the target.
    ASSERT_GT(self.spec_metrics.num_drafts, 0);
    EXPECT_EQ(self.spec_metrics.num_accepted_tokens, self.spec_metrics.num_draft_tokens) << "seed " << seed;
  }
}

TEST(RequestOptions, GreedyLogprobsAreTheSameBitsWithAndWithoutSpeculation) {
  Runs runs;
  GenerationOptions g = penalised_greedy(20);
  g.logprobs = 5;
  for (uint64_t seed : {4, 5}) {
    const auto prompt = repetitive_prompt(seed);
    const GenerationResult plain = runs.plain(prompt, g);
    ASSERT_EQ(plain.logprobs.size(), plain.tokens.size());
    for (const GenerationResult& spec : {runs.ngram(prompt, g), runs.self_drafted(prompt, g)}) {
      ASSERT_EQ(spec.tokens, plain.tokens);
      ASSERT_EQ(spec.logprobs.size(), plain.logprobs.size());
      for (size_t i = 0; i < plain.logprobs.size(); ++i) {
        EXPECT_EQ(spec.logprobs[i].token, plain.logprobs[i].token);
        EXPECT_EQ(spec.logprobs[i].logprob, plain.logprobs[i].logprob) << "token " << i;
        EXPECT_EQ(spec.logprobs[i].top, plain.logprobs[i].top) << "token " << i;
      }
    }
  }
}

// Each reported value against an independent computation: the target's logits for the
// whole sequence in one forward, the reference transform, log of the probability.
void expect_logprobs_match_reference(Runs& runs, const std::vector<int32_t>& prompt, const GenerationOptions& g,
                                     const GenerationResult& result) {
  std::vector<int32_t> sequence = prompt;
  sequence.insert(sequence.end(), result.tokens.begin(), result.tokens.end());
  testing::EngineRunner runner(*runs.model);
  const std::vector<float> logits = runner.run(runner.add_sequence(), sequence, 64);
  const int64_t vocab = runs.model->config().vocab_size;
  SamplingParams sp = g.sampling;
  if (sp.greedy()) sp = SamplingParams{1.0f, 0, 1.0f, 0.0f, sp.repetition_penalty, 0, sp.presence_penalty,
                                       sp.frequency_penalty};
  std::vector<float> p(static_cast<size_t>(vocab));
  ASSERT_EQ(result.logprobs.size(), result.tokens.size());
  for (size_t i = 0; i < result.tokens.size(); ++i) {
    const size_t position = prompt.size() + i;  // the token at `position` came from the row before it
    const std::vector<int32_t> history(sequence.begin(), sequence.begin() + static_cast<int64_t>(position));
    reference::to_probs(logits.data() + (position - 1) * vocab, p.data(), vocab, sp, history,
                        static_cast<int64_t>(prompt.size()));
    const TokenLogprob& lp = result.logprobs[i];
    EXPECT_EQ(lp.token, result.tokens[i]);
    EXPECT_NEAR(lp.logprob, std::log(static_cast<double>(p[result.tokens[i]])), 1e-4) << "token " << i;
    ASSERT_EQ(lp.top.size(), static_cast<size_t>(g.logprobs));
    for (size_t k = 0; k < lp.top.size(); ++k) {
      EXPECT_NEAR(lp.top[k].second, std::log(static_cast<double>(p[lp.top[k].first])), 1e-4) << i << "/" << k;
      if (k > 0) EXPECT_GE(lp.top[k - 1].second, lp.top[k].second);
    }
    if (g.sampling.greedy()) EXPECT_EQ(lp.top[0].first, lp.token) << "greedy picks the most likely token";
  }
}

TEST(RequestOptions, LogprobsMatchTheReferenceTransformGreedyAndSampled) {
  Runs runs;
  GenerationOptions greedy = penalised_greedy(16);
  greedy.logprobs = 3;
  const auto prompt = repetitive_prompt(6);
  expect_logprobs_match_reference(runs, prompt, greedy, runs.plain(prompt, greedy));

  GenerationOptions sampled = greedy;
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.top_k = 30;
  sampled.sampling.seed = 11;
  sampled.logprobs = 4;
  expect_logprobs_match_reference(runs, prompt, sampled, runs.plain(prompt, sampled));
  // Sampled under speculation: other tokens (the random stream differs), the same rule.
  const GenerationResult spec = runs.self_drafted(prompt, sampled);
  EXPECT_GT(spec.spec_metrics.num_drafts, 0);
  expect_logprobs_match_reference(runs, prompt, sampled, spec);
}

TEST(RequestOptions, LogprobsOffByDefault) {
  Runs runs;
  EXPECT_TRUE(runs.plain(repetitive_prompt(7), testing::greedy(8)).logprobs.empty());
}

TEST(RequestOptions, PerRequestSpeculationCap) {
  Runs runs;
  const auto prompt = repetitive_prompt(8);
  GenerationOptions g = testing::greedy(24);
  const GenerationResult uncapped = runs.self_drafted(prompt, g);
  EXPECT_GT(uncapped.spec_metrics.num_drafts, 0);
  g.max_spec_tokens = 0;
  const GenerationResult off = runs.self_drafted(prompt, g);
  EXPECT_EQ(off.tokens, uncapped.tokens);
  EXPECT_EQ(off.spec_metrics.num_drafts, 0);
  g.max_spec_tokens = 2;
  const GenerationResult two = runs.self_drafted(prompt, g);
  EXPECT_EQ(two.tokens, uncapped.tokens);
  ASSERT_GT(two.spec_metrics.num_drafts, 0);
  EXPECT_LE(two.spec_metrics.num_draft_tokens, 2 * two.spec_metrics.num_drafts);
  for (size_t i = 2; i < two.spec_metrics.drafted_per_position.size(); ++i) {
    EXPECT_EQ(two.spec_metrics.drafted_per_position[i], 0) << "a draft at position " << i;
  }
  EXPECT_EQ(two.spec_metrics.num_accepted_tokens, two.spec_metrics.num_draft_tokens);  // self-drafting
}

std::vector<int32_t> first(const std::vector<int32_t>& tokens, size_t n) {
  return {tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(std::min(n, tokens.size()))};
}

// stop_token_ids end the output before the token (finish "stop"); min_tokens masks them and
// EOS until the output is that long, so the first min_tokens tokens are those of a request
// that bans them outright (a -100 logit bias). Both lossless under speculation, greedy and
// seeded.
TEST(RequestOptions, StopTokensAndMinTokensStayLosslessUnderSpeculation) {
  Runs runs;
  const auto& eos = runs.tok.eos_ids();  // none in this tokenizer: the server test covers EOS
  for (uint64_t seed : {1, 2}) {
    SCOPED_TRACE(seed);
    const auto prompt = repetitive_prompt(seed);
    GenerationOptions base = testing::greedy(24);
    base.ignore_eos = false;
    const GenerationResult plain = runs.plain(prompt, base);
    ASSERT_GE(plain.tokens.size(), 6u);
    const int32_t stop = plain.tokens[3];
    const size_t stop_at = static_cast<size_t>(std::find(plain.tokens.begin(), plain.tokens.end(), stop) -
                                               plain.tokens.begin());
    GenerationOptions g = base;
    g.stop_token_ids = {stop};
    const GenerationResult stopped = runs.plain(prompt, g);
    EXPECT_EQ(stopped.tokens, first(plain.tokens, stop_at));
    EXPECT_EQ(stopped.finish_reason, FinishReason::kStop);
    EXPECT_EQ(runs.ngram(prompt, g).tokens, stopped.tokens);
    EXPECT_EQ(runs.self_drafted(prompt, g).tokens, stopped.tokens);

    constexpr int64_t kMin = 12;
    g.min_tokens = kMin;
    const GenerationResult at_least = runs.plain(prompt, g);
    ASSERT_GE(at_least.tokens.size(), static_cast<size_t>(kMin));
    EXPECT_EQ(std::count(at_least.tokens.begin(), at_least.tokens.end(), stop), 0);
    GenerationOptions banned = base;
    banned.max_tokens = kMin;
    banned.sampling.logit_bias = {{stop, -100.0f}};
    for (const int32_t id : eos) banned.sampling.logit_bias.emplace_back(id, -100.0f);
    banned.sampling.sort_logit_bias();
    EXPECT_EQ(first(at_least.tokens, kMin), runs.plain(prompt, banned).tokens);
    for (const GenerationResult& speculated : {runs.ngram(prompt, g), runs.self_drafted(prompt, g)}) {
      EXPECT_EQ(speculated.tokens, at_least.tokens);
      EXPECT_EQ(speculated.finish_reason, at_least.finish_reason);
    }

    GenerationOptions sampled = g;
    sampled.sampling.temperature = 1.0f;
    sampled.sampling.seed = seed;
    sampled.sampling.position_keyed = true;
    const GenerationResult keyed = runs.plain(prompt, sampled);
    ASSERT_GE(keyed.tokens.size(), static_cast<size_t>(kMin));
    EXPECT_EQ(std::count(keyed.tokens.begin(), keyed.tokens.end(), stop), 0);
    EXPECT_EQ(runs.ngram(prompt, sampled).tokens, keyed.tokens);
    EXPECT_EQ(runs.self_drafted(prompt, sampled).tokens, keyed.tokens);
  }
}

// prompt_logprobs: every prompt token after the first, under the model's own distribution
// at the position before it, whatever the prefill chunking, prefix caching (a cached
// prompt is computed again for them) or speculation; the reference runs the whole prompt
// through one forward and takes the same softmax (batch invariance: the same bits).
TEST(RequestOptions, PromptLogprobsAreTheModelsOwnAtEveryPromptPosition) {
  Runs runs;
  const std::vector<int32_t> prompt = repetitive_prompt(5);
  ASSERT_GE(prompt.size(), 12u);
  testing::EngineRunner reference(*runs.model);
  const std::vector<float> logits = reference.run(reference.add_sequence(), prompt, static_cast<int64_t>(prompt.size()));
  const int64_t vocab = runs.model->config().vocab_size;
  LogitsProcessor processor(vocab);
  std::vector<float> probs(vocab);
  constexpr int32_t kTop = 3;
  std::vector<TokenLogprob> expected;
  for (size_t p = 0; p + 1 < prompt.size(); ++p) {
    processor.to_probs(logits.data() + p * vocab, probs.data(), SamplingParams{}, {}, 0);
    expected.push_back(token_logprob(probs.data(), vocab, prompt[p + 1], kTop));
    double max = -1e30, sum = 0;  // and it is the log-softmax, computed plainly
    for (int64_t v = 0; v < vocab; ++v) max = std::max<double>(max, logits[p * vocab + v]);
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(logits[p * vocab + v] - max);
    EXPECT_NEAR(expected.back().logprob, logits[p * vocab + prompt[p + 1]] - max - std::log(sum), 1e-4);
  }
  auto same = [&](const GenerationResult& result, const char* what) {
    ASSERT_EQ(result.prompt_logprobs.size(), expected.size()) << what;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(result.prompt_logprobs[i].token, expected[i].token) << what << " " << i;
      EXPECT_EQ(result.prompt_logprobs[i].logprob, expected[i].logprob) << what << " " << i;
      EXPECT_EQ(result.prompt_logprobs[i].top, expected[i].top) << what << " " << i;
    }
  };
  GenerationOptions g = testing::greedy(4);
  g.prompt_logprobs = kTop;
  // Prefill in chunks of 5 tokens, twice with the prefix cache on (the second finds the
  // prompt cached and must compute it anyway), then with the n-gram speculator.
  Engine chunked(*runs.model, runs.tok,
                 EngineOptions{.max_running = 1, .max_batch_tokens = 5, .prefill_chunk = 5, .block_size = 4});
  same(generate_one(chunked, prompt, g), "chunked");
  const GenerationResult again = generate_one(chunked, prompt, g);
  same(again, "again");
  EXPECT_EQ(again.cached_prompt_tokens, 0);
  const GenerationResult cached = generate_one(chunked, prompt, testing::greedy(4));
  EXPECT_GT(cached.cached_prompt_tokens, 0) << "the prompt was in the cache";
  EXPECT_TRUE(cached.prompt_logprobs.empty());
  same(runs.ngram(prompt, g), "ngram");
  EXPECT_EQ(runs.ngram(prompt, g).tokens, runs.plain(prompt, testing::greedy(4)).tokens);
}

TEST(RequestOptions, InvalidValuesAreRefused) {
  GenerationOptions g;
  g.logprobs = 21;
  EXPECT_THROW(g.validate(), Error);
  g.logprobs = -2;
  EXPECT_THROW(g.validate(), Error);
  g = {};
  g.max_spec_tokens = -2;
  EXPECT_THROW(g.validate(), Error);
  g = {};
  g.sampling.presence_penalty = 3;
  EXPECT_THROW(g.validate(), Error);
  g = {};
  g.min_tokens = g.max_tokens + 1;
  EXPECT_THROW(g.validate(), Error);
  g.min_tokens = -1;
  EXPECT_THROW(g.validate(), Error);
  g.min_tokens = g.max_tokens;
  EXPECT_NO_THROW(g.validate());
  g.response_format = ResponseFormat::kJsonObject;
  EXPECT_THROW(g.validate(), Error);
  g = {};
  g.prompt_logprobs = 21;
  EXPECT_THROW(g.validate(), Error);
  g = {};
  g.stop_token_ids = {-1};
  EXPECT_THROW(g.validate(), Error);
  g.stop_token_ids.assign(kMaxStopTokenIds + 1, 1);
  EXPECT_THROW(g.validate(), Error);
  g.stop_token_ids.assign(kMaxStopTokenIds, 1);
  EXPECT_NO_THROW(g.validate());
}

}  // namespace
}  // namespace dspark
