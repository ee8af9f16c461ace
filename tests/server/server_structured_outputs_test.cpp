// vLLM's structured outputs through the server with a real (tiny) model: a regex, a choice,
// a grammar or a JSON Schema holds whatever the model would write, whole and streamed, on both
// endpoints, greedy and sampled; greedy replies are the same with and without speculation;
// and every malformed or unsupported constraint is a 400 naming its field.
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "server/test_server.h"
#include "structured/gbnf_grammar.h"
#include "structured/regex_dfa.h"

namespace dspark {
namespace {

using nlohmann::json;
using testing::TestServer;
using testing::TestServerOptions;
using testing::http_post;
using testing::http_stream;

// Bounded, so that every reply ends in a full match well before max_tokens.
constexpr const char* kPattern = R"(\d{3}-[a-z]{2,4}( [A-Z][a-z]{0,6})?\.)";

json completion(const json& extra) {
  json body = {{"model", "stories"}, {"prompt", "Once upon a time, there was a"}, {"max_tokens", 40},
               {"temperature", 0}};
  body.update(extra);
  return body;
}

json chat(const json& extra) {
  json body = {{"model", "stories"}, {"messages", json::array({{{"role", "user"}, {"content", "Tell me a story."}}})},
               {"max_tokens", 40}, {"temperature", 0}};
  body.update(extra);
  return body;
}

struct Reply {
  std::string text;
  std::string finish;
};

Reply post(int port, const std::string& path, const json& body) {
  const auto r = http_post(port, path, body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return {};
  const json& choice = r.json["choices"][0];
  const json& text = path == "/v1/completions" ? choice["text"] : choice["message"]["content"];
  return {text.get<std::string>(), choice["finish_reason"].get<std::string>()};
}

TEST(ServerStructuredOutputs, ARegexHoldsWholeAndStreamedOnBothEndpoints) {
  TestServer server;
  const std::regex full(kPattern);
  for (const json& constraint :
       {json{{"structured_outputs", {{"regex", kPattern}}}}, json{{"guided_regex", kPattern}}}) {
    for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
      SCOPED_TRACE(constraint.dump() + " " + path);
      const json body = path == "/v1/completions" ? completion(constraint) : chat(constraint);
      const Reply whole = post(server.port(), path, body);
      EXPECT_TRUE(std::regex_match(whole.text, full)) << whole.text;
      EXPECT_EQ(whole.finish, "stop");
      json streamed_body = body;
      streamed_body["stream"] = true;
      const auto streamed = http_stream(server.port(), path, streamed_body.dump());
      ASSERT_TRUE(streamed.done);
      EXPECT_EQ(streamed.text, whole.text);
      EXPECT_EQ(streamed.finish_reason, "stop");
    }
  }
}

// The same pattern's language as a grammar, under vLLM's two fields and llama.cpp's.
constexpr const char* kGrammar =
    "root ::= [0-9]{3} \"-\" word (\" \" name)? \".\"\nword ::= [a-z]{2,4}\nname ::= [A-Z] [a-z]{0,6}";

TEST(ServerStructuredOutputs, AGrammarHoldsWholeAndStreamedOnBothEndpoints) {
  TestServer server;
  const std::regex full(kPattern);
  const auto grammar = CompiledGrammar::compile(kGrammar);
  for (const json& constraint : {json{{"structured_outputs", {{"grammar", kGrammar}}}},
                                 json{{"guided_grammar", kGrammar}}, json{{"grammar", kGrammar}}}) {
    for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
      SCOPED_TRACE(constraint.dump() + " " + path);
      const json body = path == "/v1/completions" ? completion(constraint) : chat(constraint);
      const Reply whole = post(server.port(), path, body);
      EXPECT_TRUE(std::regex_match(whole.text, full)) << whole.text;
      GrammarMatcher m(*grammar);
      EXPECT_TRUE(m.advance(whole.text) && m.complete()) << whole.text;
      EXPECT_EQ(whole.finish, "stop");
      // The regex of the same language gives the same greedy reply.
      const json same = {{"guided_regex", kPattern}};
      EXPECT_EQ(post(server.port(), path, path == "/v1/completions" ? completion(same) : chat(same)).text,
                whole.text);
      json streamed_body = body;
      streamed_body["stream"] = true;
      const auto streamed = http_stream(server.port(), path, streamed_body.dump());
      ASSERT_TRUE(streamed.done);
      EXPECT_EQ(streamed.text, whole.text);
      EXPECT_EQ(streamed.finish_reason, "stop");
    }
  }
}

TEST(ServerStructuredOutputs, ChoicesAreOneOfTheirStringsWhenSampled) {
  TestServer server;
  const std::vector<std::string> options = {"Paris", "Rome", "New York", "a cat"};
  std::set<std::string> seen;
  for (int seed = 0; seed < 12; ++seed) {
    const json constraint = seed % 2 ? json{{"guided_choice", options}}
                                     : json{{"structured_outputs", {{"choice", options}}}};
    json body = completion(constraint);
    body["temperature"] = 1.0;
    body["seed"] = seed;
    const Reply r = post(server.port(), "/v1/completions", body);
    EXPECT_NE(std::find(options.begin(), options.end(), r.text), options.end()) << r.text;
    EXPECT_EQ(r.finish, "stop");
    seen.insert(r.text);
  }
  EXPECT_GE(seen.size(), 2u);  // sampled among the choices, not one forced answer
}

TEST(ServerStructuredOutputs, JsonSchemasAsObjectsOrTextAndJsonObjects) {
  TestServer server;
  const json schema = {{"type", "object"},
                       {"properties", {{"name", {{"type", "string"}, {"maxLength", 8}}},
                                       {"alive", {{"type", "boolean"}}}}},
                       {"required", {"name", "alive"}}, {"additionalProperties", false}};
  for (const json& constraint : {json{{"structured_outputs", {{"json", schema}}}}, json{{"guided_json", schema}},
                                 json{{"guided_json", schema.dump()}}}) {
    SCOPED_TRACE(constraint.dump());
    json body = completion(constraint);
    body["max_tokens"] = 400;
    const Reply r = post(server.port(), "/v1/completions", body);
    const json value = json::parse(r.text, nullptr, false);
    ASSERT_TRUE(value.is_object()) << r.text;
    EXPECT_EQ(value.size(), 2u) << r.text;
    EXPECT_TRUE(value["name"].is_string() && value["alive"].is_boolean()) << r.text;
    EXPECT_EQ(r.finish, "stop");
  }
  json body = completion({{"structured_outputs", {{"json_object", true}}}});
  body["max_tokens"] = 400;
  const Reply object = post(server.port(), "/v1/completions", body);
  if (object.finish == "stop") {
    EXPECT_TRUE(json::parse(object.text, nullptr, false).is_object()) << object.text;
  }
  const size_t first = object.text.find_first_not_of(" \t\r\n");
  ASSERT_NE(first, std::string::npos) << object.text;
  EXPECT_EQ(object.text[first], '{') << object.text;
}

TEST(ServerStructuredOutputs, GreedyRepliesAreTheSameWithSpeculation) {
  TestServer plain;
  TestServerOptions o;
  o.speculator = "ngram";
  TestServer speculating(o);
  for (const json& constraint : {json{{"guided_regex", kPattern}},
                                 json{{"guided_regex", R"((the|a|an) [a-z ]{1,30}\.)"}},
                                 json{{"guided_choice", {"once upon a time", "once", "a little girl"}}},
                                 json{{"guided_grammar", kGrammar}},
                                 json{{"grammar", "root ::= (\"the\" | \"a\") (\" \" [a-z]+){1,6} \".\""}}}) {
    SCOPED_TRACE(constraint.dump());
    const Reply a = post(plain.port(), "/v1/completions", completion(constraint));
    const Reply b = post(speculating.port(), "/v1/completions", completion(constraint));
    EXPECT_EQ(a.text, b.text);
    EXPECT_EQ(a.finish, b.finish);
  }
  // The n-gram speculator copies earlier text: what the regex refuses is cut, and counted.
  EXPECT_TRUE(testing::server_metric(speculating.port(), "dspark:spec_decode_grammar_cut_draft_tokens").has_value());
}

TEST(ServerStructuredOutputs, BadOrUnsupportedConstraintsAre400sNamingTheirField) {
  TestServer server;
  struct Case {
    json extra;
    std::string param;
    std::string words;
  };
  const std::vector<Case> cases = {
      {{{"guided_regex", 5}}, "guided_regex", "must be a string"},
      {{{"structured_outputs", {{"regex", "(ab"}}}}, "structured_outputs.regex", "an unclosed '(' at byte 0"},
      {{{"guided_regex", R"((a)\1)"}}, "guided_regex", "unsupported escape"},
      {{{"guided_regex", "a{0}"}}, "guided_regex", "matches only the empty string"},
      {{{"guided_choice", json::array()}}, "guided_choice", "a non-empty list of strings"},
      {{{"guided_choice", {"a", 3}}}, "guided_choice", "non-empty strings"},
      {{{"guided_choice", {"a", ""}}}, "guided_choice", "non-empty strings"},
      {{{"guided_json", "{not json"}}, "guided_json", "not a JSON Schema's JSON text"},
      {{{"guided_json", {{"type", "object"}, {"properties", {{"d", {{"type", "string"}, {"format", "date"}}}}}}}},
       "guided_json", "'format' is not supported"},
      {{{"structured_outputs", {{"json_object", "yes"}}}}, "structured_outputs.json_object", "must be a boolean"},
      {{{"structured_outputs", 1}}, "structured_outputs", "must be an object"},
      {{{"structured_outputs", json::object()}}, "structured_outputs", "needs one of"},
      {{{"guided_regex", "a+"}, {"guided_choice", {"a"}}}, "guided_choice", "both constrain the output"},
      {{{"guided_regex", "a+"}, {"response_format", {{"type", "json_object"}}}}, "guided_regex",
       "cannot be combined with 'response_format'"},
      {{{"guided_grammar", 3}}, "guided_grammar", "must be a string (a grammar in GBNF)"},
      {{{"structured_outputs", {{"grammar", "start: \"a\""}}}}, "structured_outputs.grammar",
       "expected '::=' after the rule name 'start' at line 1 column 6"},
      {{{"grammar", "root ::= root \"a\" | \"b\""}}, "grammar", "left-recursive"},
      {{{"grammar", "root ::= item"}}, "grammar", "rule 'item' is used but not defined"},
      {{{"guided_grammar", "root ::= \"a\""}, {"guided_regex", "a"}}, "guided_grammar", "both constrain the output"},
      {{{"structured_outputs", {{"structural_tag", "{}"}}}}, "structured_outputs.structural_tag", "is not supported"},
      {{{"structured_outputs", {{"regex", "a+"}, {"disable_any_whitespace", true}}}},
       "structured_outputs.disable_any_whitespace", "is not supported"},
  };
  for (const Case& c : cases) {
    const auto r = http_post(server.port(), "/v1/completions", completion(c.extra).dump());
    ASSERT_EQ(r.status, 400) << c.extra.dump() << ": " << r.body;
    EXPECT_EQ(r.json["error"]["param"], c.param) << r.body;
    EXPECT_NE(r.json["error"]["message"].get<std::string>().find(c.words), std::string::npos) << r.body;
  }
  // The engine's own checks: a regex output ends where its grammar says.
  for (const json& extra :
       {json{{"guided_regex", "a+"}, {"ignore_eos", true}}, json{{"guided_regex", "a+"}, {"min_tokens", 2}},
        json{{"grammar", "root ::= \"a\"+"}, {"ignore_eos", true}}}) {
    const auto r = http_post(server.port(), "/v1/completions", completion(extra).dump());
    EXPECT_EQ(r.status, 400) << extra.dump() << ": " << r.body;
  }
  // Nothing leaked: the server still answers.
  EXPECT_EQ(http_post(server.port(), "/v1/completions", completion({{"guided_regex", "a+"}}).dump()).status, 200);
}

}  // namespace
}  // namespace dspark
