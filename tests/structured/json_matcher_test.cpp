// JsonMatcher against hand-written valid and invalid objects (the refused byte must be the
// first one that makes the text impossible to complete), against nlohmann::json as the
// oracle on random mutations, and completion() on every prefix.
#include "structured/json_matcher.h"

#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "structured/json_samples.h"

namespace dspark {
namespace {

// Bytes accepted before the first refusal (text.size() when all are).
size_t accepted_length(std::string_view text, const JsonMatcherOptions& options = {},
                       JsonMatcher* out = nullptr) {
  JsonMatcher m(options);
  size_t n = 0;
  for (; n < text.size(); ++n) {
    const JsonMatcher before = m;
    if (!m.advance(static_cast<uint8_t>(text[n]))) {
      EXPECT_EQ(m, before) << "a refused byte changed the matcher";
      break;
    }
  }
  if (out != nullptr) *out = m;
  return n;
}

std::string escaped(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// nlohmann::json, with numbers beyond double's range tamed (test::parses_as_object).
bool parses_as_object(const std::string& text) { return test::parses_as_object(text); }

const std::vector<std::string>& valid_objects() {
  static const std::vector<std::string> docs = {
      "{}",
      "{ }",
      R"({"a":1})",
      R"({"a":[]})",
      R"({"a":{}})",
      R"({"a":[{}]})",
      R"({"key": "value", "n": -0.5e+10, "t": true, "f": false, "z": null})",
      R"({"nested": {"deeper": {"deepest": [1, [2, [3, {"x": "y"}]]]}}})",
      R"({"escapes": "quote \" backslash \\ slash \/ \b \f \n \r \t"})",
      R"({"unicode": "\u00e9\u4E2D\uD83D\uDE00 \u0000"})",
      "{\"utf8\": \"h\xC3\xA9llo w\xC3\xB6rld \xE2\x80\x94 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80\"}",
      R"({"numbers": [0, -0, 1, -1, 10, 123456789, 0.0, 1.5, -2.25, 1e5, 1E5, 1e+5, 1e-5, 2.5E-3, 0e0, -0.0e-0]})",
      R"({"empty_string": "", "empty_array": [], "empty_object": {}})",
      "\n{\n  \"pretty\": true,\n  \"list\": [\n    1,\n    2\n  ]\n}",
      "\t{\"tabs\":\t1\r\n}",
      R"({"a":[true,false,null]})",
      R"({"": ""})",
      R"({"dup": 1, "dup": 2})",
      R"({"long_number": 12345678901234567890123456789})",
      R"({"mixed": [1, "two", {"three": 3}, [4], null, true, -5.5]})",
      "{\"del\": \"\x7F\"}",
      R"({"key with spaces": "value with \"quotes\""})",
      R"({"a":{"b":{"c":{"d":{"e":{"f":{"g":{}}}}}}}})",
      R"({"arr":[[[[[[]]]]]]})",
      R"({"ws" : [ 1 , 2 ] , "b" :{ } })",
      R"({"clef": "\uD834\uDD1E"})",
      R"({"escaped": "\u0022\u005C\u002F\u00FF\uFFFF"})",
      R"({"x":0.1,"y":-1e-7,"z":9E+9})",
      "{\"emoji\": \"\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD\", \"max\": \"\xF4\x8F\xBF\xBF\", \"bmp_end\": \"\xEF\xBF\xBF\"}",
      R"({"last": [{"a": [{"b": null}]}]})",
      "{\"a\":1,\"b\":[{\"c\":\"d\\n\"},-12.5e3]}",
  };
  return docs;
}

// Cheap to copy, as the trie walk and the speculative-decoding calls assume.
static_assert(sizeof(JsonMatcher) <= 24 && std::is_trivially_copyable_v<JsonMatcher>);

TEST(JsonMatcher, CorpusIsValidJson) {
  for (const std::string& doc : valid_objects()) EXPECT_TRUE(parses_as_object(doc)) << doc;
}

