// tool_choice: the forms that force a call become a JSON schema the reply follows (a named
// function's parameters; for "required", a list of {"name", "arguments"} calls, each object
// decided by its name), checked here with the matcher the engine constrains with; and every
// bad choice or tool a forced call cannot use is a 400 naming the field.
#include "server/tool_choice.h"

#include <gtest/gtest.h>

#include "server/openai_protocol.h"
#include "structured/schema_matcher.h"

namespace dspark {
namespace {

using nlohmann::ordered_json;

// Two tools; "locate" keeps its argument's schema under $defs (refs must still resolve
// once the tool sits inside the list schema).
const ordered_json kTools = ordered_json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "d",
   "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}, "days": {"type": "integer"}},
                  "required": ["city"]}}},
  {"type": "function", "function": {"name": "locate",
   "parameters": {"type": "object", "properties": {"place": {"$ref": "#/$defs/place"}}, "required": ["place"],
                  "$defs": {"place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"],
                                      "additionalProperties": false}}}}},
  {"type": "function", "function": {"name": "now"}}])");

ParsedToolChoice parse(const std::string& choice, const ordered_json& tools = kTools) {
  const ordered_json c = ordered_json::parse(choice);
  return parse_tool_choice(&c, tools);
}

bool follows(const ParsedToolChoice& c, const std::string& text) {
  SchemaMatcher m(*c.schema);
  return m.advance(text) && m.complete();
}

TEST(ToolChoice, AutoAndNoneForceNothing) {
  EXPECT_EQ(parse_tool_choice(nullptr, kTools).choice, ToolChoice::kAuto);
  EXPECT_EQ(parse(R"("auto")").choice, ToolChoice::kAuto);
  EXPECT_EQ(parse(R"(null)").choice, ToolChoice::kAuto);
  EXPECT_EQ(parse(R"("none")").choice, ToolChoice::kNone);
  EXPECT_FALSE(parse(R"("none")").schema);
  EXPECT_FALSE(parse(R"("auto")", nullptr).schema);  // auto needs no tools
}

TEST(ToolChoice, ANamedFunctionsReplyIsItsArguments) {
  const ParsedToolChoice weather = parse(R"({"type": "function", "function": {"name": "get_weather"}})");
  EXPECT_EQ(weather.choice, ToolChoice::kFunction);
  EXPECT_EQ(weather.function, "get_weather");
  ASSERT_TRUE(weather.schema);
  EXPECT_TRUE(follows(weather, R"({"city": "Rome", "days": 3})"));
  EXPECT_FALSE(follows(weather, R"({"city": "Oslo"})"));
  EXPECT_FALSE(follows(weather, R"({"place": {"lat": 1}})"));
  const ParsedToolChoice locate = parse(R"({"type": "function", "function": {"name": "locate"}})");
  EXPECT_TRUE(follows(locate, R"({"place": {"lat": 48.8}})"));
  EXPECT_FALSE(follows(locate, R"({"place": {"lon": 2}})"));
  // A function without parameters takes none.
  const ParsedToolChoice now = parse(R"({"type": "function", "function": {"name": "now"}})");
  EXPECT_TRUE(follows(now, "{}"));
  EXPECT_FALSE(follows(now, R"({"a": 1})"));
}

TEST(ToolChoice, RequiredIsAListOfCallsEachFollowingItsTool) {
  const ParsedToolChoice c = parse(R"("required")");
  EXPECT_EQ(c.choice, ToolChoice::kRequired);
  ASSERT_TRUE(c.schema);
  EXPECT_TRUE(follows(c, R"([{"name": "get_weather", "arguments": {"city": "Paris"}}])"));
  EXPECT_TRUE(follows(c, R"([{"name": "locate", "arguments": {"place": {"lat": -1.5}}},)"
                         R"( {"name": "now", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}])"));
  EXPECT_FALSE(follows(c, "[]"));  // at least one call
  EXPECT_FALSE(follows(c, R"([{"name": "get_weather", "arguments": {"place": {"lat": 1}}}])"));  // another tool's
  EXPECT_FALSE(follows(c, R"([{"name": "locate", "arguments": {"place": {"lon": 1}}}])"));       // its $defs apply
  EXPECT_FALSE(follows(c, R"([{"name": "get_time", "arguments": {}}])"));                        // no such tool
  EXPECT_FALSE(follows(c, R"([{"arguments": {}, "name": "now"}])"));                             // name first
  EXPECT_FALSE(follows(c, R"([{"name": "now"}])"));                                              // arguments required
  EXPECT_FALSE(follows(c, R"({"name": "now", "arguments": {}})"));                               // a list
  // parallel_tool_calls false: one call.
  const ordered_json required = "required";
  const ParsedToolChoice single = parse_tool_choice(&required, kTools, /*parallel_calls=*/false);
  EXPECT_TRUE(follows(single, R"([{"name": "now", "arguments": {}}])"));
  EXPECT_FALSE(follows(single, R"([{"name": "now", "arguments": {}}, {"name": "now", "arguments": {}}])"));
  // One tool: no union needed.
  const ParsedToolChoice one = parse(R"("required")", ordered_json::array({kTools[2]}));
  EXPECT_TRUE(follows(one, R"([{"name": "now", "arguments": {}}, {"name": "now", "arguments": {}}])"));
}

