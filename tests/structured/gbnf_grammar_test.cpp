// Grammar-constrained output (GBNF): the matcher against PCRE2 (an independent engine; its
// recursive groups give the oracle non-regular languages too) on full matches and on
// prefixes of matches, UTF-8 handling, completions, the parser's refusals with their place,
// the size caps, and the token masks of grammar states against the token-by-token
// reference.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "structured/gbnf_grammar.h"
#include "structured/gbnf_parser.h"
#include "structured/grammar_constraint.h"
#include "structured/shared_token_masks.h"
#include "structured/json_samples.h"
#include "support/pcre2_oracle.h"
#include "structured/token_mask.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {
namespace {

using testing::Pcre2;

struct OracleCase {
  std::string grammar;
  std::string pcre;       // the same language
  std::string alphabet;   // UTF-8 characters strings are drawn from
};

const std::vector<OracleCase>& oracle_cases() {
  static const std::vector<OracleCase> cases = {
      {R"g(root ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)?)g", R"g(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?)g", "-019.a"},
      // Balanced parentheses (nullable root, right recursion) and a^n b^n: not regular.
      {R"g(root ::= "(" root ")" root | "")g", R"g((?<d>(?:\((?&d)\))*))g", "()x"},
      {R"g(root ::= "a" root "b" | "ab")g", R"g((?<s>a(?&s)?b))g", "abc"},
      {"root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= \"x\" | \"(\" expr \")\"",
       R"g((?<e>(?<t>x|\((?&e)\))(?:\+(?&t))*))g", "x+()y"},
      {"root ::= item (\",\" \" \"? item)*\nitem ::= [a-c]+ | \"\\\"\" [^\"\\\\]* \"\\\"\"",
       R"g((?:[a-c]+|"[^"\\]*")(?:, ?(?:[a-c]+|"[^"\\]*"))*)g", "ab\", \\d"},
      // A loop through a rule that may be empty, and an ambiguous one.
      {R"g(root ::= ("a"?)* "b")g", R"g((?:a?)*b)g", "abc"},
      {R"g(root ::= ("a" | "a" "b"?)* "c")g", R"g((?:a|ab?)*c)g", "abcd"},
      {"root ::= [α-γ]+ \"é\" | \"ñ\"{2,3}  # two bytes each", R"g([α-γ]+é|ñ{2,3})g", "αβγδéñe"},
      {R"g(root ::= [ab]{2,4} "c"{3} [^a-c\n]{,2})g", R"g([ab]{2,4}c{3}[^a-c\n]{0,2})g", "abc\nd€"},
      {R"g(root ::= "<" .{0,3} ">")g", R"g(<[\s\S]{0,3}>)g", "<>a\n😀"},
      {"root ::= \"{\" ws (pair (\",\" ws pair)*)? ws \"}\"\npair ::= \"\\\"\" [a-z]* \"\\\"\" \":\" ws value\n"
       "value ::= [0-9]+ | root\nws ::= [ \\t\\n]?",
       R"g((?<o>\{[ \t\n]?(?:"[a-z]*":[ \t\n]?(?:[0-9]+|(?&o))(?:,[ \t\n]?"[a-z]*":[ \t\n]?(?:[0-9]+|(?&o)))*)?[ \t\n]?\}))g",
       "{}\":a1, "},
  };
  return cases;
}

// Every string of up to max_chars characters of the alphabet, in order of length.
std::vector<std::string> all_strings(const std::string& alphabet, int max_chars) {
  std::vector<std::string> chars;
  for (size_t pos = 0; pos < alphabet.size();) {
    const size_t start = pos;
    tok::utf8_next(alphabet, pos);
    chars.push_back(alphabet.substr(start, pos - start));
  }
  std::vector<std::string> out{""}, level{""};
  for (int n = 1; n <= max_chars; ++n) {
    std::vector<std::string> next;
    for (const std::string& s : level)
      for (const std::string& c : chars) next.push_back(s + c);
    out.insert(out.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return out;
}

TEST(Gbnf, AgreesWithPcre2OnMatchesAndTheirPrefixes) {
  for (const OracleCase& c : oracle_cases()) {
    SCOPED_TRACE(c.grammar);
    std::shared_ptr<const CompiledGrammar> g;
    ASSERT_NO_THROW(g = CompiledGrammar::compile(c.grammar));
    const Pcre2 oracle(c.pcre);
    int num_full = 0, num_viable = 0;
    for (const std::string& s : all_strings(c.alphabet, 6)) {
      GrammarMatcher m(*g);
      const bool viable = m.advance(s);
      ASSERT_EQ(viable, oracle.viable(s)) << "[" << s << "]";
      if (!viable) continue;
      ASSERT_EQ(m.can_end(), oracle.full(s)) << "[" << s << "]";
      num_viable += 1;
      num_full += m.can_end();
      // The completion leads to a full match.
      const std::string done = s + m.completion();
      ASSERT_TRUE(oracle.full(done)) << "[" << s << "] completed as [" << done << "]";
      GrammarMatcher finished = m;
      ASSERT_TRUE(finished.advance(m.completion()));
      EXPECT_TRUE(finished.can_end());
      // Complete: no byte at all may follow.
      if (m.complete()) {
        for (int b = 0; b < 256; ++b) ASSERT_FALSE(GrammarMatcher(m).advance(static_cast<uint8_t>(b))) << s;
      }
    }
    EXPECT_GT(num_full, 2);
    EXPECT_GE(num_viable, 10);
  }
}

// Random walks byte by byte: every byte accepted keeps a way to a full match (no dead end,
// partial characters included), checked by completing the walk.
TEST(Gbnf, EveryAcceptedByteKeepsAWayToAFullMatch) {
  std::mt19937_64 rng(5);
  for (const OracleCase& c : oracle_cases()) {
    SCOPED_TRACE(c.grammar);
    const auto g = CompiledGrammar::compile(c.grammar);
    const Pcre2 oracle(c.pcre);
    for (int walk = 0; walk < 100; ++walk) {
      GrammarMatcher m(*g);
      std::string s;
      for (int step = 0; step < 30 && !m.complete(); ++step) {
        std::vector<uint8_t> ok;
        for (int b = 0; b < 256; ++b)
          if (GrammarMatcher(m).advance(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
        ASSERT_FALSE(ok.empty()) << "a state with no way on after [" << s << "]";
        const uint8_t b = ok[rng() % ok.size()];
        ASSERT_TRUE(m.advance(b));
        s += static_cast<char>(b);
        ASSERT_TRUE(oracle.full(s + m.completion())) << "[" << s << "] + [" << m.completion() << "]";
      }
    }
  }
}

TEST(Gbnf, ReadsBytesAsUtf8AndRefusesWhatIsNot) {
  const auto any = CompiledGrammar::compile("root ::= .*");
  for (const std::string& bad : {std::string("\xff"), std::string("\x80"), std::string("\xc0\x80"),
                                 std::string("\xe0\x80\x80"), std::string("\xed\xa0\x80"),
                                 std::string("\xf4\x90\x80\x80"), std::string("\xf5")}) {
    EXPECT_FALSE(GrammarMatcher(*any).advance(bad)) << ::testing::PrintToString(bad);
  }
  GrammarMatcher m(*any);
  EXPECT_TRUE(m.advance("\xe2\x82"));  // the first two bytes of a character
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.advance("\xac"));      // U+20AC
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(GrammarMatcher(*any).advance("\xf4\x8f\xbf\xbf"));  // U+10FFFF
  // A lead byte only where some character it starts is allowed.
  const auto greek = CompiledGrammar::compile("root ::= [α-ω]");
  EXPECT_TRUE(GrammarMatcher(*greek).advance("\xce"));
  EXPECT_FALSE(GrammarMatcher(*greek).advance("\xc3"));   // starts é, not Greek
  EXPECT_FALSE(GrammarMatcher(*greek).advance("\xce\x80"));  // U+0380, below α
}

TEST(Gbnf, CompleteOnlyWhereNoParseGoesOn) {
  const auto g = CompiledGrammar::compile("root ::= \"ab\" | \"a\" [0-9]{0,2}");
  GrammarMatcher m(*g);
  EXPECT_FALSE(m.can_end());
  ASSERT_TRUE(m.advance("a"));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.complete());
  ASSERT_TRUE(m.advance("b"));
  EXPECT_TRUE(m.complete());
  GrammarMatcher n(*g);
  ASSERT_TRUE(n.advance("a12"));
  EXPECT_TRUE(n.complete());
  EXPECT_FALSE(GrammarMatcher(*g).advance("a123"));
}

// r0 ::= r1 r1, r1 ::= r2 r2, ...: 2^levels ways to reach the last rule, each a stack.
std::string doubling_grammar(int levels) {
  std::string g = "root ::= r0 \"x\"\n";
  for (int i = 0; i < levels; ++i) {
    const std::string next = "r" + std::to_string(i + 1);
    g += "r" + std::to_string(i) + " ::= " + next + " " + next + "\n";
  }
  return g + "r" + std::to_string(levels) + " ::= \"\" | \"y\"\n";
}

// r0 ::= r1 "a", r1 ::= r2 "a", ...: the first character is `levels` rules deep.
std::string left_chain(int levels) {
  std::string g = "root ::= r0\n";
  for (int i = 0; i < levels; ++i) g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"a\"\n";
  return g + "r" + std::to_string(levels) + " ::= \"b\"\n";
}

TEST(Gbnf, RefusesWhatItCannotUseWithItsPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"start: \"a\"", "expected '::=' after the rule name 'start' at line 1 column 6"},
      {"root ::= a", "rule 'a' is used but not defined at line 1 column 10"},
      {"root ::= \"a\"\nroot ::= \"b\"", "rule 'root' is defined twice at line 2 column 1"},
      {"item ::= \"a\"", "no rule 'root'"},
      {"root ::= \"a", "an unterminated literal at line 1 column 10"},
      {"root ::= [a", "an unterminated class"},
      {"root ::= [z-a]", "a range out of order"},
      {"root ::= [^\\x00-\\U0010FFFF]", "a class that matches no character"},
      {"root ::= \"\\q\"", "an unknown escape '\\q'"},
      {"root ::= (\"a\"", "an unclosed '('"},
      {"root ::= * \"a\"", "'*' with nothing to repeat"},
      {"root ::= \"a\"{1001}", "a count above 1000"},
      {"root ::= \"a\"{3,2}", "a count {3,2} out of order"},
      {"root ::= \"a\" ::= \"b\"", "a second '::=' on the line"},
      {"root ::= root \"a\" | \"b\"", "rule 'root' is left-recursive"},
      {"root ::= x\nx ::= y \"a\"\ny ::= \"\" | x", "is left-recursive"},
      {"root ::= \"a\" root", "rule 'root' never ends"},
      {"root ::= \"\" | \"\"", "matches only the empty string"},
      {"root ::= \"\xff\"", "not UTF-8"},
      {std::string(static_cast<size_t>(gbnf::kMaxGrammarBytes) + 1, 'a'), "longer than"},
      {doubling_grammar(12), "more than 256 parses, or 1024 expansions, at the start"},
      {left_chain(600), "its first character needs rules nested more than 512 deep"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text.substr(0, 60));
    try {
      CompiledGrammar::compile(text);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidRequest);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("grammar: "), std::string::npos) << e.what();
    }
  }
}

