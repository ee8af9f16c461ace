// What constrained decoding costs per row of logits: the allowed-token mask of one grammar
// state (TokenMasker::allowed_tokens) over a real vocabulary, for regex and GBNF grammar
// states of several kinds next to JSON ones; a request's masks along its output; and what
// compiling a regex or a grammar costs per request.
//
// Vocabularies: models/tiny-target (8,192 tokens) and GPT-2's (50,257) from the shared data.
// States: reached by walking the first bytes of a text the grammar accepts, so each one is a
// state real outputs pass through.
//
//   build/bench/grammar_mask_bench [--benchmark_filter=...]
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "structured/gbnf_grammar.h"
#include "structured/grammar_constraint.h"
#include "structured/grammar_state_table.h"
#include "structured/json_matcher.h"
#include "structured/regex_dfa.h"
#include "structured/regex_token_masks.h"
#include "structured/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace dspark {
namespace {

namespace fs = std::filesystem;

struct Vocabulary {
  const char* name;
  fs::path path;
};

const std::vector<Vocabulary>& vocabularies() {
  static const std::vector<Vocabulary> v = {
      {"tiny-target", fs::path(DSPARK_SOURCE_DIR) / "models/tiny-target"},
      {"gpt-2", fs::path(DSPARK_SHARED_DIR) / "data/tokenizers/gpt-2/tokenizer.json"}};
  return v;
}

const TokenMasker& masker(size_t vocab) {
  static std::vector<std::unique_ptr<TokenMasker>> cache(vocabularies().size());
  if (!cache[vocab]) {
    const Vocabulary& v = vocabularies()[vocab];
    const Tokenizer tok = fs::is_directory(v.path) ? Tokenizer::from_dir(v.path) : Tokenizer::from_file(v.path);
    cache[vocab] = std::make_unique<TokenMasker>(token_bytes(tok, tok.vocab_size(), tok.eos_ids()));
  }
  return *cache[vocab];
}

// A regex and a text it accepts; the state is the one after the text's first `cut` bytes.
struct RegexCase {
  const char* name;
  const char* pattern;
  const char* text;
  size_t cut;
};

const std::vector<RegexCase>& regex_cases() {
  static const std::vector<RegexCase> cases = {
      {"sentence (any char but newline, in a counted run)", R"([A-Z][^\n]{0,200}\.)", "The cat sat on the mat.", 9},
      {"identifier list", R"([a-z_][a-z0-9_]*(, [a-z_][a-z0-9_]*)*)", "alpha, beta_2, gamma", 8},
      {"number", R"(-?(0|[1-9]\d*)(\.\d+)?)", "-12.5", 3},
      {"choice", "positive|negative|neutral|mixed", "neutral", 2},
      {"date", R"(\d{4}-(0[1-9]|1[0-2])-\d{2})", "2024-05-17", 5},
      {"start of a sentence", R"([A-Z][^\n]{0,200}\.)", "", 0},
  };
  return cases;
}

void BM_RegexMask(benchmark::State& state) {
  const TokenMasker& m = masker(static_cast<size_t>(state.range(0)));
  const RegexCase& c = regex_cases()[static_cast<size_t>(state.range(1))];
  const auto regex = CompiledRegex::compile(c.pattern);
  RegexMatcher matcher(*regex);
  if (!matcher.advance(std::string_view(c.text).substr(0, c.cut))) state.SkipWithError("text not accepted");
  std::vector<uint64_t> mask(static_cast<size_t>(m.num_words()));
  for (auto _ : state) {
    m.allowed_tokens(matcher, mask);
    benchmark::DoNotOptimize(mask.data());
  }
  int64_t allowed = 0;
  for (const uint64_t w : mask) allowed += __builtin_popcountll(w);
  state.SetLabel(std::string(vocabularies()[static_cast<size_t>(state.range(0))].name) + ", " + c.name +
                 ", allowed " + std::to_string(allowed));
}
BENCHMARK(BM_RegexMask)->ArgsProduct({{0, 1}, {0, 1, 2, 3, 4, 5}})->Unit(benchmark::kMicrosecond);

// A request's masks along its output: the state after each byte of a 150-byte text the
// regex accepts, masked by a fresh trie walk each time (range(2) == 0) or through the
// request's RegexTokenMasks (1: one walk per lookahead class; a new one each iteration, so
// its walks are paid for; the classes themselves are the regex's, computed at the first
// iteration as the server computes them before the request reaches the engine:
// BM_LookaheadClasses). Time per output; positions_per_s = bytes masked.
void BM_RegexRequestMasks(benchmark::State& state) {
  const TokenMasker& m = masker(static_cast<size_t>(state.range(0)));
  struct Output { const char* name; const char* pattern; std::string text; };
  const std::vector<Output> outputs = {
      {"sentence", R"([A-Z][^\n]{0,200}\.)", "T" + std::string(148, 'x') + "."},
      {"words", R"(\w+( \w+)*)", [] { std::string t; while (t.size() < 150) t += "word "; t.pop_back(); return t; }()},
      {"digits", R"(\d{1,200})", std::string(150, '7')}};
  const Output& o = outputs[static_cast<size_t>(state.range(1))];
  const auto regex = CompiledRegex::compile(o.pattern);
  std::vector<uint64_t> mask(static_cast<size_t>(m.num_words()));
  int64_t walks = 0;
  for (auto _ : state) {
    RegexTokenMasks masks(m, *regex);
    RegexMatcher matcher(*regex);
    for (const char c : o.text) {
      if (state.range(2) == 0) {
        m.allowed_tokens(matcher, mask);
      } else {
        masks.allowed_tokens(matcher, mask);
      }
      benchmark::DoNotOptimize(mask.data());
      if (!matcher.advance(static_cast<uint8_t>(c))) state.SkipWithError("text not accepted");
    }
    walks = state.range(2) == 0 ? static_cast<int64_t>(o.text.size()) : masks.num_walks();
  }
  state.counters["positions_per_s"] =
      benchmark::Counter(static_cast<double>(o.text.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(vocabularies()[static_cast<size_t>(state.range(0))].name) + ", " + o.name +
                 (state.range(2) == 0 ? ", a walk per position" : ", per lookahead class") + ", " +
                 std::to_string(walks) + " walks, " + std::to_string(regex->num_states()) + " states");
}
BENCHMARK(BM_RegexRequestMasks)->ArgsProduct({{0, 1}, {0, 1, 2}, {0, 1}})->Unit(benchmark::kMillisecond);

// What a verification step's masks cost a request: GrammarConstraint::mask_rows over the
// 9 rows (8 drafts) of a round, as OutputProcessor::commit runs it, after the logits' copy;
// the drafts are the first tokens of an accepted text (tiny-target's vocabulary).
void BM_VerificationRowMasks(benchmark::State& state) {
  const TokenMasker& m = masker(0);
  const Tokenizer tok = Tokenizer::from_dir(vocabularies()[0].path);
  const bool regex = state.range(0) == 1;
  GrammarConstraint c = regex ? GrammarConstraint(m, CompiledRegex::compile(R"( [^\n]+(\n[^\n]+){0,7}\n#### -?[0-9,]+)"))
                              : GrammarConstraint(m);
  std::vector<int32_t> drafts = tok.encode(regex ? " The total is 3 + 4 = 7 apples, so he has" : R"({"name": "Al)", false);
  drafts.resize(std::min<size_t>(drafts.size(), 8));
  const int64_t vocab = m.num_logits();
  std::vector<float> logits(static_cast<size_t>((drafts.size() + 1) * vocab), 0.5f), masked(logits.size());
  for (auto _ : state) {
    std::copy(logits.begin(), logits.end(), masked.begin());
    c.mask_rows(masked.data(), vocab, drafts);
    benchmark::DoNotOptimize(masked.data());
  }
  state.SetLabel(std::string(regex ? "regex" : "json_object") + ", " + std::to_string(drafts.size() + 1) + " rows");
}
BENCHMARK(BM_VerificationRowMasks)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);

// What the server computes once per regex request, in the request's thread.
void BM_LookaheadClasses(benchmark::State& state) {
  const TokenMasker& m = masker(static_cast<size_t>(state.range(0)));
  const RegexCase& c = regex_cases()[static_cast<size_t>(state.range(1))];
  int64_t classes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const auto regex = CompiledRegex::compile(c.pattern);
    state.ResumeTiming();
    const auto ids = regex->lookahead_classes(regex_lookahead_bytes(m.max_token_bytes()));
    classes = *std::max_element(ids->begin(), ids->end()) + 1;
  }
  state.SetLabel(std::string(vocabularies()[static_cast<size_t>(state.range(0))].name) + " (lookahead " +
                 std::to_string(regex_lookahead_bytes(m.max_token_bytes())) + " bytes), " + c.name + ", " +
                 std::to_string(classes) + " classes");
}
BENCHMARK(BM_LookaheadClasses)->ArgsProduct({{0, 1}, {0, 1, 2}})->Unit(benchmark::kMicrosecond);

