// Prefix caching through the engine on a tiny random model: outputs are the same tokens
// with and without it (sequential multi-turn requests, batched requests under KV pressure
// with evictions and preemptions), the hit counts are exactly the whole blocks computed
// before, and a hidden-state proposer is shown, for cached positions, the same bits the
// target would have computed.
#include <map>

#include <gtest/gtest.h>

#include "core/rng.h"
#include "engine/engine.h"
#include "support/engine_requests.h"

namespace dspark {
namespace {

using testing::greedy;
using testing::run_all;

const std::filesystem::path& model_dir() {
  static const auto dir = testing::write_tiny_engine_model("prefix-caching", 31, 2);
  return dir;
}

std::vector<int32_t> random_tokens(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(3 + rng.next_u64() % 90);
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A system prompt shared by every request, then each request's own question.
std::vector<std::vector<int32_t>> shared_prefix_prompts(int n) {
  const std::vector<int32_t> system = random_tokens(23, 1);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < n; ++i) out.push_back(concat(system, random_tokens(3 + i % 9, 100 + i)));
  return out;
}

EngineOptions options(bool caching) {
  return EngineOptions{.max_running = 4, .max_batch_tokens = 64, .prefill_chunk = 16, .block_size = 4,
                       .enable_prefix_caching = caching};
}

TEST(PrefixCaching, MultiTurnRequestsReuseTheWholeBlocksComputedBefore) {
  auto model = testing::load_tiny_engine_model(model_dir());
  const Tokenizer tok = Tokenizer::from_dir(model_dir());
  Engine cached(*model, tok, options(true));
  Engine plain(*model, tok, options(false));

  // Turn 1: 23 prompt tokens, 8 generated; the last generated token's KV is never
  // computed, so 30 positions are: 7 whole blocks of 4.
  const std::vector<int32_t> turn1 = random_tokens(23, 7);
  const GenerationResult a = generate_one(cached, turn1, greedy(8));
  EXPECT_EQ(a.tokens, generate_one(plain, turn1, greedy(8)).tokens);
  EXPECT_EQ(cached.stats().prefix_cache_hits, 0);
  EXPECT_EQ(cached.stats().kv_blocks_cached, 7);
  EXPECT_EQ(cached.stats().kv_blocks_used, 0);

  // Turn 2: the conversation so far plus 5 new tokens (36): the 7 blocks are reused.
  const std::vector<int32_t> turn2 = concat(concat(turn1, a.tokens), random_tokens(5, 8));
  const GenerationResult b = generate_one(cached, turn2, greedy(12));
  EXPECT_EQ(b.tokens, generate_one(plain, turn2, greedy(12)).tokens);
  EXPECT_EQ(b.cached_prompt_tokens, 28);
  EXPECT_EQ(cached.stats().prefix_cache_hits, 28);
  EXPECT_EQ(cached.stats().prefix_cache_queries, 23 + 36);

  // The same prompt again: everything but the block holding its last token.
  EXPECT_EQ(generate_one(cached, turn2, greedy(12)).tokens, b.tokens);
  EXPECT_EQ(cached.stats().prefix_cache_hits, 28 + 32);

  EXPECT_EQ(plain.stats().prefix_cache_hits, 0);
  EXPECT_EQ(plain.stats().kv_blocks_cached, 0);
}

TEST(PrefixCaching, BatchedSharedPrefixesUnderKvPressureKeepEveryToken) {
  auto model = testing::load_tiny_engine_model(model_dir());
  const Tokenizer tok = Tokenizer::from_dir(model_dir());
  const auto prompts = shared_prefix_prompts(12);
  Engine plain(*model, tok, options(false));
  const auto reference = run_all(plain, prompts, greedy(20));

  Engine cached(*model, tok, options(true));
  EXPECT_EQ(run_all(cached, prompts, greedy(20)), reference);
  // The first request prefills the system prompt; the eleven others wait for its 5 blocks
  // instead of computing them alongside it, and take them from the cache.
  EXPECT_GE(cached.stats().prefix_cache_hits, 11 * 20);

  // A context of 64 and a pool of 24 blocks for 4 requests of up to 54 positions (14
  // blocks each): blocks are evicted and requests preempted, and the outputs still do not
  // change.
  TransformerOptions short_context;
  short_context.max_batch_tokens = 128;
  short_context.max_sequences = 4;
  short_context.max_model_len = 64;
  auto short_model = Transformer::load(model_dir(), short_context);
  EngineOptions tight = options(true);
  tight.num_kv_blocks = 24;
  Engine pressed(*short_model, tok, tight);
  EXPECT_EQ(run_all(pressed, prompts, greedy(20)), reference);
  EXPECT_GT(pressed.stats().num_preemptions, 0);
  // And again, now that the pool holds whatever survived.
  EXPECT_EQ(run_all(pressed, prompts, greedy(20)), reference);
}

TEST(PrefixCaching, RequestsArrivingTogetherWithOnePromptPrefillItOnce) {
  // The n choices of one request: the same prompt four times at once. The first computes
  // it; the others wait for its blocks, then compute only the block holding the last token.
  auto model = testing::load_tiny_engine_model(model_dir());
  const Tokenizer tok = Tokenizer::from_dir(model_dir());
  const std::vector<std::vector<int32_t>> same(4, random_tokens(30, 3));
  Engine plain(*model, tok, options(false));
  const auto reference = run_all(plain, same, greedy(10));
  Engine cached(*model, tok, options(true));
  EXPECT_EQ(run_all(cached, same, greedy(10)), reference);
  EXPECT_EQ(cached.stats().prefix_cache_hits, 3 * 28);
  EXPECT_EQ(cached.stats().prefix_cache_queries, 4 * 30);
}

// Needs the target's hidden states of both layers, drafts nothing, and keeps what it was
// shown per request (a slot's rows move to `shown` when the slot is released).
class HiddenStateRecorder final : public Proposer {
 public:
  ProposerCapabilities capabilities() const override { return {.needs_target_hidden_states = true}; }
  int32_t num_speculative_tokens() const override { return 2; }
  std::vector<int32_t> target_layers() const override { return {0, 1}; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    for (size_t i = 0; i < requests.size(); ++i) drafts[i] = Draft{};
  }
  void observe(std::span<const CommittedHiddenStates> committed) override {
    for (const auto& c : committed) testing::record_hidden_states(c, 2, rows_[c.slot]);
  }