// Long grammars compile in time linear in their size: a chain of 3,000 rules (each made
// final one after the other) and a rule whose shortest string doubles 60 times.
TEST(Gbnf, LongChainsAndDoublingRulesCompile) {
  std::string chain = "root ::= r0\n";
  for (int i = 0; i < 3000; ++i) chain += "r" + std::to_string(i) + " ::= \"a\" r" + std::to_string(i + 1) + "\n";
  const auto g = CompiledGrammar::compile(chain + "r3000 ::= \"b\"\n");
  GrammarMatcher m(*g);
  EXPECT_TRUE(m.advance(std::string(3000, 'a') + "b") && m.complete());
  std::string doubling = "root ::= r0\n";
  for (int i = 0; i < 60; ++i) {
    const std::string next = "r" + std::to_string(i + 1);
    doubling += "r" + std::to_string(i) + " ::= " + next + " " + next + "\n";
  }
  const auto d = CompiledGrammar::compile(doubling + "r60 ::= \"y\"\n");  // its shortest string: 2^60 bytes
  GrammarMatcher n(*d);
  EXPECT_TRUE(n.advance("yyy"));
  EXPECT_THROW(n.completion(), Error);  // past kMaxCompletionBytes
  EXPECT_TRUE(left_chain(400).size() > 0 && CompiledGrammar::compile(left_chain(400)) != nullptr);
}