// JSON states beside them: inside a string (the precomputed plain tokens) and between values.
void BM_JsonMask(benchmark::State& state) {
  const TokenMasker& m = masker(static_cast<size_t>(state.range(0)));
  JsonMatcher matcher;
  if (!matcher.advance(state.range(1) == 0 ? R"({"name": "Al)" : R"({"name": "Al", )")) state.SkipWithError("bad");
  std::vector<uint64_t> mask(static_cast<size_t>(m.num_words()));
  for (auto _ : state) {
    m.allowed_tokens(matcher, mask);
    benchmark::DoNotOptimize(mask.data());
  }
  state.SetLabel(std::string(vocabularies()[static_cast<size_t>(state.range(0))].name) +
                 (state.range(1) == 0 ? ", json_object in a string" : ", json_object between members"));
}
BENCHMARK(BM_JsonMask)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);

// A JSON grammar in GBNF (any JSON object, as json_object allows, written as rules), and two
// smaller ones; a text each accepts.
constexpr const char* kJsonGbnf = R"g(root   ::= object
object ::= "{" ws (member ("," ws member)*)? "}" ws
member ::= string ":" ws value
array  ::= "[" ws (value ("," ws value)*)? "]" ws
value  ::= object | array | string | number | ("true" | "false" | "null") ws
string ::= "\"" char* "\"" ws
char   ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= [ \t\n]*
)g";

