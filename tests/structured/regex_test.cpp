// Regex-constrained output: the parser's refusals, the automaton against PCRE2 (an
// independent engine) on full matches and on prefixes of matches, UTF-8 handling,
// completions, choices, and the token masks of a regex state against the token-by-token
// reference.
#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "structured/grammar_constraint.h"
#include "structured/shared_token_masks.h"
#include "structured/json_samples.h"
#include "support/pcre2_oracle.h"
#include "structured/regex_dfa.h"
#include "structured/regex_parser.h"
#include "structured/regex_token_masks.h"
#include "structured/token_mask.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark {
namespace {

using testing::Pcre2;

// The automaton's verdicts on s: a prefix of some match (every byte read), and a full match.
struct Verdict {
  bool viable;
  bool full;
};
Verdict run(const CompiledRegex& re, std::string_view s) {
  RegexMatcher m(re);
  if (!m.advance(s)) return {false, false};
  return {true, m.can_end()};
}

const std::vector<std::string>& oracle_patterns() {
  static const std::vector<std::string> patterns = {
      R"(\d{3}-\d{4})",
      R"((foo|bar)+baz?)",
      R"([A-Z][a-z]*( [A-Z][a-z]*){0,3})",
      R"(-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?)",
      R"([^"\\]*")",
      R"((a|ab)(c|bcd)(d*))",
      R"(x{2,5}y?)",
      R"((?:ab){2,}c?)",
      R"(\w+@\w+\.(com|org))",
      R"(.{1,3})",
      R"([α-ω]+ (é|ü)?)",
      R"([^a-z]{2})",
      R"(\s*\S+)",
      R"((\+|-)?\d+)",
      R"(\x41\u00e9[\u4e00-\u9fff]+)",
      R"(^(?P<year>\d{4})-(?<month>0[1-9]|1[0-2])$)",
      R"(a|b|)",
      R"([\]\-a-c]+[^\n]?)",
      R"((yes|no|maybe)(, (yes|no|maybe))*)",
      R"(\{[^{}]*\}|\[\d+(,\d+)*\])",
      R"([\x00-\x7f]*)"};
  return patterns;
}