// Comments, blank lines, rules continued after '::=', '|' and inside groups, escapes, a repeated
// group, a rule used before it is defined, and names with '-' and digits.
TEST(Gbnf, ReadsLlamaCppStyleGrammars) {
  const std::string text = R"(# a list of items
root ::= "[" items? "]"   # the output

items ::= item-1 ("," item-1)*
item-1 ::= "\"" (
    [a-z] |
    "\\" ["\\nt]
  )+ "\"" | "\x41" | "\u00e9"
)";
  const auto g = CompiledGrammar::compile(text);
  for (const std::string ok : {"[]", "[\"ab\"]", "[\"a\\n\",A,é]"}) {
    GrammarMatcher m(*g);
    EXPECT_TRUE(m.advance(ok) && m.complete()) << ok;
  }
  for (const std::string bad : {"[,]", "[\"\"]", "[\"\\x\"]", "[B]"}) {
    EXPECT_FALSE(GrammarMatcher(*g).advance(bad)) << bad;
  }
}

// Past the caps a character is refused, never a crash: nesting deeper than kMaxStackDepth,
// and more parses than kMaxStacks (two counted runs of the same class: a parse per split).
TEST(Gbnf, NestingPastTheStackCapIsRefused) {
  const auto g = CompiledGrammar::compile("root ::= \"(\" root \")\" | \"x\"");
  GrammarMatcher m(*g);
  int depth = 0;
  while (m.advance("(")) ++depth;
  EXPECT_GE(depth, 100);
  EXPECT_LE(depth, CompiledGrammar::kMaxStackDepth);
  EXPECT_TRUE(m.advance("x"));
  EXPECT_TRUE(m.advance(std::string(static_cast<size_t>(depth), ')')));
  EXPECT_TRUE(m.complete());
  // Doubling within the cap works.
  const auto doubling = CompiledGrammar::compile(doubling_grammar(6));
  GrammarMatcher small(*doubling);
  EXPECT_TRUE(small.advance("yyyx"));
  const auto splits = CompiledGrammar::compile("root ::= [a-z]{0,1000} [a-z]{0,1000} \".\"");
  GrammarMatcher s(*splits);
  int64_t letters = 0;
  while (letters < 2000 && s.advance("a")) ++letters;
  EXPECT_GE(letters, CompiledGrammar::kMaxStacks - 8);  // a stack or so per split
  EXPECT_LT(letters, 2000);
  EXPECT_TRUE(s.advance("."));
  EXPECT_TRUE(s.complete());
}