struct GrammarCase {
  const char* name;
  const char* gbnf;
  const char* text;
  size_t cut;
};

const std::vector<GrammarCase>& grammar_cases() {
  static const std::vector<GrammarCase> cases = {
      {"sentence (any char but newline)", "root ::= [A-Z] [^\n]* \".\"", "The cat sat on the mat.", 9},
      {"JSON, in a string at depth 2", kJsonGbnf, R"({"a": {"name": "Al", "n": 1}})", 16},
      {"JSON, between members at depth 2", kJsonGbnf, R"({"a": {"name": "Al", "n": 1}})", 20},
      {"expression, 3 parentheses deep",
       "root ::= expr\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ | \"(\" expr \")\"", "((1+(2*", 7},
  };
  return cases;
}

// One state's mask: range(2) 0 = a walk stepping the matcher at every trie node; 1 = through
// a GrammarStateTable new at each iteration (each (state, byte) stepped once: a request's
// first walk from a state); 2 = through one table kept across iterations (the walk alone).
void BM_GrammarMask(benchmark::State& state) {
  const TokenMasker& m = masker(static_cast<size_t>(state.range(0)));
  const GrammarCase& c = grammar_cases()[static_cast<size_t>(state.range(1))];
  const auto grammar = CompiledGrammar::compile(c.gbnf);
  GrammarMatcher matcher(*grammar);
  if (!matcher.advance(std::string_view(c.text).substr(0, c.cut))) state.SkipWithError("text not accepted");
  std::vector<uint64_t> mask(static_cast<size_t>(m.num_words()));
  GrammarStateTable kept(*grammar);
  int64_t states = 0;
  for (auto _ : state) {
    if (state.range(2) == 0) {
      m.allowed_tokens(matcher, mask);
    } else if (state.range(2) == 1) {
      GrammarStateTable table(*grammar);
      m.allowed_tokens(GrammarStateRef(table, table.intern(matcher)), mask);
      states = table.size();
    } else {
      m.allowed_tokens(GrammarStateRef(kept, kept.intern(matcher)), mask);
      states = kept.size();
    }
    benchmark::DoNotOptimize(mask.data());
  }
  int64_t allowed = 0;
  for (const uint64_t w : mask) allowed += __builtin_popcountll(w);
  state.SetLabel(std::string(vocabularies()[static_cast<size_t>(state.range(0))].name) + ", " + c.name +
                 ", allowed " + std::to_string(allowed) + ", " + std::to_string(matcher.num_stacks()) + " stacks, " +
                 (state.range(2) == 0 ? "matcher steps" : state.range(2) == 1 ? "new table" : "kept table") +
                 (state.range(2) == 0 ? "" : " (" + std::to_string(states) + " states)"));
}
BENCHMARK(BM_GrammarMask)->ArgsProduct({{0, 1}, {0, 1, 2, 3}, {0, 1, 2}})->Unit(benchmark::kMicrosecond);