// PCRE2 spells \uHHHH and \UHHHHHHHH as \x{...}.
std::string pcre2_spelling(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      const size_t digits = c == 'u' ? 4 : c == 'U' ? 8 : 0;
      out += pattern.substr(i, 2);
      if (digits > 0) {
        out.resize(out.size() - 1);
        out += "x{" + pattern.substr(i + 2, digits) + "}";
        i += digits;
      }
      ++i;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

// Characters the random strings are drawn from: the ASCII range and some of every length.
std::vector<uint32_t> alphabet() {
  std::vector<uint32_t> a;
  for (uint32_t c = 0x20; c < 0x7F; ++c) a.push_back(c);
  for (const uint32_t c : {0x0Au, 0x09u, 0x0Bu, 0x00u, 0x7Fu, 0xE9u, 0xFCu, 0x3B1u, 0x3C9u, 0x3B5u, 0x800u,
                           0x4E00u, 0x9FFFu, 0xFFFDu, 0x10000u, 0x10FFFFu})
    a.push_back(c);
  return a;
}

TEST(Regex, AgreesWithPcre2OnMatchesAndTheirPrefixes) {
  const std::vector<uint32_t> chars = alphabet();
  std::mt19937_64 rng(7);
  for (const std::string& pattern : oracle_patterns()) {
    SCOPED_TRACE(pattern);
    std::shared_ptr<const CompiledRegex> re;
    ASSERT_NO_THROW(re = CompiledRegex::compile(pattern));
    const Pcre2 oracle(pcre2_spelling(pattern));
    int num_full = 0, num_viable = 0;
    // Random walks through the automaton (strings that stay viable), checked at every
    // character boundary; then random strings, mostly refused.
    for (int walk = 0; walk < 300; ++walk) {
      RegexMatcher m(*re);
      std::string s;
      const int steps = static_cast<int>(rng() % 24);
      for (int step = 0; step < steps && !m.complete(); ++step) {
        std::vector<uint8_t> ok;
        for (int b = 0; b < 256; ++b)
          if (RegexMatcher(m).advance(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
        ASSERT_FALSE(ok.empty()) << "a live state with no way on: " << s;
        // A third of the steps head for a full match, so that walks end in one often.
        const bool toward_match = rng() % 3 == 0 && !m.can_end();
        const uint8_t b = toward_match ? static_cast<uint8_t>(m.completion()[0]) : ok[rng() % ok.size()];
        ASSERT_TRUE(m.advance(b));
        s += static_cast<char>(b);
        if (!tok::utf8_is_valid(s)) continue;
        ASSERT_TRUE(oracle.viable(s)) << s;
        ASSERT_EQ(m.can_end(), oracle.full(s)) << s;
        num_viable += 1;
        num_full += m.can_end();
      }
    }
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      const int n = static_cast<int>(rng() % 8);
      for (int k = 0; k < n; ++k) s += tok::utf8_encode(chars[rng() % chars.size()]);
      const Verdict v = run(*re, s);
      ASSERT_EQ(v.viable, oracle.viable(s)) << "[" << s << "] " << s.size();
      ASSERT_EQ(v.full, oracle.full(s)) << s;
      num_full += v.full;
    }
    EXPECT_GT(num_full, 10);
    EXPECT_GT(num_viable, 100);
  }
}

TEST(Regex, ReadsBytesAsUtf8AndRefusesWhatIsNot) {
  const auto any = CompiledRegex::compile(".*");
  for (const std::string& bad : {std::string("\xff"), std::string("\x80"), std::string("\xc0\x80"),
                                 std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"), std::string("\n")}) {
    EXPECT_FALSE(run(*any, bad).viable) << ::testing::PrintToString(bad);
  }
  EXPECT_TRUE(run(*any, "\xf4\x8f\xbf\xbf").full);  // U+10FFFF
  EXPECT_TRUE(run(*any, "\xe2\x82").viable);         // the first two bytes of a character
  EXPECT_FALSE(run(*any, "\xe2\x82").full);
  const auto accented = CompiledRegex::compile("é+");
  EXPECT_TRUE(run(*accented, "ééé").full);
  EXPECT_FALSE(run(*accented, "e").viable);
  // A negated class covers everything else, surrogates excepted.
  const auto not_a = CompiledRegex::compile("[^a]");
  EXPECT_TRUE(run(*not_a, "\xef\xbf\xbd").full);
  EXPECT_FALSE(run(*not_a, "a").viable);
  EXPECT_FALSE(run(*not_a, "\xed\xb0\x80").viable);
}

TEST(Regex, AnyFullMatchMayEndWhileLongerOnesGoOn) {
  const auto re = CompiledRegex::compile(R"(\d{1,3})");
  RegexMatcher m(*re);
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.complete());
  ASSERT_TRUE(m.advance("12"));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.complete());
  ASSERT_TRUE(m.advance("3"));
  EXPECT_TRUE(m.complete());  // nothing may follow the third digit
  const int32_t before = m.state();
  EXPECT_FALSE(m.advance("4"));
  EXPECT_EQ(m.state(), before);  // unchanged by the refused byte
}

TEST(Regex, CompletionIsAShortestWayToAFullMatch) {
  const auto re = CompiledRegex::compile(R"(\[(\d+,)*\d+\]|null)");
  RegexMatcher m(*re);
  EXPECT_EQ(m.completion(), "[0]");
  ASSERT_TRUE(m.advance("[12,"));
  EXPECT_EQ(m.completion(), "0]");
  std::mt19937_64 rng(3);
  for (const std::string& pattern : oracle_patterns()) {
    const auto r = CompiledRegex::compile(pattern);
    for (int walk = 0; walk < 50; ++walk) {
      RegexMatcher w(*r);
      for (int step = static_cast<int>(rng() % 12); step > 0 && !w.complete(); --step) {
        std::vector<uint8_t> ok;
        for (int b = 0; b < 256; ++b)
          if (RegexMatcher(w).advance(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
        ASSERT_TRUE(w.advance(ok[rng() % ok.size()]));
      }
      RegexMatcher done = w;
      ASSERT_TRUE(done.advance(w.completion())) << pattern;
      EXPECT_TRUE(done.can_end()) << pattern;
    }
  }
}

TEST(Regex, CountsAndQuantifiers) {
  EXPECT_TRUE(run(*CompiledRegex::compile("a{,2}b"), "aab").full);  // {,m} is {0,m}
  EXPECT_FALSE(run(*CompiledRegex::compile("a{,2}b"), "aaa").viable);
  EXPECT_TRUE(run(*CompiledRegex::compile("a{2}"), "aa").full);
  EXPECT_TRUE(run(*CompiledRegex::compile("a{2,}?"), "aaaa").full);  // lazy: the same strings
  EXPECT_TRUE(run(*CompiledRegex::compile("a{x}"), "a{x}").full);    // not a count: literal, as in Python
  EXPECT_TRUE(run(*CompiledRegex::compile("(a*)*b"), "aab").full);   // an empty loop body
}

TEST(Regex, RefusesWhatItDoesNotSupportWithItsPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"((a)\1)", "unsupported escape '\\1'"},
      {R"(a\b)", "unsupported escape '\\b'"},
      {R"(\p{L})", "unsupported escape '\\p'"},
      {R"((?=a)b)", "lookaround"},
      {R"((?i)a)", "lookaround, inline flags"},
      {R"(a++)", "a quantifier after a quantifier"},
      {R"(a{1001})", "a count above 1000"},
      {R"(a{3,2})", "maximum is below its minimum"},
      {R"((ab)", "an unclosed '(' at byte 0"},
      {R"(ab))", "unbalanced ')' at byte 2"},
      {R"([ab)", "an unclosed '['"},
      {R"([z-a])", "a range whose end is below its start"},
      {R"(a^b)", "an anchor inside the pattern"},
      {R"(a$b)", "an anchor inside the pattern"},
      {R"(*a)", "nothing to repeat at byte 0"},
      {R"(a\)", "a trailing backslash"},
      {"a\xff", "a byte that is not UTF-8 at byte 1"},
      {R"(\xZZ)", "a malformed hex escape"},
      {R"(\ud800)", "not a Unicode scalar value"},
      {"", "matches only the empty string"},
      {"a{0}", "matches only the empty string"},
      {R"([^\x00-\U0010FFFF])", "a class that matches no character"},
      {"((a{1000}){1000})", "too large"},
      {"(a|b)*a(a|b){16}", "too complex"},
      {std::string(regex::kMaxPatternBytes + 1, 'a'), "longer than"},
  };
  for (const auto& [pattern, words] : cases) {
    try {
      CompiledRegex::compile(pattern);
      ADD_FAILURE() << "accepted " << pattern.substr(0, 40);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidRequest) << pattern.substr(0, 40);
      const std::string message = e.message();
      EXPECT_EQ(message.rfind("regex: ", 0), 0u) << message;
      EXPECT_NE(message.find(words), std::string::npos) << pattern.substr(0, 40) << ": " << message;
    }
  }
}