// Token masks of grammar states: the trie walk (and the constraint's cache) against the
// reference, EOS wherever the output may end, only EOS where nothing may follow.
TEST(Gbnf, TokenMasksEqualTheReference) {
  const Tokenizer tok = Tokenizer::from_dir(test::tiny_target_dir());
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), test::eos_of(tok)));
  std::vector<uint64_t> trie(static_cast<size_t>(masker.num_words())), ref(trie.size());
  const int32_t eos = test::eos_of(tok).at(0);
  std::mt19937_64 rng(13);
  for (const OracleCase& c : oracle_cases()) {
    SCOPED_TRACE(c.grammar);
    const auto g = CompiledGrammar::compile(c.grammar);
    for (int walk = 0; walk < 8; ++walk) {
      GrammarMatcher m(*g);
      GrammarConstraint constraint(masker, g);
      for (int step = 0; step < 20; ++step) {
        masker.allowed_tokens(m, trie);
        reference::allowed_tokens(masker.vocabulary(), m, ref);
        ASSERT_EQ(trie, ref) << "walk " << walk << " step " << step;
        const std::span<const uint64_t> cached = constraint.allowed_tokens({});
        ASSERT_TRUE(std::equal(cached.begin(), cached.end(), ref.begin()));
        EXPECT_EQ(token_mask_allows(trie, eos), m.can_end());
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < masker.num_logits(); ++id)
          if (token_mask_allows(trie, id) && id != eos) allowed.push_back(id);
        if (m.complete()) {
          EXPECT_TRUE(allowed.empty());
          break;
        }
        ASSERT_FALSE(allowed.empty());
        const int32_t token = allowed[rng() % allowed.size()];
        ASSERT_TRUE(masker.advance(m, token));
        ASSERT_TRUE(constraint.accept_token(token));
      }
    }
  }
}

