// EngineLoop on stories260K: requests submitted from many threads produce exactly the
// offline outputs; cancellation frees KV blocks; the queue limit refuses the excess;
// shutdown cancels what is left and joins; invalid requests are refused at submit; the
// published stats carry the confidence offsets the engine learned.
#include "engine/engine_loop.h"

#include <array>
#include <span>
#include <thread>

#include <gtest/gtest.h>

#include "server/test_server.h"
#include "spec/ngram_proposer.h"

namespace dspark {
namespace {

using testing::OfflineReference;
using testing::greedy_options;

struct Stories {
  std::unique_ptr<Transformer> model;
  std::unique_ptr<Tokenizer> tokenizer;
  Stories(int64_t max_sequences = 8) {
    TransformerOptions o;
    o.compute = DType::kF32;
    o.max_sequences = max_sequences;
    o.max_batch_tokens = 128;
    model = Transformer::load(testing::stories_dir(), o);
    tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_dir(testing::stories_dir()));
  }
};

EngineOptions engine_options(int64_t max_running) {
  EngineOptions e;
  e.max_running = max_running;
  e.max_batch_tokens = 128;
  e.prefill_chunk = 128;
  return e;
}

EngineLoopOptions loop_options(int64_t max_waiting) {
  EngineLoopOptions o;
  o.max_waiting = max_waiting;
  return o;
}

// Drains a stream; returns (text, tokens, final update).
struct Collected {
  std::string text;
  std::vector<int32_t> tokens;
  StreamUpdate last;
};

Collected collect(RequestStream& stream) {
  Collected c;
  StreamUpdate u;
  for (int i = 0; i < 2000; ++i) {  // at most 100 s
    if (!stream.next(u, std::chrono::milliseconds(50))) continue;
    c.text += u.text;
    c.tokens.insert(c.tokens.end(), u.token_ids.begin(), u.token_ids.end());
    if (u.finished) {
      c.last = u;
      return c;
    }
  }
  ADD_FAILURE() << "stream did not finish";
  return c;
}

const std::vector<std::string> kPrompts = {"Once upon a time", "The cat sat", "Lily and Ben went to the park",
                                           "One day, a little bird", "Tom had a red ball", "The sun was hot",
                                           "Mom said", "A big dog"};

TEST(EngineLoop, ConcurrentSubmittersGetOfflineOutputs) {
  Stories s;
  OfflineReference offline;
  std::vector<GenerationResult> expected;
  for (const auto& p : kPrompts) expected.push_back(offline.run(offline.encode(p), greedy_options(40)));

  EngineLoop loop(*s.model, *s.tokenizer, engine_options(4), std::make_unique<NgramProposer>(NgramOptions{1, 3, 4}),
                  loop_options(16));
  std::vector<Collected> got(kPrompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    threads.emplace_back([&, i] {
      auto stream = loop.submit(s.tokenizer->encode(kPrompts[i], true), greedy_options(40));
      got[i] = collect(*stream);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    EXPECT_EQ(got[i].tokens, expected[i].tokens) << kPrompts[i];
    EXPECT_EQ(got[i].text, expected[i].text) << kPrompts[i];
    EXPECT_EQ(got[i].last.finish_reason, expected[i].finish_reason);
    EXPECT_EQ(got[i].last.output_tokens, static_cast<int64_t>(expected[i].tokens.size()));
  }
  ASSERT_TRUE(loop.drain(std::chrono::milliseconds(1000)));
  const EngineLoopStats stats = loop.stats();
  EXPECT_EQ(stats.engine.kv_blocks_used, 0);
  EXPECT_EQ(stats.in_flight, 0);
  EXPECT_GT(stats.spec.num_drafts, 0);
}

// Drafts <unk> (token 0, which greedy stories260K never emits) with confidence 0.9, so every
// round rejects a draft the drafter was sure of.
class SureButWrongProposer final : public Proposer {
 public:
  ProposerCapabilities capabilities() const override { return {}; }
  int32_t num_speculative_tokens() const override { return 1; }
  void propose(std::span<const DraftRequest> requests, std::span<Draft> drafts) override {
    for (size_t i = 0; i < requests.size(); ++i)
      drafts[i] = requests[i].max_drafts > 0 ? Draft{kToken, nullptr, kConfidence.data()} : Draft{};
  }

 private:
  static constexpr std::array<int32_t, 1> kToken{0};
  static constexpr std::array<float, 1> kConfidence{0.9f};
};

TEST(EngineLoop, StatsCarryTheConfidenceOffsetsTheEngineLearned) {
  Stories s;
  EngineLoop loop(*s.model, *s.tokenizer, engine_options(2), std::make_unique<SureButWrongProposer>());
  auto stream = loop.submit(s.tokenizer->encode("Once upon a time", true), greedy_options(20));
  EXPECT_EQ(collect(*stream).tokens.size(), 20u);
  ASSERT_TRUE(loop.drain(std::chrono::milliseconds(1000)));
  const EngineLoopStats stats = loop.stats();
  EXPECT_GE(stats.spec.num_drafts, 10);
  EXPECT_EQ(stats.spec.num_accepted_tokens, 0);
  // One position verified, by greedy requests, from the head's confidences: its offset
  // has pulled the 0.9 far down; nothing else was learned.
  ASSERT_EQ(stats.confidence.num_positions(ConfidenceSource::kHead, true), 1);
  EXPECT_LT(stats.confidence.offset(ConfidenceSource::kHead, true, 0), -1.0);
  EXPECT_EQ(stats.confidence.num_positions(ConfidenceSource::kHead, false), 0);
}

TEST(EngineLoop, CancelFreesBlocksAndFinishesTheStream) {
  Stories s;
  EngineLoop loop(*s.model, *s.tokenizer, engine_options(2), nullptr);
  GenerationOptions g = greedy_options(400);
  g.ignore_eos = true;
  auto stream = loop.submit(s.tokenizer->encode("Once upon a time", true), g);
  StreamUpdate u;
  while (u.token_ids.empty()) stream->next(u, std::chrono::milliseconds(50));  // it is running
  loop.cancel(stream);
  loop.cancel(stream);  // twice is harmless
  const Collected rest = collect(*stream);
  EXPECT_EQ(rest.last.finish_reason, FinishReason::kCancelled);
  EXPECT_LT(rest.last.output_tokens, 400);
  ASSERT_TRUE(loop.drain(std::chrono::milliseconds(1000)));
  EXPECT_EQ(loop.stats().engine.kv_blocks_used, 0);
  EXPECT_EQ(loop.stats().finished[static_cast<size_t>(FinishReason::kCancelled)], 1);
}

// Stop strings are matched on the output thread: the text ends just before the stop
// string, the tokens at the one that completed it, the engine is told to drop the request
// (it may have gone further) and frees its blocks, and the finish counts as "stop".
TEST(EngineLoop, AStopStringEndsTheRequestAndTheEngineLetsItGo) {
  Stories s;
  EngineLoop loop(*s.model, *s.tokenizer, engine_options(2), std::make_unique<NgramProposer>(NgramOptions{1, 3, 4}));
  GenerationOptions g = greedy_options(120);
  g.ignore_eos = true;
  const auto prompt = s.tokenizer->encode("Once upon a time", true);
  const Collected full = collect(*loop.submit(prompt, g));
  ASSERT_GT(full.text.size(), 60u);
  const std::string stop = full.text.substr(40, 6);
  const std::string expected = full.text.substr(0, full.text.find(stop));
  g.stop = {stop};
  const Collected cut = collect(*loop.submit(prompt, g));
  EXPECT_EQ(cut.text, expected);
  EXPECT_EQ(cut.last.finish_reason, FinishReason::kStop);
  ASSERT_FALSE(cut.tokens.empty());
  EXPECT_EQ(cut.last.output_tokens, static_cast<int64_t>(cut.tokens.size()));
  EXPECT_LT(cut.tokens.size(), full.tokens.size());
  // The tokens are a prefix of the full run's, ending where the stop string completes.
  EXPECT_TRUE(std::equal(cut.tokens.begin(), cut.tokens.end(), full.tokens.begin()));
  const std::string upto = s.tokenizer->decode(cut.tokens);
  EXPECT_NE(upto.find(stop), std::string::npos);
  EXPECT_EQ(s.tokenizer->decode(std::span<const int32_t>(cut.tokens.data(), cut.tokens.size() - 1)).find(stop), std::string::npos);
  ASSERT_TRUE(loop.drain(std::chrono::milliseconds(1000)));
  const EngineLoopStats stats = loop.stats();
  EXPECT_EQ(stats.engine.kv_blocks_used, 0);
  EXPECT_EQ(stats.finished[static_cast<size_t>(FinishReason::kStop)], 1);
  EXPECT_EQ(stats.generation_tokens, static_cast<int64_t>(full.tokens.size() + cut.tokens.size()));
}

TEST(EngineLoop, QueueLimitRefusesTheExcess) {
  Stories s;
  EngineLoop loop(*s.model, *s.tokenizer, engine_options(1), nullptr, loop_options(1));
  loop.pause();  // nothing runs: the two admitted requests stay in flight
  const auto prompt = s.tokenizer->encode("Hello", true);
  auto a = loop.submit(prompt, greedy_options(5));
  auto b = loop.submit(prompt, greedy_options(5));
  EXPECT_THROW(loop.submit(prompt, greedy_options(5)), QueueFullError);
  EXPECT_EQ(loop.stats().num_rejected, 1);
  // A cancelled queued request is reported without reaching the engine.
  loop.cancel(b);
  loop.resume();
  EXPECT_EQ(collect(*a).last.finish_reason, FinishReason::kLength);
  EXPECT_EQ(collect(*b).last.finish_reason, FinishReason::kCancelled);
  ASSERT_TRUE(loop.drain(std::chrono::milliseconds(1000)));
  EXPECT_NO_THROW(loop.submit(prompt, greedy_options(2)));  // room again
}

TEST(EngineLoop, InvalidRequestsAreRefusedAtSubmit) {
  Stories s;
  EngineLoop loop(*s.model, *s.tokenizer, engine_options(1), nullptr);
  EXPECT_THROW(loop.submit({}, greedy_options(5)), Error);
  EXPECT_THROW(loop.submit(std::vector<int32_t>(512, 5), greedy_options(5)), Error);  // no room in the context
  EXPECT_THROW(loop.submit({1, 600}, greedy_options(5)), Error);                      // outside the vocabulary
  GenerationOptions bad = greedy_options(5);
  bad.sampling.top_p = 0;
  EXPECT_THROW(loop.submit({1}, bad), Error);
  EXPECT_EQ(loop.stats().in_flight, 0);
}

TEST(EngineLoop, StopCancelsInFlightAndRefusesNewRequests) {
  Stories s;
  EngineLoop loop(*s.model, *s.tokenizer, engine_options(2), nullptr, loop_options(4));
  loop.pause();
  auto a = loop.submit(s.tokenizer->encode("Once", true), greedy_options(50));
  auto b = loop.submit(s.tokenizer->encode("Twice", true), greedy_options(50));
  EXPECT_FALSE(loop.drain(std::chrono::milliseconds(20)));  // paused: nothing finishes
  loop.stop();
  EXPECT_EQ(collect(*a).last.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(collect(*b).last.finish_reason, FinishReason::kCancelled);
  EXPECT_THROW(loop.submit({1}, greedy_options(5)), ShuttingDownError);
  EXPECT_EQ(loop.stats().engine.kv_blocks_used, 0);
}

TEST(EngineLoop, AFailedStepFinishesItsRequestsWithAnErrorAndTheLoopGoesOn) {
  Stories s;
  auto proposer = std::make_unique<testing::FailingProposer>();
  testing::FailingProposer* faulty = proposer.get();
  EngineLoop loop(*s.model, *s.tokenizer, engine_options(2), std::move(proposer));
  GenerationOptions g = greedy_options(400);
  g.ignore_eos = true;
  auto victim = loop.submit(s.tokenizer->encode("Once upon a time", true), g);
  StreamUpdate u;
  while (u.token_ids.empty()) victim->next(u, std::chrono::milliseconds(50));  // decoding: it gets drafted
  faulty->armed = true;
  const Collected failed = collect(*victim);
  EXPECT_EQ(failed.last.finish_reason, FinishReason::kError);
  EXPECT_NE(failed.last.error.find("the drafter failed"), std::string::npos);
  ASSERT_TRUE(loop.drain(std::chrono::milliseconds(1000)));
  EXPECT_EQ(loop.stats().finished[static_cast<size_t>(FinishReason::kError)], 1);

  auto next = loop.submit(s.tokenizer->encode("Once upon a time", true), greedy_options(10));
  EXPECT_EQ(collect(*next).last.finish_reason, FinishReason::kLength);
  ASSERT_TRUE(loop.drain(std::chrono::milliseconds(1000)));
  EXPECT_EQ(loop.stats().engine.kv_blocks_used, 0);
}

}  // namespace
}  // namespace dspark