TEST(Regex, ChoicesMatchExactlyTheirStrings) {
  const std::vector<std::string> choices = {"a.b", "c|d", "x*", "yes", "yesterday", "(é)", "[1-2]\n"};
  const auto re = CompiledRegex::compile(choice_regex(choices));
  for (const std::string& c : choices) EXPECT_TRUE(run(*re, c).full) << c;
  for (const char* s : {"axb", "c", "d", "xx", "", "é", "1\n", "yesterday!"}) {
    EXPECT_FALSE(run(*re, s).full) << s;
  }
  RegexMatcher m(*re);
  ASSERT_TRUE(m.advance("yes"));
  EXPECT_TRUE(m.can_end());     // "yes" may end here
  EXPECT_FALSE(m.complete());   // or go on to "yesterday"
  EXPECT_THROW(choice_regex(std::vector<std::string>{}), Error);
  EXPECT_THROW(choice_regex(std::vector<std::string>{"a", ""}), Error);
}

// Token masks of regex states: the trie walk against the reference, EOS wherever a full
// match may end, only EOS where nothing may follow.
TEST(Regex, TokenMasksEqualTheReference) {
  const Tokenizer tok = Tokenizer::from_dir(test::tiny_target_dir());
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), test::eos_of(tok)));
  std::vector<uint64_t> trie(static_cast<size_t>(masker.num_words())), ref(trie.size());
  const int32_t eos = test::eos_of(tok).at(0);
  std::mt19937_64 rng(11);
  for (const std::string& pattern : {std::string(R"(-?(0|[1-9]\d*)(\.\d+)?)"), std::string(R"([A-Z][a-z ]{0,40}\.)"),
                                     choice_regex(std::vector<std::string>{"positive", "negative", "neutral"}),
                                     std::string(R"((def|class) [a-z_]+\(.*\):)")}) {
    SCOPED_TRACE(pattern);
    const auto re = CompiledRegex::compile(pattern);
    for (int walk = 0; walk < 20; ++walk) {
      RegexMatcher m(*re);
      for (int step = 0; step < 30; ++step) {
        masker.allowed_tokens(m, trie);
        reference::allowed_tokens(masker.vocabulary(), m, ref);
        ASSERT_EQ(trie, ref) << "walk " << walk << " step " << step;
        EXPECT_EQ(token_mask_allows(trie, eos), m.can_end());
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < masker.num_logits(); ++id)
          if (token_mask_allows(trie, id) && id != eos) allowed.push_back(id);
        if (m.complete()) {
          EXPECT_TRUE(allowed.empty());
          break;
        }
        ASSERT_FALSE(allowed.empty());
        ASSERT_TRUE(masker.advance(m, allowed[rng() % allowed.size()]));
      }
    }
  }
}

