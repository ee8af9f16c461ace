// Regex, choice and grammar outputs through the engine (ResponseFormat::kRegex and kGrammar):
// every output is a full match when it finishes ("stop": at EOS where a match may end, or
// where nothing may follow), a prefix of one when cut by max_tokens; and speculative
// decoding (n-gram drafts cut at the first refused one; every shipped learned drafter on the
// shipped model, drafting among the tokens the constraint allows) gives exactly the plain
// constrained tokens, greedy and seeded.
#include <filesystem>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "spec/ngram_proposer.h"
#include "spec/proposer_factory.h"
#include "structured/gbnf_grammar.h"
#include "structured/regex_dfa.h"
#include "support/engine_requests.h"

namespace dspark {
namespace {

using testing::run_all;

// A constraint as the engine takes it, and the matcher's verdicts on a text: a prefix of a
// full match (every byte read), and a full match.
struct Constraint {
  std::string name;
  GenerationOptions options;
  std::function<bool(const std::string&)> prefix;
  std::function<bool(const std::string&)> full;
};

template <class Matcher, class Compiled>
Constraint make(std::string name, ResponseFormat format, std::shared_ptr<const Compiled> compiled, int64_t max_tokens) {
  Constraint c{std::move(name), testing::greedy(max_tokens), nullptr, nullptr};
  c.options.ignore_eos = false;
  c.options.response_format = format;
  if constexpr (std::is_same_v<Compiled, CompiledRegex>) {
    c.options.regex = compiled;
  } else {
    c.options.gbnf_grammar = compiled;
  }
  c.prefix = [compiled](const std::string& text) { return Matcher(*compiled).advance(text); };
  c.full = [compiled](const std::string& text) {
    Matcher m(*compiled);
    return m.advance(text) && m.can_end();
  };
  return c;
}
Constraint regex(const std::string& pattern, int64_t max_tokens) {
  return make<RegexMatcher>("regex " + pattern, ResponseFormat::kRegex, CompiledRegex::compile(pattern), max_tokens);
}
Constraint grammar(const std::string& gbnf, int64_t max_tokens) {
  return make<GrammarMatcher>("grammar " + gbnf, ResponseFormat::kGrammar, CompiledGrammar::compile(gbnf), max_tokens);
}

TEST(ConstrainedOutput, RandomModelOutputsMatchAndSpeculationKeepsThem) {
  const auto dir = testing::write_tiny_engine_model("constrained-output", 47, 2);
  auto model = testing::load_tiny_engine_model(dir);
  const Tokenizer tok = Tokenizer::from_dir(dir);
  std::vector<std::vector<int32_t>> ps;
  for (int i = 0; i < 6; ++i) ps.push_back(testing::repetitive_prompt(300 + i));
  Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64});
  Engine ngram(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 64},
               std::make_unique<NgramProposer>(NgramOptions{1, 4, 6}));
  // Bounded constraints: every output finishes as a full match. Unbounded ones (a loop,
  // nesting): outputs cut by max_tokens are still prefixes of a match.
  const std::vector<std::pair<Constraint, bool>> constraints = {
      {regex(R"([a-f]{3,9}-\d{1,4}(\.\d\d)?)", 40), true},
      {regex(choice_regex(std::vector<std::string>{"alpha", "beta", "alphabet", "gamma ray"}), 40), true},
      {regex(R"(([A-Z][a-z]+ )+[0-9]+)", 40), false},
      {grammar(R"g(root ::= [a-f]{3,9} "-" [0-9]{1,4} ("." [0-9]{2})?)g", 40), true},
      {grammar("root ::= \"[\" item (\",\" item){0,3} \"]\"\nitem ::= \"alpha\" | \"beta\" | \"(\" item \")\"", 40),
       false},
      {grammar("root ::= expr \"=\" [0-9]+\nexpr ::= term ([+*] term)*\nterm ::= [a-z] | \"(\" expr \")\"", 40), false},
  };
  for (const auto& [c, bounded] : constraints) {
    SCOPED_TRACE(c.name);
    std::vector<std::vector<int32_t>> reference;
    for (const auto& p : ps) {
      const GenerationResult r = generate_one(plain, p, c.options);
      if (bounded) {
        EXPECT_EQ(r.finish_reason, FinishReason::kStop) << r.text;
        EXPECT_TRUE(c.full(r.text)) << r.text;
      } else {
        EXPECT_TRUE(r.finish_reason == FinishReason::kLength ? c.prefix(r.text) : c.full(r.text)) << r.text;
      }
      reference.push_back(r.tokens);
    }
    EXPECT_EQ(run_all(plain, ps, c.options), reference);  // batched as one step: the same tokens
    EXPECT_EQ(run_all(ngram, ps, c.options), reference);
  }
}