// A request's masks along its output, token by token (the text as the vocabulary's
// tokenizer splits it): a fresh trie walk at every position (range(2) == 0), through the
// request's GrammarConstraint (1: a mask per distinct state, cached; a new constraint each
// iteration, so its walks are paid for), or through masks shared with an earlier request of
// the same grammar and output (2: SharedGrammarMasks, as the engine keeps them). Time per output.
void BM_GrammarRequestMasks(benchmark::State& state) {
  const size_t vocab = static_cast<size_t>(state.range(0));
  const TokenMasker& m = masker(vocab);
  const Vocabulary& v = vocabularies()[vocab];
  const Tokenizer tok = fs::is_directory(v.path) ? Tokenizer::from_dir(v.path) : Tokenizer::from_file(v.path);
  struct Output { const char* name; const char* gbnf; std::string text; };
  const std::vector<Output> outputs = {
      {"JSON object", kJsonGbnf,
       R"({"name": "Alice Smith", "age": 42, "city": "Paris", "tags": ["admin", "editor"], )"
       R"("address": {"street": "12 Rue de la Paix", "zip": "75002"}, "active": true})"},
      {"sentence", "root ::= [A-Z] [^\n]* \".\"",
       "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the door."}};
  const Output& o = outputs[static_cast<size_t>(state.range(1))];
  const auto grammar = CompiledGrammar::compile(o.gbnf);
  const std::vector<int32_t> tokens = tok.encode(o.text, false);
  std::vector<uint64_t> mask(static_cast<size_t>(m.num_words()));
  auto shared = std::make_shared<GrammarTokenMasks>(m, *grammar);
  if (state.range(2) == 2) {  // the earlier request
    GrammarConstraint earlier(m, grammar, shared);
    for (const int32_t t : tokens) {
      benchmark::DoNotOptimize(earlier.allowed_tokens({}).data());
      if (!earlier.accept_token(t)) state.SkipWithError("text not accepted");
    }
  }
  for (auto _ : state) {
    GrammarConstraint constraint(m, grammar, state.range(2) == 2 ? shared : nullptr);
    GrammarMatcher matcher(*grammar);
    for (const int32_t t : tokens) {
      if (state.range(2) == 0) {
        m.allowed_tokens(matcher, mask);
        benchmark::DoNotOptimize(mask.data());
        if (!m.advance(matcher, t)) state.SkipWithError("text not accepted");
      } else {
        benchmark::DoNotOptimize(constraint.allowed_tokens({}).data());
        if (!constraint.accept_token(t)) state.SkipWithError("text not accepted");
      }
    }
  }
  state.counters["tokens"] = static_cast<double>(tokens.size());
  const char* how[] = {", a walk per token", ", cached by state", ", shared with an earlier request"};
  state.SetLabel(std::string(v.name) + ", " + o.name + how[state.range(2)]);
}
BENCHMARK(BM_GrammarRequestMasks)->ArgsProduct({{0, 1}, {0, 1}, {0, 1, 2}})->Unit(benchmark::kMillisecond);

void BM_GrammarCompile(benchmark::State& state) {
  const GrammarCase& c = grammar_cases()[static_cast<size_t>(state.range(0))];
  int64_t slots = 0;
  for (auto _ : state) slots = CompiledGrammar::compile(c.gbnf)->num_slots();
  state.SetLabel(std::string(c.name) + ", " + std::to_string(slots) + " slots");
}
BENCHMARK(BM_GrammarCompile)->DenseRange(0, 3, 1)->Unit(benchmark::kMicrosecond);

void BM_RegexCompile(benchmark::State& state) {
  const RegexCase& c = regex_cases()[static_cast<size_t>(state.range(0))];
  int64_t states = 0;
  for (auto _ : state) states = CompiledRegex::compile(c.pattern)->num_states();
  state.SetLabel(std::string(c.name) + ", " + std::to_string(states) + " states");
}
BENCHMARK(BM_RegexCompile)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dspark

BENCHMARK_MAIN();
