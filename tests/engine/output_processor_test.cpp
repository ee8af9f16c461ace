// OutputProcessor with scripted target logits: for a json_object request the mask lets only
// tokens that continue a JSON object through, however the logits rank the others, and the
// request finishes ("stop") the moment its object closes.
#include "engine/output_processor.h"

#include <fstream>
#include <limits>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/detokenizer.h"
#include "structured/json_matcher.h"
#include "structured/token_bytes.h"
#include "structured/token_mask.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kVocab = 97;  // write_tiny_tokenizer: id = char - '!' for '!'..'~'

int32_t id_of(char c) { return static_cast<int32_t>(c - '!'); }

TEST(OutputProcessor, AJsonObjectRequestTakesOnlyValidTokensAndStopsWhenTheObjectCloses) {
  const auto dir = testing::write_tiny_tokenizer(testing::make_temp_dir("output-processor"), kVocab);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  const TokenMasker masker(token_bytes(tok, kVocab, tok.eos_ids()));
  OutputProcessor processor(kVocab, /*max_model_len=*/256, /*max_drafts=*/0, tok);

  GenerationOptions g;
  g.max_tokens = 100;
  g.sampling.temperature = 0;
  g.response_format = ResponseFormat::kJsonObject;
  Request r(1, {id_of('Q'), id_of(':')}, g);
  Detokenizer detokenizer(tok, {});
  r.grammar = std::make_unique<GrammarConstraint>(masker);
  r.num_computed = 1;  // the prompt's last token is the anchor

  // Every step the logits put first a character that cannot come next (where one exists:
  // inside a string anything printable can), the intended one second, the rest far below.
  const std::string intended = "{\"a\":[1,true],\"b\":{}}";
  std::vector<RequestOutput> outputs;
  std::string text;
  JsonMatcher state{JsonMatcherOptions{}};
  int decoys = 0;
  for (size_t i = 0; i < intended.size(); ++i) {
    std::vector<float> logits(kVocab, -10.0f);
    for (char decoy : std::string("x}]:,0\"{")) {
      JsonMatcher probe = state;
      if (probe.advance(static_cast<uint8_t>(decoy))) continue;
      logits[id_of(decoy)] = 5.0f;
      ++decoys;
      break;
    }
    logits[id_of(intended[i])] = 4.0f;
    ASSERT_TRUE(state.advance(static_cast<uint8_t>(intended[i])));
    outputs.clear();
    processor.commit(r, logits.data(), outputs);
    ASSERT_EQ(outputs.size(), 1u) << "step " << i;
    detokenizer.process(outputs[0]);
    text += outputs[0].text;
    if (i + 1 < intended.size()) {
      ASSERT_FALSE(outputs[0].finished) << "finished early at step " << i << ": " << text;
    } else {
      EXPECT_TRUE(outputs[0].finished);
      EXPECT_EQ(outputs[0].finish_reason, FinishReason::kStop);
    }
  }
  EXPECT_EQ(text, intended);
  EXPECT_EQ(r.state, RequestState::kFinished);
  EXPECT_GT(decoys, 15) << "the mask was hardly exercised";
}

TEST(OutputProcessor, WithoutAConstraintTheLogitsDecide) {
  const auto dir = testing::write_tiny_tokenizer(testing::make_temp_dir("output-processor-free"), kVocab);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  OutputProcessor processor(kVocab, 256, 0, tok);
  GenerationOptions g;
  g.max_tokens = 1;
  g.sampling.temperature = 0;
  Request r(1, {id_of('Q')}, g);
  std::vector<float> logits(kVocab, -10.0f);
  logits[id_of('x')] = 5.0f;
  std::vector<RequestOutput> outputs;
  processor.commit(r, logits.data(), outputs);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].token_ids, std::vector<int32_t>{id_of('x')});
  EXPECT_TRUE(outputs[0].text.empty());  // text is made beside the engine
  Detokenizer detokenizer(tok, {});
  detokenizer.process(outputs[0]);
  EXPECT_EQ(outputs[0].text, "x");
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kLength);
}