TEST(ToolChoice, BadChoicesAndToolsAre400NamingTheField) {
  struct Bad {
    const char* choice;
    const char* tools;  // JSON, or nullptr for kTools
    const char* param;
    const char* words;  // in the message
  };
  const Bad cases[] = {
      {R"(5)", nullptr, "tool_choice", "\"required\""},
      {R"("always")", nullptr, "tool_choice", "\"always\""},
      {R"({"type": "function"})", nullptr, "tool_choice", "\"name\""},
      {R"({"type": "tool", "function": {"name": "now"}})", nullptr, "tool_choice", "\"type\": \"function\""},
      {R"({"type": "function", "function": {"name": 3}})", nullptr, "tool_choice", "\"name\""},
      {R"({"type": "function", "function": {"name": "fly"}})", nullptr, "tool_choice", "\"fly\", which is not in 'tools'"},
      {R"("required")", "null", "tool_choice", "needs 'tools'"},
      {R"("required")", "[]", "tool_choice", "needs 'tools'"},
      {R"("required")", R"([{"type": "function"}])", "tools[0].function", "must be an object"},
      {R"("required")", R"([{"type": "retrieval", "function": {"name": "f"}}])", "tools[0].type", "retrieval"},
      {R"("required")", R"([{"function": {"name": ""}}])", "tools[0].function.name", "non-empty"},
      {R"("required")", R"([{"function": {"name": "f"}}, {"function": {"name": "f"}}])", "tools[1].function.name",
       "names two tools"},
      {R"("required")", R"([{"function": {"name": "f", "parameters": {"properties": {"x": {"pattern": "a"}}}}}])",
       "tools[0].function.parameters", "'pattern' is not supported"},
      {R"({"type": "function", "function": {"name": "f"}})",
       R"([{"function": {"name": "f", "parameters": {"type": "object", "properties": {"d": {"format": "date"}}}}}])",
       "tools[0].function.parameters", "/properties/d/format"},
  };
  for (const Bad& b : cases) {
    const ordered_json tools = b.tools ? ordered_json::parse(b.tools) : kTools;
    try {
      parse(b.choice, tools);
      ADD_FAILURE() << "accepted: " << b.choice << " with " << tools.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << b.choice;
      EXPECT_EQ(e.param(), b.param) << b.choice << ": " << e.message();
      EXPECT_NE(e.message().find(b.words), std::string::npos) << b.words << " in: " << e.message();
    }
  }
}

// Through the request parser: a forced call constrains the reply (json_schema), keeps the
// tools for the template and names the function.
TEST(ToolChoice, ParsedRequestsCarryTheForcedCall) {
  ordered_json body = {{"messages", {{{"role", "user"}, {"content", "weather?"}}}},
                       {"tools", kTools},
                       {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}};
  const ParsedRequest named = parse_request(body.dump(), Endpoint::kChat);
  EXPECT_EQ(named.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(named.forced_function, "get_weather");
  EXPECT_EQ(named.options.response_format, ResponseFormat::kJsonSchema);
  ASSERT_TRUE(named.options.json_schema);
  EXPECT_EQ(named.chat.tools.size(), kTools.size());
  body["tool_choice"] = "required";
  const ParsedRequest required = parse_request(body.dump(), Endpoint::kChat);
  EXPECT_EQ(required.tool_choice, ToolChoice::kRequired);
  EXPECT_EQ(required.options.response_format, ResponseFormat::kJsonSchema);
  body["tool_choice"] = "auto";
  EXPECT_EQ(parse_request(body.dump(), Endpoint::kChat).options.response_format, ResponseFormat::kText);
}

}  // namespace
}  // namespace dspark