TEST(JsonMatcher, AcceptsEveryValidObjectCompleteOnlyAtTheEnd) {
  for (const std::string& doc : valid_objects()) {
    JsonMatcher m;
    EXPECT_FALSE(m.complete());
    for (size_t i = 0; i < doc.size(); ++i) {
      ASSERT_TRUE(m.advance(static_cast<uint8_t>(doc[i]))) << doc << " refused at " << i;
      EXPECT_EQ(m.complete(), i + 1 == doc.size()) << doc << " at " << i;
    }
    EXPECT_TRUE(m.complete()) << doc;
    EXPECT_EQ(m.depth(), 0);
    // Nothing after the object, not even whitespace.
    for (const char c : std::string_view(" \n}{,0\"")) {
      EXPECT_FALSE(m.advance(static_cast<uint8_t>(c))) << doc;
    }
    JsonMatcher whole;
    EXPECT_TRUE(whole.advance(doc));
    EXPECT_EQ(whole, m);
  }
}

TEST(JsonMatcher, AcceptsRandomValidObjects) {
  test::RandomJson gen(42, 8, 16);
  for (int i = 0; i < 2000; ++i) {
    const std::string doc = gen.object();
    ASSERT_TRUE(parses_as_object(doc)) << escaped(doc);
    JsonMatcher m;
    ASSERT_EQ(accepted_length(doc, {}, &m), doc.size()) << escaped(doc);
    EXPECT_TRUE(m.complete()) << escaped(doc);
  }
}

TEST(JsonMatcher, CompletionClosesEveryPrefix) {
  for (const std::string& doc : valid_objects()) {
    JsonMatcher m;
    for (size_t i = 0; i <= doc.size(); ++i) {
      const std::string tail = m.completion();
      JsonMatcher finished = m;
      ASSERT_TRUE(finished.advance(tail)) << doc.substr(0, i) << " + " << tail;
      EXPECT_TRUE(finished.complete());
      EXPECT_TRUE(parses_as_object(doc.substr(0, i) + tail)) << doc.substr(0, i) << " + " << tail;
      if (i < doc.size()) {
        ASSERT_TRUE(m.advance(static_cast<uint8_t>(doc[i])));
      }
    }
    EXPECT_EQ(m.completion(), "");
  }
}

struct Invalid {
  std::string text;
  size_t refused_at;  // offset of the first byte the matcher must refuse
  bool json_elsewhere = false;  // valid JSON for nlohmann, refused here by design
};