// min_tokens masks EOS and the stop tokens in every row whose token would leave the
// output shorter, rows of one verification round included (the boundary can fall inside
// it); then EOS ends the output (kEos) and a stop token too (kStop), neither kept.
TEST(OutputProcessor, MinTokensKeepsEosAndStopTokensOutOfTheFirstTokens) {
  const auto dir = testing::write_tiny_tokenizer(testing::make_temp_dir("output-processor-min-tokens"), kVocab);
  std::ofstream(dir / "generation_config.json") << nlohmann::json{{"eos_token_id", id_of('$')}}.dump();
  const Tokenizer tok = Tokenizer::from_dir(dir);
  ASSERT_EQ(tok.eos_ids(), std::vector<int32_t>{id_of('$')});
  OutputProcessor processor(kVocab, 256, /*max_drafts=*/2, tok);
  // Every row ranks EOS first, the stop token '#' second, 'a' third.
  auto rows = [](int n) {
    std::vector<float> logits(n * kVocab, -10.0f);
    for (int j = 0; j < n; ++j) {
      logits[j * kVocab + id_of('$')] = 6.0f;
      logits[j * kVocab + id_of('#')] = 5.0f;
      logits[j * kVocab + id_of('a')] = 4.0f;
    }
    return logits;
  };
  GenerationOptions g;
  g.max_tokens = 10;
  g.sampling.temperature = 0;
  g.min_tokens = 3;
  g.stop_token_ids = {id_of('#')};
  Request r(1, {id_of('Q')}, g);
  r.spec_metrics = SpecDecodeMetrics(2);
  std::vector<RequestOutput> outputs;
  processor.commit(r, rows(1).data(), outputs);  // output token 1: both masked
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].token_ids, std::vector<int32_t>{id_of('a')});
  // Drafts for tokens 2 and 3: their rows are masked, the row after them is not.
  r.drafts = {id_of('a'), id_of('a')};
  outputs.clear();
  const OutputProcessor::Verdict v = processor.commit(r, rows(3).data(), outputs);
  EXPECT_EQ(v.num_accepted, 2);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].token_ids, (std::vector<int32_t>{id_of('a'), id_of('a')}));
  EXPECT_TRUE(outputs[0].finished);
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kEos);
  EXPECT_EQ(r.num_output_tokens(), 3);

  // Without min_tokens: with EOS ignored, the stop token ends the output at once.
  g.min_tokens = 0;
  g.ignore_eos = true;
  Request stopped(2, {id_of('Q')}, g);
  std::vector<float> logits = rows(1);
  logits[id_of('#')] = 7.0f;
  outputs.clear();
  processor.commit(stopped, logits.data(), outputs);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TRUE(outputs[0].token_ids.empty());
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kStop);
  // With EOS ignored, min_tokens masks the stop tokens only: EOS is an ordinary token.
  g.min_tokens = 2;
  Request ignoring(3, {id_of('Q')}, g);
  outputs.clear();
  processor.commit(ignoring, logits.data(), outputs);
  EXPECT_EQ(outputs[0].token_ids, std::vector<int32_t>{id_of('$')});
}