// Requests of one grammar share its masks (SharedGrammarMasks): equal texts compiled apart
// get the first grammar and one GrammarTokenMasks; two constraints walking different outputs
// through the shared masks each get the reference's bits; a second request along the same
// output walks nothing new; the least recently used grammar goes past the capacity.
TEST(Gbnf, RequestsOfOneGrammarShareItsMasks) {
  const Tokenizer tok = Tokenizer::from_dir(test::tiny_target_dir());
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), test::eos_of(tok)));
  SharedGrammarMasks shared(masker, 2);
  const std::string text = oracle_cases()[10].grammar;  // nested objects
  const auto first = shared.get(CompiledGrammar::compile(text));
  const auto again = shared.get(CompiledGrammar::compile(text));
  EXPECT_EQ(first.compiled, again.compiled);
  EXPECT_EQ(first.masks, again.masks);
  std::vector<uint64_t> ref(static_cast<size_t>(masker.num_words()));
  const std::vector<std::string> outputs = {R"({"ab": {"c": 12}, "d": 3})", R"({ "x":{}, "yy": 7 })"};
  std::vector<std::vector<int32_t>> tokens;
  for (const std::string& o : outputs) tokens.push_back(tok.encode(o, false));
  const auto walk = [&](const std::vector<int32_t>& ts) {
    GrammarConstraint c(masker, again.compiled, again.masks);
    GrammarMatcher m(*again.compiled);
    for (const int32_t t : ts) {
      const std::span<const uint64_t> bits = c.allowed_tokens({});
      reference::allowed_tokens(masker.vocabulary(), m, ref);
      ASSERT_TRUE(std::equal(bits.begin(), bits.end(), ref.begin()));
      ASSERT_TRUE(c.accept_token(t) && masker.advance(m, t));
    }
    EXPECT_TRUE(m.complete());
  };
  walk(tokens[0]);
  walk(tokens[1]);
  const int64_t walks = first.masks->num_walks();
  EXPECT_GT(walks, 0);
  walk(tokens[0]);  // the same output again: every mask kept
  EXPECT_EQ(first.masks->num_walks(), walks);
  shared.get(CompiledGrammar::compile("root ::= \"a\""));
  shared.get(CompiledGrammar::compile("root ::= \"b\""));  // past the capacity of 2: the first goes
  EXPECT_EQ(shared.size(), 2u);
  EXPECT_NE(shared.get(CompiledGrammar::compile(text)).masks, first.masks);
}

}  // namespace
}  // namespace dspark