TEST(JsonMatcher, RefusesInvalidTextAtTheFirstImpossibleByte) {
  const std::vector<Invalid> cases = {
      {R"({"a":1,})", 7},           // trailing comma in an object
      {R"({"a":[1,]})", 8},         // trailing comma in an array
      {R"({"a":[,1]})", 6},
      {R"({,})", 1},
      {R"({"a":1,,})", 7},
      {R"({'a':1})", 1},            // single quotes
      {R"({"a":'x'})", 5},
      {R"({a:1})", 1},              // unquoted key
      {R"({"a" 1})", 5},            // missing colon
      {R"({"a"::1})", 5},
      {R"({"a":1,"b"})", 10},
      {R"({"a":1 2})", 7},
      {R"({"a":1])", 6},            // wrong closing bracket
      {R"({"a":[1})", 7},
      {R"({"a":01})", 6},           // leading zeros
      {R"({"a":00})", 6},
      {R"({"a":-01})", 7},
      {R"({"a":1.})", 7},           // incomplete numbers
      {R"({"a":1e})", 7},
      {R"({"a":1e+})", 8},
      {R"({"a":-})", 6},
      {R"({"a":.5})", 5},
      {R"({"a":+1})", 5},
      {R"({"a":1.e5})", 7},
      {R"({"a":0x10})", 6},
      {R"({"a":NaN})", 5},
      {R"({"a":Infinity})", 5},
      {R"({"a":-Infinity})", 6},
      {R"({"a":tru})", 8},          // literals
      {R"({"a":truex})", 9},
      {R"({"a":True})", 5},
      {R"({"a":nul})", 8},
      {"{\"a\":\"x\ty\"}", 7},      // raw control characters in strings
      {"{\"a\":\"x\ny\"}", 7},
      {std::string("{\"a\":\"\0\"}", 9), 6},
      {"{\"a\":\"\x1F\"}", 6},
      {R"({"a":"\x"})", 7},          // bad escapes
      {R"({"a":"\'"})", 7},
      {R"({"a":"\U0041"})", 7},
      {R"({"a":"\u12G4"})", 10},
      {R"({"a":"\u12"})", 10},
      {R"({"a":"\uDC00"})", 9},      // lone low surrogate, refused at its second digit
      {R"({"a":"\udfff"})", 9},
      {R"({"a":"\uD800x"})", 12},    // high surrogate without its low half
      {R"({"a":"\uD800\n"})", 13},
      {R"({"a":"\uD800\uD800"})", 15},
      {R"({"a":"\uDBFF\u0041"})", 14},
      {"{\"a\":\"\xC0\x80\"}", 6},      // overlong lead bytes
      {"{\"a\":\"\xC1\xBF\"}", 6},
      {"{\"a\":\"\xE0\x80\x80\"}", 7},  // overlong 3-byte form
      {"{\"a\":\"\xF0\x80\x80\x80\"}", 7},
      {"{\"a\":\"\xED\xA0\x80\"}", 7},  // encoded surrogate
      {"{\"a\":\"\xF4\x90\x80\x80\"}", 7},  // above U+10FFFF
      {"{\"a\":\"\xF5\x80\x80\x80\"}", 6},
      {"{\"a\":\"\xFF\"}", 6},
      {"{\"a\":\"\x80\"}", 6},          // continuation byte without a lead
      {"{\"a\":\"\xE2\x82\"}", 8},      // truncated character
      {"{\"a\":\"\xC3\xC3\"}", 7},
      {"[1,2]", 0},                     // top level must be an object
      {"[]", 0},
      {R"("s")", 0},
      {"1", 0},
      {"true", 0},
      {"null", 0},
      {"\xEF\xBB\xBF{}", 0, true},            // byte order mark
      {"{} ", 2, true},                       // nothing after the object
      {"{}\n", 2, true},
      {"{}{}", 2},
      {R"({"a":true}x)", 10},
      {"}", 0},
      {"{]", 1},
  };
  for (const Invalid& c : cases) {
    EXPECT_EQ(accepted_length(c.text), c.refused_at) << c.text;
    EXPECT_EQ(parses_as_object(c.text), c.json_elsewhere) << c.text;
  }
}

TEST(JsonMatcher, WhitespaceRunLimit) {
  const std::string ok = "{" + std::string(16, ' ') + "}";
  EXPECT_EQ(accepted_length(ok), ok.size());
  const std::string too_long = "{" + std::string(17, ' ') + "}";
  EXPECT_EQ(accepted_length(too_long), 17u);
  // The count is per run: any other byte starts a new one, across all structural places.
  const std::string runs = std::string(16, '\n') + "{" + std::string(16, ' ') + "\"a\"" +
                           std::string(16, '\t') + ":" + std::string(16, ' ') + "1" +
                           std::string(16, '\r') + "}";
  EXPECT_EQ(accepted_length(runs), runs.size());
  // A number ended by whitespace counts that whitespace too.
  const std::string after_number = "{\"a\":12" + std::string(17, ' ');
  EXPECT_EQ(accepted_length(after_number), 7u + 16u);
  // Whitespace inside strings is text, not counted.
  const std::string in_string = "{\"" + std::string(100, ' ') + "\":1}";
  EXPECT_EQ(accepted_length(in_string), in_string.size());
  JsonMatcherOptions none;
  none.max_whitespace_run = 0;
  EXPECT_EQ(accepted_length("{\"a\": 1}", none), 5u);
  EXPECT_EQ(accepted_length(" {}", none), 0u);
  EXPECT_EQ(accepted_length("{\"a\":[1,2,{\"b\":null}]}", none), 22u);
}

TEST(JsonMatcher, DepthLimit) {
  std::string deep;
  for (int d = 0; d < 64; ++d) deep += "{\"a\":";
  JsonMatcher m;
  ASSERT_TRUE(m.advance(deep));
  EXPECT_EQ(m.depth(), 64);
  EXPECT_FALSE(m.advance('{'));
  EXPECT_FALSE(m.advance('['));
  // A scalar still fits, and closing brings it back.
  ASSERT_TRUE(m.advance("\"leaf\""));
  ASSERT_TRUE(m.advance(std::string(64, '}')));
  EXPECT_TRUE(m.complete());
  std::string text = deep + "1" + std::string(64, '}');
  EXPECT_TRUE(parses_as_object(text));

  const std::string arrays = "{\"a\":" + std::string(63, '[');
  EXPECT_EQ(accepted_length(arrays + "["), arrays.size());
  EXPECT_EQ(accepted_length(arrays + "]"), arrays.size() + 1);
  EXPECT_EQ(accepted_length(arrays + "{"), arrays.size());

  JsonMatcherOptions shallow;
  shallow.max_depth = 2;
  EXPECT_EQ(accepted_length(R"({"a":{"b":[1]}})", shallow), 10u);
  EXPECT_EQ(accepted_length(R"({"a":{"b":1},"c":[2]})", shallow), 21u);
  JsonMatcherOptions flat;
  flat.max_depth = 1;
  EXPECT_EQ(accepted_length(R"({"a":[]})", flat), 5u);
}

TEST(JsonMatcher, OptionsAreValidated) {
  JsonMatcherOptions o;
  o.max_depth = 0;
  EXPECT_THROW(JsonMatcher{o}, Error);
  o.max_depth = 65;
  EXPECT_THROW(JsonMatcher{o}, Error);
  o.max_depth = 64;
  o.max_whitespace_run = 256;
  EXPECT_THROW(JsonMatcher{o}, Error);
  o.max_whitespace_run = -1;
  EXPECT_THROW(JsonMatcher{o}, Error);
}

TEST(JsonMatcher, StringAdvanceIsAllOrNothing) {
  JsonMatcher m;
  ASSERT_TRUE(m.advance("{\"a\":1"));
  const JsonMatcher before = m;
  EXPECT_FALSE(m.advance("2,}"));  // '2' and ',' fit, '}' does not
  EXPECT_EQ(m, before);
  EXPECT_TRUE(m.advance("2}"));
  EXPECT_TRUE(m.complete());
}

// Random single-byte edits of valid objects, judged by nlohmann::json: the matcher must
// accept a whole text and call it complete exactly when nlohmann parses it as an object
// (minus the documented differences: trailing whitespace, lone surrogates — which nlohmann
// also refuses — and the whitespace run limit). Every accepted prefix must be completable.
TEST(JsonMatcher, AgreesWithNlohmannOnRandomEdits) {
  std::mt19937_64 rng(1234);
  const std::string alphabet = "{}[]\",:0123456789-+.eEtrufalsn \n\t\\/bu\xC3\xA9\x80\xFFxD8C";
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int num_accepted = 0, num_refused = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text = valid_objects()[pick(valid_objects().size())];
    const int num_edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < num_edits; ++e) {
      const size_t pos = pick(text.size() + 1);
      const char c = alphabet[pick(alphabet.size())];
      switch (pick(3)) {
        case 0: text.insert(text.begin() + static_cast<std::ptrdiff_t>(pos), c); break;
        case 1: if (pos < text.size()) text.erase(pos, 1); break;
        default: if (pos < text.size()) text[pos] = c; break;
      }
    }
    JsonMatcher m;
    const size_t n = accepted_length(text, {}, &m);
    const bool whole = n == text.size() && m.complete();
    const bool trailing_ws = !text.empty() && std::string_view(" \n\t\r").find(text.back()) !=
                                                  std::string_view::npos;
    const bool oracle = parses_as_object(text) && !trailing_ws;
    EXPECT_EQ(whole, oracle) << "text: " << escaped(text)
                             << " accepted " << n;
    (whole ? num_accepted : num_refused)++;
    // Soundness of the prefix: what was accepted can still become an object.
    const std::string prefix = text.substr(0, n) + m.completion();
    EXPECT_TRUE(parses_as_object(prefix)) << prefix;
  }
  EXPECT_GT(num_accepted, 1000);
  EXPECT_GT(num_refused, 1000);
}

}  // namespace
}  // namespace dspark