// Every shipped learned drafter drafts among the tokens the constraint allows (no draft of
// theirs is cut before verification), and none changes a token, greedy or seeded. (DSpark's
// repeat-lookup drafts are copies of earlier text, cut like the n-gram speculator's: off here.)
TEST(ConstrainedOutput, TheShippedDraftersDraftInsideTheGrammarAndChangeNothing) {
  const std::filesystem::path models = std::filesystem::path(DSPARK_SOURCE_DIR) / "models";
  const std::filesystem::path target_dir = models / "tiny-target";
  if (!std::filesystem::exists(target_dir / "model.safetensors")) GTEST_SKIP() << "models/tiny-target missing";
  const Tokenizer tok = Tokenizer::from_dir(target_dir);
  std::vector<std::vector<int32_t>> ps;
  for (const char* text : {"Question: Natalia sold 48 clips in April and half as many in May. How many?\nAnswer:",
                           "def add(a, b):\n", "Question: Is the sky blue?\nAnswer:"}) {
    ps.push_back(tok.encode(text, true));
  }
  const std::vector<Constraint> constraints = {
      regex(R"( [A-Z][^\n]{0,80}\.)", 120), regex(R"(    return [a-z +*]{1,20}\n)", 120),
      regex(choice_regex(std::vector<std::string>{" Yes.", " No.", " Yes, it is."}), 120),
      grammar("root ::= \" \" sentence \".\"\nsentence ::= [A-Z] [^\\n.]{0,80}", 120),
      grammar("root ::= \"    return \" expr \"\\n\"\n"
              "expr ::= [a-z]+ | expr-1\nexpr-1 ::= [a-z]+ \" \" [+*] \" \" expr",
              120),
      grammar(R"g(root ::= " Yes" (", it is")? "." | " No.")g", 120)};
  const auto seeded = [](GenerationOptions g) {  // the same tokens at every position with or without drafts
    g.sampling.temperature = 1.0f;
    g.sampling.seed = 17;
    g.sampling.position_keyed = true;
    return g;
  };
  TransformerOptions to;
  to.max_batch_tokens = 128;
  to.max_sequences = 4;
  std::map<std::string, std::vector<std::vector<int32_t>>> reference;  // by constraint and sampling
  {
    auto model = Transformer::load(target_dir, to);
    Engine plain(*model, tok, EngineOptions{.max_running = 4, .max_batch_tokens = 128});
    for (const Constraint& c : constraints) {
      for (const auto& p : ps) {
        const GenerationResult r = generate_one(plain, p, c.options);
        EXPECT_EQ(r.finish_reason, FinishReason::kStop) << r.text;
        EXPECT_TRUE(c.full(r.text)) << r.text;
      }
      reference[c.name + " greedy"] = run_all(plain, ps, c.options);
      reference[c.name + " seeded"] = run_all(plain, ps, seeded(c.options));
      for (const auto& t : reference[c.name + " seeded"]) EXPECT_TRUE(c.full(tok.decode(t)));
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
    for (const Constraint& c : constraints) {
      SCOPED_TRACE(c.name);
      EXPECT_EQ(run_all(spec, ps, c.options), reference[c.name + " greedy"]);
      EXPECT_EQ(run_all(spec, ps, seeded(c.options)), reference[c.name + " seeded"]);
    }
    EXPECT_GT(spec.spec_metrics().num_drafts, 0);
    EXPECT_EQ(spec.schedule_metrics().grammar_cut_drafts, 0);
  }
}

}  // namespace
}  // namespace dspark