  void release(int32_t slot) override { shown.push_back(std::move(rows_[slot])), rows_.erase(slot); }

  std::vector<std::vector<std::vector<float>>> shown;  // per released request: position -> rows

 private:
  std::map<int32_t, std::vector<std::vector<float>>> rows_;
};

TEST(PrefixCaching, AHiddenStateProposerSeesTheSameStatesForCachedPositions) {
  TransformerOptions o;
  o.max_batch_tokens = 128;
  o.max_sequences = 1;
  o.capture_layers = {0, 1};
  auto model = Transformer::load(model_dir(), o);
  const Tokenizer tok = Tokenizer::from_dir(model_dir());
  auto run = [&](bool caching) {
    auto recorder = std::make_unique<HiddenStateRecorder>();
    HiddenStateRecorder* r = recorder.get();
    EngineOptions eo = options(caching);
    eo.max_running = 1;
    Engine engine(*model, tok, eo, std::move(recorder));
    for (const auto& p : shared_prefix_prompts(4)) generate_one(engine, p, greedy(6));
    EXPECT_EQ(engine.stats().prefix_cache_hits, caching ? 3 * 20 : 0);
    return r->shown;
  };
  const auto with_cache = run(true);
  const auto without = run(false);
  ASSERT_EQ(with_cache.size(), 4u);
  ASSERT_EQ(with_cache.size(), without.size());
  for (size_t i = 0; i < without.size(); ++i) {
    ASSERT_EQ(with_cache[i].size(), without[i].size()) << "request " << i;
    for (size_t p = 0; p < without[i].size(); ++p) {
      EXPECT_EQ(with_cache[i][p], without[i][p]) << "request " << i << " position " << p;
    }
  }
}

}  // namespace
}  // namespace dspark
