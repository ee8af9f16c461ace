// response_format json_object and json_schema through the engine: every output is a prefix of a JSON
// object (checked byte by byte with the matcher), an output that closed its object parses,
// and speculative decoding (n-gram drafts cut at the first invalid one; the DSpark drafter
// on the shipped model) gives exactly the plain constrained output. (That a closed object
// finishes the request is checked with scripted logits in output_processor_test.cpp: these
// models are not instructed, and rarely close what they open.) For json_schema, a schema
// whose values are bounded (enums, booleans, short strings, limited whitespace) makes even a
// random model finish: every output is then complete, parses and validates.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "spec/ngram_proposer.h"
#include "spec/proposer_factory.h"
#include "structured/json_matcher.h"
#include "structured/json_schema.h"
#include "structured/schema_matcher.h"
#include "structured/schema_samples.h"
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

// Every value of this schema is at most a few hundred bytes: a random model must finish.
constexpr const char* kBoundedSchema = R"({
  "type": "object",
  "properties": {
    "ok": {"type": "boolean"},
    "kind": {"enum": ["cat", "dog", 7, null]},
    "name": {"type": "string", "maxLength": 3},
    "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
    "extra": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"v": {"type": "boolean"}},
                                              "required": ["v"]}]}
  },
  "required": ["ok", "kind", "name"],
  "additionalProperties": false})";

GenerationOptions schema_greedy(const char* schema, int64_t max_tokens) {
  GenerationOptions g = testing::greedy(max_tokens);
  g.ignore_eos = false;
  g.response_format = ResponseFormat::kJsonSchema;
  g.json_schema = compile_json_schema_text(schema);
  return g;
}

bool is_schema_prefix(const CompiledJsonSchema& schema, const std::string& text, bool* complete = nullptr) {
  SchemaMatcher m(schema);
  const bool ok = m.advance(text);
  if (complete) *complete = m.complete();
  return ok;
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

TEST(JsonOutput, SchemaOutputsValidateAndSpeculationGivesThePlainTokens) {
  const auto dir = testing::write_tiny_engine_model("json-schema-output", 43, 2);
  auto model = testing::load_tiny_engine_model(dir);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  const auto ps = prompts(6);
  const test::SchemaOracle oracle(nlohmann::ordered_json::parse(kBoundedSchema));
  const GenerationOptions bounded = schema_greedy(kBoundedSchema, 600);

  Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64});
  std::vector<GenerationResult> results;
  for (const auto& p : ps) results.push_back(generate_one(plain, p, bounded));
  std::vector<std::vector<int32_t>> reference;
  for (size_t i = 0; i < results.size(); ++i) {
    const GenerationResult& r = results[i];
    EXPECT_EQ(r.finish_reason, FinishReason::kStop) << "prompt " << i << ": " << r.text;
    bool complete = false;
    EXPECT_TRUE(is_schema_prefix(*bounded.json_schema, r.text, &complete)) << r.text;
    EXPECT_TRUE(complete) << r.text;
    const auto parsed = nlohmann::json::parse(r.text, nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << r.text;
    EXPECT_TRUE(oracle.valid(parsed)) << r.text;
    reference.push_back(r.tokens);
  }
  EXPECT_EQ(run_all(plain, ps, bounded), reference);  // batched as one step: the same tokens

  Engine ngram(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
               std::make_unique<NgramProposer>(NgramOptions{1, 4, 6}));
  EXPECT_EQ(run_all(ngram, ps, bounded), reference);

  // An unbounded schema: outputs cut by max_tokens are still prefixes, speculation the same.
  for (const char* name : {"person", "tree", "maps"}) {
    const char* text = nullptr;
    for (const auto& s : test::sample_schemas()) if (std::string(s.name) == name) text = s.text;
    const GenerationOptions g = schema_greedy(text, 48);
    const auto plain_tokens = run_all(plain, ps, g);
    for (const auto& t : plain_tokens) EXPECT_TRUE(is_schema_prefix(*g.json_schema, tok.decode(t))) << name;
    EXPECT_EQ(run_all(ngram, ps, g), plain_tokens) << name;
  }
}

TEST(JsonOutput, TheShippedModelStaysInsideJsonAndTheDrafterChangesNothing) {
  const auto models = std::filesystem::path(DSPARK_SOURCE_DIR) / "models";
  const auto target_dir = models / "tiny-target";
  if (!std::filesystem::exists(target_dir / "model.safetensors")) GTEST_SKIP() << "models/tiny-target missing";
  SpeculatorOptions so;
  so.speculator = (models / "tiny-target-dspark").string();
  so.max_running = 4;
  const SpeculatorPlan plan(so, ModelConfig::from_file(target_dir / "config.json"));
  TransformerOptions to;
  to.max_batch_tokens = 128;
  to.max_sequences = 4;
  to.capture_layers = plan.capture_layers();
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

  Engine spec(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 128}, plan.build(*model));
  std::vector<std::vector<int32_t>> reference;
  for (const GenerationResult& r : results) reference.push_back(r.tokens);
  EXPECT_EQ(run_all(spec, ps, json_greedy(200)), reference);
  EXPECT_GT(spec.spec_metrics().num_drafts, 0);

  // json_schema: every output finishes, validates, and the drafter changes no token. (This
  // model pads with the most whitespace allowed, so a small schema and two prompts keep
  // the test short on a CPU.)
  constexpr const char* kSmall = R"({"type": "object", "properties": {"ok": {"type": "boolean"},
      "kind": {"enum": ["cat", "dog"]}}, "required": ["ok", "kind"], "additionalProperties": false})";
  const GenerationOptions bounded = schema_greedy(kSmall, 300);
  const test::SchemaOracle oracle(nlohmann::ordered_json::parse(kSmall));
  ps.resize(2);
  std::vector<std::vector<int32_t>> schema_reference;
  for (const auto& p : ps) {
    const GenerationResult r = generate_one(plain, p, bounded);
    EXPECT_EQ(r.finish_reason, FinishReason::kStop) << r.text;
    const auto parsed = nlohmann::json::parse(r.text, nullptr, false);
    EXPECT_TRUE(!parsed.is_discarded() && oracle.valid(parsed)) << r.text;
    schema_reference.push_back(r.tokens);
  }
  const int64_t drafts_before = spec.spec_metrics().num_drafts;
  EXPECT_EQ(run_all(spec, ps, bounded), schema_reference);
  EXPECT_GT(spec.spec_metrics().num_drafts, drafts_before);
}

}  // namespace
}  // namespace dspark