// A round whose verified drafts all survive computes the target's row where the first
// unverified draft would have gone: the verdict gives the probability that draft would
// have survived too. Greedy (and position-keyed) requests: 1 or 0, whether it is the token
// emitted there; other sampled requests: min(1, p(x) / q(x)). Nothing when a verified draft
// was rejected (the round never reached it).
TEST(OutputProcessor, ARoundThatAcceptsEveryVerifiedDraftShowsHowTheFirstCutOneWouldHaveFared) {
  const auto dir = testing::write_tiny_tokenizer(testing::make_temp_dir("output-processor-unverified"), kVocab);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  OutputProcessor processor(kVocab, 256, /*max_drafts=*/4, tok);
  // Rows for the anchor and drafts 'a', 'b' (all their mass on 'a', 'b'), then a row whose
  // mass is on `next` alone, or split evenly between 'c' and 'd' when next is '?'.
  auto rows = [](char next) {
    std::vector<float> logits(3 * kVocab, -40.0f);
    logits[0 * kVocab + id_of('a')] = 5.0f;
    logits[1 * kVocab + id_of('b')] = 5.0f;
    if (next == '?') {
      logits[2 * kVocab + id_of('c')] = 5.0f;
      logits[2 * kVocab + id_of('d')] = 5.0f;
    } else {
      logits[2 * kVocab + id_of(next)] = 5.0f;
    }
    return logits;
  };
  // q, when given: [3 drafts, vocab], the cut draft 'c' drawn with probability q_c.
  auto round = [&](float temperature, std::vector<int32_t> drafts, int32_t unverified, char next,
                   float q_c = -1.0f) {
    GenerationOptions g;
    g.max_tokens = 10;
    g.sampling.temperature = temperature;
    Request r(1, {id_of('Q')}, g);
    r.spec_metrics = SpecDecodeMetrics(4);
    r.drafts = std::move(drafts);
    r.drafts.push_back(unverified);
    std::vector<float> q(3 * kVocab, 0.0f);
    if (q_c >= 0) {
      for (int j = 0; j < 3; ++j) q[j * kVocab + r.drafts[j]] = 1.0f;
      q[2 * kVocab + id_of('c')] = q_c;
      q[2 * kVocab + id_of('e')] = 1.0f - q_c;
      r.draft_probs = q.data();
    }
    r.keep_drafts(2);
    EXPECT_EQ(r.unverified_draft, unverified);
    std::vector<RequestOutput> outputs;
    const std::vector<float> logits = rows(next);
    const OutputProcessor::Verdict v = processor.commit(r, logits.data(), outputs);
    EXPECT_EQ(r.unverified_draft, -1);  // one round's knowledge
    return v;
  };
  const std::vector<int32_t> ab = {id_of('a'), id_of('b')};
  const OutputProcessor::Verdict right = round(0, ab, id_of('c'), 'c');
  EXPECT_EQ(right.num_accepted, 2);
  EXPECT_EQ(right.unverified_survival, std::optional<double>(1.0));
  EXPECT_EQ(round(0, ab, id_of('c'), 'd').unverified_survival, std::optional<double>(0.0));
  const OutputProcessor::Verdict rejected = round(0, {id_of('a'), id_of('x')}, id_of('c'), 'c');
  EXPECT_EQ(rejected.num_accepted, 1);
  EXPECT_FALSE(rejected.unverified_survival.has_value());
  // Sampled: p(c) = 1/2 at the cut position. A one-hot q accepts with p(c); q(c) = 1/4
  // with min(1, 2) = 1; q(c) = 1 with 1/2; and p(c) = 1 with 1.
  const OutputProcessor::Verdict sampled = round(1.0f, ab, id_of('c'), '?');
  EXPECT_EQ(sampled.num_accepted, 2);
  ASSERT_TRUE(sampled.unverified_survival.has_value());
  EXPECT_NEAR(*sampled.unverified_survival, 0.5, 1e-6);
  EXPECT_NEAR(round(1.0f, ab, id_of('c'), '?', 0.25f).unverified_survival.value_or(-1), 1.0, 1e-6);
  EXPECT_NEAR(round(1.0f, ab, id_of('c'), '?', 1.0f).unverified_survival.value_or(-1), 0.5, 1e-6);
  EXPECT_NEAR(round(1.0f, ab, id_of('c'), 'c').unverified_survival.value_or(-1), 1.0, 1e-6);
}

// Drafts cleared after the schedule cut them (the request preempted before its round was
// verified) leave no cut draft behind: the request's next commit observes nothing past it.
TEST(OutputProcessor, ClearedDraftsLeaveNoCutDraftToObserve) {
  const auto dir = testing::write_tiny_tokenizer(testing::make_temp_dir("output-processor-cleared"), kVocab);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  OutputProcessor processor(kVocab, 256, /*max_drafts=*/4, tok);
  GenerationOptions g;
  g.max_tokens = 10;
  g.sampling.temperature = 0;
  Request r(1, {id_of('Q')}, g);
  r.spec_metrics = SpecDecodeMetrics(4);
  r.drafts = {id_of('a'), id_of('b')};
  r.keep_drafts(0);
  EXPECT_EQ(r.unverified_draft, id_of('a'));
  r.clear_drafts();
  EXPECT_TRUE(r.drafts.empty());
  EXPECT_EQ(r.unverified_draft, -1);
  std::vector<float> logits(kVocab, -10.0f);
  logits[id_of('a')] = 5.0f;
  std::vector<RequestOutput> outputs;
  EXPECT_FALSE(processor.commit(r, logits.data(), outputs).unverified_survival.has_value());
}

}  // namespace
}  // namespace dspark
