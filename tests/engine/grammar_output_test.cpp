// Grammar outputs through the engine (ResponseFormat::kGrammar, GBNF): every output is a
// string of the grammar when it finishes ("stop": at EOS where one may end, or where nothing
// may follow), a prefix of one when cut by max_tokens; and speculative decoding (n-gram
// drafts cut at the first refused one; every shipped learned drafter on the shipped model,
// drafting among the tokens the grammar allows) gives exactly the plain constrained tokens,
// greedy and seeded.
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "spec/ngram_proposer.h"
#include "spec/proposer_factory.h"
#include "structured/gbnf_grammar.h"
#include "support/engine_requests.h"

namespace dspark {
namespace {

using testing::run_all;

GenerationOptions grammar_options(const std::string& gbnf, int64_t max_tokens) {
  GenerationOptions g = testing::greedy(max_tokens);
  g.ignore_eos = false;
  g.response_format = ResponseFormat::kGrammar;
  g.gbnf_grammar = CompiledGrammar::compile(gbnf);
  return g;
}

// Whether text is a string of / a prefix of a string of the compiled grammar.
bool full_match(const CompiledGrammar& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.can_end();
}
bool match_prefix(const CompiledGrammar& g, const std::string& text) { return GrammarMatcher(g).advance(text); }

TEST(GrammarOutput, RandomModelOutputsMatchAndSpeculationKeepsThem) {
  const auto dir = testing::write_tiny_engine_model("grammar-output", 47, 2);
  auto model = testing::load_tiny_engine_model(dir);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < 6; ++i) ps.push_back(testing::repetitive_prompt(300 + i));
  Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64});
  Engine ngram(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
               std::make_unique<NgramProposer>(NgramOptions{1, 4, 6}));
  // Bounded grammars: every output finishes as a full match. Unbounded ones (nesting, a
  // loop): outputs cut by max_tokens are still prefixes of a match.
  const std::vector<std::pair<std::string, bool>> grammars = {
      {R"g(root ::= [a-f]{3,9} "-" [0-9]{1,4} ("." [0-9]{2})?)g", true},
      {"root ::= \"[\" item (\",\" item){0,3} \"]\"\nitem ::= \"alpha\" | \"beta\" | \"(\" item \")\"", false},
      {"root ::= expr \"=\" [0-9]+\nexpr ::= term ([+*] term)*\nterm ::= [a-z] | \"(\" expr \")\"", false},
  };
  for (const auto& [gbnf, bounded] : grammars) {
    SCOPED_TRACE(gbnf);
    const GenerationOptions g = grammar_options(gbnf, 40);
    std::vector<std::vector<int32_t>> reference;
    for (const auto& p : ps) {
      const GenerationResult r = generate_one(plain, p, g);
      if (bounded) {
        EXPECT_EQ(r.finish_reason, FinishReason::kStop) << r.text;
        EXPECT_TRUE(full_match(*g.gbnf_grammar, r.text)) << r.text;
      } else {
        EXPECT_TRUE(r.finish_reason == FinishReason::kLength ? match_prefix(*g.gbnf_grammar, r.text)
                                                             : full_match(*g.gbnf_grammar, r.text))
            << r.text;
      }
      reference.push_back(r.tokens);
    }
    EXPECT_EQ(run_all(plain, ps, g), reference);  // batched as one step: the same tokens
    EXPECT_EQ(run_all(ngram, ps, g), reference);
  }
}

// Every shipped learned drafter drafts among the tokens the grammar allows (no draft of theirs
// is cut before verification), and none changes a token, greedy or seeded. (DSpark's
// repeat-lookup drafts are copies of earlier text, cut like the n-gram speculator's: off here.)
TEST(GrammarOutput, TheShippedDraftersDraftInsideTheGrammarAndChangeNothing) {
  const std::filesystem::path models = std::filesystem::path(DSPARK_SOURCE_DIR) / "models";
  const std::filesystem::path target_dir = models / "tiny-target";
  if (!std::filesystem::exists(target_dir / "model.safetensors")) GTEST_SKIP() << "models/tiny-target missing";
  const Tokenizer tok = Tokenizer::from_dir(target_dir);
  std::vector<std::vector<int32_t>> ps;
  for (const char* text : {"Question: Natalia sold 48 clips in April and half as many in May. How many?\nAnswer:",
                           "def add(a, b):\n", "Question: Is the sky blue?\nAnswer:"}) {
    ps.push_back(tok.encode(text, true));
  }
  const std::vector<std::string> patterns = {
      "root ::= \" \" sentence \".\"\nsentence ::= [A-Z] [^\\n.]{0,80}",
      "root ::= \"    return \" expr \"\\n\"\nexpr ::= [a-z]+ | expr-1\nexpr-1 ::= [a-z]+ \" \" [+*] \" \" expr",
      R"g(root ::= " Yes" (", it is")? "." | " No.")g"};
  TransformerOptions to;
  to.max_batch_tokens = 128;
  to.max_sequences = 4;
  std::map<std::string, std::vector<std::vector<int32_t>>> reference;  // by pattern and sampling
  {
    auto model = Transformer::load(target_dir, to);
    Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 128});
    for (const std::string& pattern : patterns) {
      GenerationOptions g = grammar_options(pattern, 120);
      for (const auto& p : ps) {
        const GenerationResult r = generate_one(plain, p, g);
        EXPECT_EQ(r.finish_reason, FinishReason::kStop) << r.text;
        EXPECT_TRUE(full_match(*g.gbnf_grammar, r.text)) << r.text;
      }
      reference[pattern + " greedy"] = run_all(plain, ps, g);
      g.sampling.temperature = 1.0f;  // seeded: the same tokens at every position with or without drafts
      g.sampling.seed = 17;
      g.sampling.position_keyed = true;
      reference[pattern + " seeded"] = run_all(plain, ps, g);
      for (const auto& t : reference[pattern + " seeded"]) EXPECT_TRUE(full_match(*g.gbnf_grammar, tok.decode(t)));
    }
  }
  for (const char* drafter : {"tiny-target-dspark", "tiny-target-dflash", "tiny-draft-lm", "tiny-target-eagle3"}) {
    SCOPED_TRACE(drafter);
    SpeculatorOptions so;
    so.speculator = (models / drafter).string();
    so.max_running = 4;
    so.repeat_lookup_min_match = 0;
    const SpeculatorPlan plan(so, ModelConfig::from_file(target_dir / "config.json"));
    TransformerOptions drafter_to = to;
    drafter_to.capture_layers = plan.capture_layers();
    auto model = Transformer::load(target_dir, drafter_to);
    Engine spec(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 128}, plan.build(*model));
    for (const std::string& pattern : patterns) {
      SCOPED_TRACE(pattern);
      GenerationOptions g = grammar_options(pattern, 120);
      EXPECT_EQ(run_all(spec, ps, g), reference[pattern + " greedy"]);
      g.sampling.temperature = 1.0f;
      g.sampling.seed = 17;
      g.sampling.position_keyed = true;
      EXPECT_EQ(run_all(spec, ps, g), reference[pattern + " seeded"]);
    }
    EXPECT_GT(spec.spec_metrics().num_drafts, 0);
    EXPECT_EQ(spec.schedule_metrics().grammar_cut_drafts, 0);
  }
}

}  // namespace
}  // namespace dspark