// The per-request masks (one walk of the short tokens per lookahead class, the long ones per
// state) give the masker's own bits at every state of random token walks, with far fewer
// walks than states asked; on tiny-target's vocabulary and on GPT-2's (72 tokens longer than
// kShortTokenBytes).
void expect_class_masks_equal_the_maskers(const Tokenizer& tok) {
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), test::eos_of(tok)));
  std::vector<uint64_t> cached(static_cast<size_t>(masker.num_words())), direct(cached.size());
  std::mt19937_64 rng(13);
  for (const std::string& pattern : {std::string(R"([A-Z][^\n]{0,120}\.)"), std::string(R"(\w+( \w+)*)"),
                                    std::string(R"(\d{1,40})"), std::string(R"((ab|cd){0,30}e?)")}) {
    SCOPED_TRACE(pattern);
    const auto re = CompiledRegex::compile(pattern);
    RegexTokenMasks masks(masker, *re);
    int64_t asked = 0;
    for (int walk = 0; walk < 12; ++walk) {
      RegexMatcher m(*re);
      for (int step = 0; step < 60; ++step) {
        masks.allowed_tokens(m, cached);
        masker.allowed_tokens(m, direct);
        ++asked;
        ASSERT_EQ(cached, direct) << "walk " << walk << " step " << step;
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < masker.num_logits(); ++id)
          if (token_mask_allows(direct, id) && !std::count(masker.eos_ids().begin(), masker.eos_ids().end(), id))
            allowed.push_back(id);
        if (allowed.empty()) break;
        ASSERT_TRUE(masker.advance(m, allowed[rng() % allowed.size()]));
      }
    }
    EXPECT_LT(masks.num_walks() * 3, asked) << masks.num_walks() << " walks for " << asked << " masks";
  }
}

TEST(Regex, MasksSharedByLookaheadClassesEqualTheMaskersOwn) {
  expect_class_masks_equal_the_maskers(Tokenizer::from_dir(test::tiny_target_dir()));
  if (std::filesystem::exists(test::gpt2_tokenizer_json())) {
    expect_class_masks_equal_the_maskers(Tokenizer::from_file(test::gpt2_tokenizer_json()));
  }
}

