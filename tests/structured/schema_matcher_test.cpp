// SchemaMatcher: hand-written texts for every construct (the refused byte must be the
// first one that makes the text impossible under the schema), declared property order,
// recursion and the depth bound, and random byte walks: every incomplete state accepts a
// byte (no dead ends), a refused byte leaves the state unchanged, and every walk finished
// by completion() parses and validates against the schema (an oracle reading the schema
// JSON, tests/structured/schema_samples.h).
#include "structured/schema_matcher.h"

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "structured/schema_samples.h"

namespace dspark {
namespace {

std::shared_ptr<const CompiledJsonSchema> schema_named(const std::string& name) {
  for (const auto& s : test::sample_schemas()) {
    if (name == s.name) return compile_json_schema_text(s.text);
  }
  ADD_FAILURE() << "no sample schema " << name;
  return nullptr;
}

// Bytes accepted before the first refusal; *complete: whether the state is then complete.
size_t accepted(const CompiledJsonSchema& schema, std::string_view text, bool* complete = nullptr) {
  SchemaMatcher m(schema);
  size_t n = 0;
  for (; n < text.size(); ++n) {
    const SchemaMatcher before = m;
    if (!m.advance(static_cast<uint8_t>(text[n]))) {
      EXPECT_EQ(m, before) << "a refused byte changed the matcher";
      break;
    }
  }
  if (complete) *complete = m.complete();
  return n;
}

struct Case {
  std::string text;
  size_t accepted;  // std::string::npos: all of it
  bool complete;    // after the accepted bytes
};

void expect_cases(const char* schema_name, const std::vector<Case>& cases) {
  const auto schema = schema_named(schema_name);
  ASSERT_TRUE(schema);
  for (const Case& c : cases) {
    bool complete = false;
    const size_t want = c.accepted == std::string::npos ? c.text.size() : c.accepted;
    EXPECT_EQ(accepted(*schema, c.text, &complete), want) << schema_name << ": " << c.text;
    EXPECT_EQ(complete, c.complete) << schema_name << ": " << c.text;
  }
}

constexpr size_t kAll = std::string::npos;

size_t len(std::string_view s) { return s.size(); }

TEST(SchemaMatcher, ObjectPropertiesRequiredOrderAndScalars) {
  expect_cases("person", {
      {R"({"name":"Al","age":30,"tags":["a"]})", kAll, true},
      {R"({"name":"Al","age":-30,"email":null,"tags":["a","b","c"],"status":2.5,"score":-1.5e3})", kAll, true},
      {R"( { "name" : "Al" ,  "age" : 0 , "tags" : [ "c" ] } )", len(R"( { "name" : "Al" ,  "age" : 0 , "tags" : [ "c" ] })"), true},
      {R"({"name":"Al","age":1,"email":"x@y","tags":["b"],"status":"inactive"})", kAll, true},
      {R"({"name":"Al","age":1,"tags":["b"],"status":true})", kAll, true},
      {R"({"name":"Al","age":1,"tags":["b"],"status":null})", kAll, true},
      {R"({"age":1})", 2, false},                                      // "name" comes first
      {R"({"name":"","age":1})", len(R"({"name":")"), false},          // minLength 1
      {R"({"name":"123456789"})", len(R"({"name":"12345678)"), false},  // maxLength 8
      {R"({"name":"\u00e9\n\uD83D\uDE00ab\"cd","age":1,"tags":["a"]})", kAll, true},  // 8 characters
      {R"({"name":"A","age":1.5})", len(R"({"name":"A","age":1)"), false},  // integer
      {R"({"name":"A","age":1e5})", len(R"({"name":"A","age":1)"), false},
      {R"({"name":"A","age":01})", len(R"({"name":"A","age":0)"), false},
      {R"({"name":"A","age":"1"})", len(R"({"name":"A","age":)"), false},
      {R"({"name":"A","age":1,"tags":[]})", len(R"({"name":"A","age":1,"tags":[)"), false},  // minItems
      {R"({"name":"A","age":1,"tags":["a","b","c","a"]})", len(R"({"name":"A","age":1,"tags":["a","b","c")"), false},
      {R"({"name":"A","age":1,"tags":["d"]})", len(R"({"name":"A","age":1,"tags":[")"), false},  // enum
      {R"({"name":"A","age":1,"tags":["a"],"status":2})", len(R"({"name":"A","age":1,"tags":["a"],"status":2)"), false},
      {R"({"name":"A","age":1,"tags":["a"],"status":1})", kAll, true},
      {R"({"name":"A","age":1,"tags":["a"],"status":10})", len(R"({"name":"A","age":1,"tags":["a"],"status":1)"), false},
      {R"({"name":"A","age":1,"tags":["a"],"status":"act"})", len(R"({"name":"A","age":1,"tags":["a"],"status":"act)"), false},
      {R"({"name":"A","age":1,"tags":["a"],"email":null})", len(R"({"name":"A","age":1,"tags":["a"],")"), false},  // order
      {R"({"name":"A","age":1})", len(R"({"name":"A","age":1)"), false},  // "tags" is required
      {R"({"name":"A","age":1,"tags":["a"],"zzz":1})", len(R"({"name":"A","age":1,"tags":["a"],")"), false},
      {R"({"name":"A","name":"B"})", len(R"({"name":"A",")"), false},  // each property once
      {R"({"name":"A","age":1,"tags":["a"]} )", len(R"({"name":"A","age":1,"tags":["a"]})"), true},  // nothing after
      {R"({"name":"A","age":1,"tags":["a"],"score":1.})", len(R"({"name":"A","age":1,"tags":["a"],"score":1.)"), false},
      {R"({"name":"A","age":1,"email":"","tags":["a"])", kAll, false},
  });
}

TEST(SchemaMatcher, UnionsNullableAndAllOf) {
  expect_cases("unions", {
      {R"({"x":"s","y":"one"})", kAll, true},
      {R"({"x":-12,"y":2.5e-3})", kAll, true},
      {R"({"x":null,"y":0})", kAll, true},
      {R"({"x":[true,false],"y":1})", kAll, true},
      {R"({"x":{"k":"v"},"y":1,"z":false,"w":null})", kAll, true},
      {R"({"x":1,"y":1,"w":"ab"})", kAll, true},
      {R"({"x":1,"y":1,"w":"abc"})", len(R"({"x":1,"y":1,"w":"ab)"), false},  // maxLength 2
      {R"({"x":1.5})", len(R"({"x":1)"), false},   // integer alternative
      {R"({"x":true})", len(R"({"x":)"), false},   // no boolean alternative
      {R"({"x":{"k":"w"}})", len(R"({"x":{"k":")"), false},
      {R"({"x":{}})", len(R"({"x":{)"), false},  // "k" is required
      {R"({"x":[1]})", len(R"({"x":[)"), false},
      {R"({"x":1,"y":"two"})", len(R"({"x":1,"y":")"), false},
      {R"({"x":1,"y":1,"z":null})", len(R"({"x":1,"y":1,"z":)"), false},
  });
}

TEST(SchemaMatcher, TaggedUnionsAreDecidedByTheirTag) {
  expect_cases("tagged_union", {
      {R"([{"name":"get_weather","arguments":{"city":"Paris"}}])", kAll, true},
      {R"([{"name":"get_time","arguments":{"zone":"utc"}},{"name":"get","arguments":{}},"ab"])", kAll, true},
      {R"([{"name":"get_date","arguments":{"zone":"cet"}},{"name":"get"}])", kAll, true},
      {R"([{"name":"get_weather"}])", len(R"([{"name":"get_weather")"), false},  // its arguments are required
      {R"([{"name":"get_time","arguments":{"city":"x"}}])", len(R"([{"name":"get_time","arguments":{")"), false},
      {R"([{"name":"get_weather","arguments":{"zone":"utc"}}])", len(R"([{"name":"get_weather","arguments":{")"), false},
      {R"([{"name":"get_weather","arguments":{"city":"Lisbon1"}}])", len(R"([{"name":"get_weather","arguments":{"city":"Lisbon)"), false},
      {R"([{"name":"get","arguments":{"a":1}}])", len(R"([{"name":"get","arguments":{)"), false},
      {R"([{"arguments":{}}])", len(R"([{")"), false},  // the tag comes first
      {R"([{"name":"get_x"}])", len(R"([{"name":"get_)"), false},
      {R"([{"name":1}])", len(R"([{"name":)"), false},
      {R"([])", len(R"([)"), false},  // minItems 1
  });
}

TEST(SchemaMatcher, MapsAndAnyValues) {
  expect_cases("maps", {
      {R"({"free":{"a":[1,{"b":null}],"c":"d","a":2},"counts":{"x":1,"y":-2}})", kAll, true},
      {R"({"free":{},"counts":{},"anything":[{"q":[]}, "s", 1.5, true],"list":[null,{}]})", kAll, true},
      {R"({"free":{},"counts":{"x":"1"}})", len(R"({"free":{},"counts":{"x":)"), false},
      {R"({"free":{},"counts":{"x":1.5}})", len(R"({"free":{},"counts":{"x":1)"), false},
      {R"({"free":[]})", len(R"({"free":)"), false},
  });
}

TEST(SchemaMatcher, RootArraysEnumsAndOddKeys) {
  expect_cases("root_array", {
      {R"([{"id":1},{"id":2}])", kAll, true},
      {"[]", kAll, true},
      {R"([{"id":1},{"id":2},{"id":3}])", len(R"([{"id":1},{"id":2})"), false},
      {R"([{}])", len("[{"), false},
  });
  expect_cases("root_enum", {
      {R"("x")", kAll, true},
      {R"("y\"z")", kAll, true},
      {"\"\xC3\xA9t\xC3\xA9\"", kAll, true},
      {R"("xy")", 2, false},
      {R"("y")", 2, false},
      {R"( "x")", kAll, true},
  });
  expect_cases("odd_keys", {
      {R"({"a\"b":true,"é":null,"a":""})", kAll, true},
      {R"({"a\"b":true,"a":""})", kAll, true},
      {R"({"ab":true})", len(R"({"a)"), false},
      {R"({"a\"b":true,"a":"x"})", len(R"({"a\"b":true,"a":")"), false},  // maxLength 0
      {R"({"é":null})", len(R"({")"), false},  // "a\"b" is required and first
  });
}

TEST(SchemaMatcher, RecursionIsBoundedByTheDepthLimit) {
  expect_cases("tree", {
      {R"({"value":1,"children":[{"value":2,"children":[]},{"value":3,"children":[{"value":4,"children":[]}]}]})", kAll, true},
      {R"({"value":1,"children":[{"value":2}]})", len(R"({"value":1,"children":[{"value":2)"), false},
  });
  // "next" is optional and only an object: at depth 32 it no longer fits, so that key is
  // refused; "v" (null) still fits.
  const auto linked = schema_named("linked");
  std::string text = "{";
  for (int d = 1; d < SchemaMatcher::kMaxDepth; ++d) text += "\"next\":{";
  SchemaMatcher m(*linked);
  ASSERT_TRUE(m.advance(text));
  EXPECT_EQ(m.depth(), SchemaMatcher::kMaxDepth);
  EXPECT_FALSE(m.advance("\"n"));
  EXPECT_TRUE(m.advance("\"v\":null}"));
  const std::string rest = m.completion();
  EXPECT_EQ(rest, std::string(SchemaMatcher::kMaxDepth - 1, '}'));
  EXPECT_TRUE(m.advance(rest));
  EXPECT_TRUE(m.complete());
  // A tree node takes two levels (its object and its children array): 16 nest, and a 17th
  // node (two more levels) does not fit, though its array could never be left empty-handed.
  const auto tree = schema_named("tree");
  std::string deep;
  for (int d = 0; d < 16; ++d) deep += "{\"value\":0,\"children\":[";
  EXPECT_EQ(accepted(*tree, deep + "{"), deep.size());
  SchemaMatcher t(*tree);
  ASSERT_TRUE(t.advance(deep));
  EXPECT_EQ(t.depth(), 32);
  std::string closes;
  for (int d = 0; d < 16; ++d) closes += "]}";
  EXPECT_EQ(t.completion(), closes);
}

TEST(SchemaMatcher, WhitespaceRunsAreBounded) {
  const auto schema = compile_json_schema_text(R"({"type": "object", "properties": {"a": {"type": "null"}}})");
  SchemaMatcher m(*schema, 2);
  EXPECT_TRUE(m.advance("  {  \"a\"  :  null  }"));
  SchemaMatcher n(*schema, 2);
  EXPECT_FALSE(n.advance("{   \"a\""));
  SchemaMatcher none(*schema, 0);
  EXPECT_FALSE(none.advance(" "));
  EXPECT_THROW(SchemaMatcher(*schema, 256), Error);
}

// Random walks over all 256 bytes, finished by completion(): no dead ends, refusals leave
// the state alone, and what comes out is valid under the schema.
TEST(SchemaMatcher, RandomWalksNeverDeadEndAndCompleteToValidValues) {
  std::mt19937_64 rng(7);
  for (const auto& sample : test::sample_schemas()) {
    SCOPED_TRACE(sample.name);
    const auto schema = compile_json_schema_text(sample.text);
    const test::SchemaOracle oracle(nlohmann::ordered_json::parse(sample.text));
    int num_complete_walks = 0;
    for (int walk = 0; walk < 300; ++walk) {
      SchemaMatcher m(*schema);
      std::string text;
      const int steps = static_cast<int>(rng() % 120);
      for (int step = 0; step < steps && !m.complete(); ++step) {
        std::vector<uint8_t> ok;
        for (int b = 0; b < 256; ++b) {
          SchemaMatcher copy = m;
          if (copy.advance(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
          else ASSERT_EQ(copy, m);
        }
        ASSERT_FALSE(ok.empty()) << "dead end after " << text;
        // Half the time the completion's byte, so walks also reach deep, finished states.
        const uint8_t c = rng() % 2 ? ok[rng() % ok.size()] : static_cast<uint8_t>(m.completion()[0]);
        ASSERT_TRUE(m.advance(c));
        text.push_back(static_cast<char>(c));
      }
      if (m.complete()) {
        ++num_complete_walks;
        for (int b = 0; b < 256; ++b) EXPECT_FALSE(SchemaMatcher(m).advance(static_cast<uint8_t>(b)));
      }
      const std::string rest = m.completion();
      ASSERT_TRUE(m.advance(rest)) << text << " + " << rest;
      ASSERT_TRUE(m.complete()) << text << rest;
      text += rest;
      nlohmann::json value;
      try {
        value = nlohmann::json::parse(text);
      } catch (const nlohmann::json::exception& e) {
        FAIL() << "does not parse: " << text << ": " << e.what();
      }
      EXPECT_TRUE(oracle.valid(value)) << text;
    }
    (void)num_complete_walks;
  }
}

TEST(SchemaMatcher, DefaultConstructedAcceptsNothing) {
  SchemaMatcher m;
  EXPECT_FALSE(m.advance('{'));
  EXPECT_FALSE(m.advance(' '));
}

}  // namespace
}  // namespace dspark
