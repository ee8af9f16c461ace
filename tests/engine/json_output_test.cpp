// response_format json_object through the engine: every output is a prefix of a JSON
// object (checked byte by byte with the matcher), an output that closed its object parses,
// and speculative decoding (n-gram drafts cut at the first invalid one; the DSpark drafter
// on the shipped model) gives exactly the plain constrained output. (That a closed object
// finishes the request is checked with scripted logits in output_processor_test.cpp: these
// models are not instructed, and rarely close what they open.)
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "spec/ngram_proposer.h"
#include "spec/proposer_factory.h"
#include "structured/json_matcher.h"
#include "support/engine_requests.h"

namespace dspark {
namespace {

using testing::run_all;

GenerationOptions json_greedy(int64_t max_tokens) {
  GenerationOptions g = testing::greedy(max_tokens);
  g.ignore_eos = false;
  g.response_format = ResponseFormat::kJsonObject;
  return g;
}

bool is_json_object_prefix(const std::string& text) {
  JsonMatcher m{JsonMatcherOptions{}};
  return m.advance(text);
}

std::vector<std::vector<int32_t>> prompts(int n) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < n; ++i) out.push_back(testing::repetitive_prompt(200 + i));
  return out;
}

TEST(JsonOutput, RandomModelOutputsArePrefixesOfAJsonObjectAndSpeculationKeepsThem) {
  const auto dir = testing::write_tiny_engine_model("json-output", 41, 2);
  auto model = testing::load_tiny_engine_model(dir);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  const auto ps = prompts(6);

  Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64});
  const auto reference = run_all(plain, ps, json_greedy(48));
  for (size_t i = 0; i < reference.size(); ++i) {
    const std::string text = tok.decode(reference[i]);
    EXPECT_TRUE(is_json_object_prefix(text)) << "prompt " << i << ": " << text;
    EXPECT_NE(text.find('{'), std::string::npos) << "prompt " << i;
  }

  // The n-gram proposer copies earlier text, which is rarely valid JSON: its drafts are
  // cut, and what is verified must not change a token.
  Engine ngram(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
               std::make_unique<NgramProposer>(NgramOptions{1, 4, 6}));
  EXPECT_EQ(run_all(ngram, ps, json_greedy(48)), reference);
}

TEST(JsonOutput, TheShippedModelStaysInsideJsonAndTheDrafterChangesNothing) {
  const auto models = std::filesystem::path(DSPARK_SOURCE_DIR) / "models";
  const auto target_dir = models / "tiny-target";
  if (!std::filesystem::exists(target_dir / "model.safetensors")) GTEST_SKIP() << "models/tiny-target missing";
  SpeculatorOptions so;
  so.speculator = (models / "tiny-target-dspark").string();
  so.max_running = 4;
  so.target_model_dir = target_dir.string();
  TransformerOptions to;
  to.max_batch_tokens = 128;
  to.max_sequences = 4;
  to.capture_layers = speculator_capture_layers(so);
  auto model = Transformer::load(target_dir, to);
  const Tokenizer tok = Tokenizer::from_dir(target_dir);
  std::vector<std::vector<int32_t>> ps;
  for (const char* text : {"Question: Write the person as JSON: Tom, 7 years old.\nAnswer:",
                           "Question: What is 2 + 3? Reply in JSON.\nAnswer:",
                           "def to_json(name, age):\n    return ", "Once upon a time"}) {
    ps.push_back(tok.encode(text, true));
  }
  Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 128});
  std::vector<GenerationResult> results;
  for (const auto& p : ps) results.push_back(generate_one(plain, p, json_greedy(200)));
  for (const GenerationResult& r : results) {
    EXPECT_TRUE(is_json_object_prefix(r.text)) << r.text;
    if (r.finish_reason == FinishReason::kStop) {
      const auto parsed = nlohmann::json::parse(r.text, nullptr, false);
      EXPECT_TRUE(parsed.is_object()) << r.text;
    } else {
      EXPECT_EQ(r.finish_reason, FinishReason::kLength);
    }
  }

  Engine spec(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 128}, make_proposer(so, *model));
  std::vector<std::vector<int32_t>> reference;
  for (const GenerationResult& r : results) reference.push_back(r.tokens);
  EXPECT_EQ(run_all(spec, ps, json_greedy(200)), reference);
  EXPECT_GT(spec.spec_metrics().num_drafts, 0);
}

}  // namespace
}  // namespace dspark