TEST(Regex, LookaheadClassesSeparateOnlyWhatShortStringsTellApart) {
  const auto re = CompiledRegex::compile("a{0,50}");
  const std::vector<int32_t>& classes = *re->lookahead_classes(4);
  // After k letters, 50 - k more may follow: states with at least 4 left read the same
  // strings of up to 4 bytes; the last 4 are each their own (3, 2, 1 and 0 left).
  std::set<int32_t> distinct(classes.begin(), classes.end());
  EXPECT_EQ(distinct.size(), 5u);
  const std::vector<int32_t>& all = *re->lookahead_classes(100);
  EXPECT_EQ(re->lookahead_classes(4).get(), &classes);  // computed once, then shared
  EXPECT_EQ(std::set<int32_t>(all.begin(), all.end()).size(), static_cast<size_t>(re->num_states()));
}

TEST(Regex, GrammarConstraintCutsDraftsAndMasksRows) {
  const Tokenizer tok = Tokenizer::from_dir(test::tiny_target_dir());
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), test::eos_of(tok)));
  GrammarConstraint c(masker, CompiledRegex::compile("(yes|no)!"));
  const std::vector<int32_t> yes = tok.encode("yes!", false), bad = tok.encode("yes?", false);
  EXPECT_EQ(c.valid_prefix_length(yes), static_cast<int32_t>(yes.size()));
  EXPECT_LT(c.valid_prefix_length(bad), static_cast<int32_t>(bad.size()));
  const int64_t vocab = masker.num_logits();
  std::vector<float> rows(static_cast<size_t>((yes.size() + 1) * vocab), 0.0f);
  c.mask_rows(rows.data(), vocab, yes);
  for (size_t j = 0; j <= yes.size(); ++j) {
    const float* row = rows.data() + j * static_cast<size_t>(vocab);
    const int64_t kept = std::count_if(row, row + vocab, [](float v) { return v == 0.0f; });
    EXPECT_GT(kept, 0) << "row " << j;
    if (j < yes.size()) {
      EXPECT_EQ(row[yes[j]], 0.0f) << "row " << j;
    }
  }
  for (const int32_t t : yes) ASSERT_TRUE(c.accept_token(t));
  EXPECT_TRUE(c.complete());
}

// Requests of one regex share its masks (SharedRegexMasks): equal patterns compiled apart get
// the first automaton and one RegexTokenMasks; two constraints through it each get the
// reference's bits; a second request along the same output walks nothing new.
TEST(Regex, RequestsOfOneRegexShareItsMasks) {
  const Tokenizer tok = Tokenizer::from_dir(test::tiny_target_dir());
  const TokenMasker masker(token_bytes(tok, tok.vocab_size(), test::eos_of(tok)));
  SharedRegexMasks shared(masker);
  const std::string pattern = R"(\[("[a-z ]{1,12}"(, )?){1,4}\])";
  const auto first = shared.get(CompiledRegex::compile(pattern));
  const auto again = shared.get(CompiledRegex::compile(pattern));
  EXPECT_EQ(first.compiled, again.compiled);
  EXPECT_EQ(first.masks, again.masks);
  EXPECT_NE(shared.get(CompiledRegex::compile("[a-z]+")).masks, first.masks);
  std::vector<uint64_t> ref(static_cast<size_t>(masker.num_words()));
  const auto walk = [&](const std::string& output) {
    GrammarConstraint c(masker, again.compiled, again.masks);
    RegexMatcher m(*again.compiled);
    for (const int32_t t : tok.encode(output, false)) {
      const std::span<const uint64_t> bits = c.allowed_tokens({});
      reference::allowed_tokens(masker.vocabulary(), m, ref);
      ASSERT_TRUE(std::equal(bits.begin(), bits.end(), ref.begin()));
      ASSERT_TRUE(c.accept_token(t) && masker.advance(m, t));
    }
    EXPECT_TRUE(m.complete());
  };
  walk(R"(["red apple", "pear"])");
  walk(R"(["a b c"])");
  const int64_t walks = first.masks->num_walks();
  EXPECT_GT(walks, 0);
  walk(R"(["red apple", "pear"])");
  EXPECT_EQ(first.masks->num_walks(), walks);
}

}  // namespace
}  // namespace dspark
