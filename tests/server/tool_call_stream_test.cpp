// ToolCallStream against parse_tool_calls: for every format, the same text fed whole, split
// at every byte boundary, byte by byte and in random token-sized pieces must give the same
// content and calls, and those must be parse_tool_calls' (tool_call_stream.h says where the
// two may differ: a call that goes wrong after its first delta was sent). Also the deltas'
// OpenAI shape, what is held back and when, and that arguments arrive incrementally.
#include "server/tool_call_stream.h"

#include <random>

#include <gtest/gtest.h>

#include "server/call_ids.h"

namespace dspark {
namespace {

using nlohmann::json;

std::function<std::string()> counter() { return testing::counting_call_ids(); }

struct Call {
  std::string id, name, arguments;
  bool operator==(const Call&) const = default;
};

// What a client assembles from the deltas.
struct Assembled {
  std::string content;
  std::vector<Call> calls;
  size_t num_deltas = 0;
  bool has_calls = false;
  bool operator==(const Assembled& o) const { return content == o.content && calls == o.calls && has_calls == o.has_calls; }
};

void add_deltas(const std::vector<json>& deltas, Assembled& a) {
  for (const json& d : deltas) {
    ++a.num_deltas;
    ASSERT_EQ(d.size(), 1u) << d;  // one content piece or one call piece per delta
    if (d.contains("content")) {
      ASSERT_TRUE(d["content"].is_string()) << d;
      ASSERT_FALSE(d["content"].get<std::string>().empty()) << d;
      a.content += d["content"].get<std::string>();
      continue;
    }
    ASSERT_TRUE(d.contains("tool_calls") && d["tool_calls"].is_array() && d["tool_calls"].size() == 1) << d;
    const json& t = d["tool_calls"][0];
    if (t.contains("id")) {  // a call begins
      ASSERT_EQ(t["index"], a.calls.size()) << d;
      ASSERT_EQ(t["type"], "function") << d;
      ASSERT_TRUE(t["function"]["name"].is_string()) << d;
      ASSERT_EQ(t["function"]["arguments"], "") << d;
      a.calls.push_back({t["id"], t["function"]["name"], ""});
    } else {  // more of the last call's arguments
      ASSERT_FALSE(a.calls.empty()) << d;
      ASSERT_EQ(t["index"], a.calls.size() - 1) << d;
      ASSERT_EQ(t.size(), 2u) << d;
      ASSERT_EQ(t["function"].size(), 1u) << d;
      ASSERT_FALSE(t["function"]["arguments"].get<std::string>().empty()) << d;
      a.calls.back().arguments += t["function"]["arguments"].get<std::string>();
    }
  }
}

Assembled stream(ToolCallFormat format, const std::vector<std::string_view>& pieces) {
  ToolCallStream s(format, counter());
  Assembled a;
  for (std::string_view piece : pieces) add_deltas(s.feed(piece), a);
  add_deltas(s.finish(), a);
  a.has_calls = s.has_calls();
  return a;
}

std::vector<std::string_view> split_at(std::string_view text, const std::vector<size_t>& cuts) {
  std::vector<std::string_view> pieces;
  size_t at = 0;
  for (size_t cut : cuts) {
    pieces.push_back(text.substr(at, cut - at));
    at = cut;
  }
  pieces.push_back(text.substr(at));
  return pieces;
}

// Two arguments texts are the same call's when equal as JSON (or, not JSON, as text).
bool same_arguments(const std::string& a, const std::string& b) {
  const json ja = json::parse(a, nullptr, false), jb = json::parse(b, nullptr, false);
  if (ja.is_discarded() || jb.is_discarded()) return a == b;
  return ja == jb;
}

enum class Outcome { kAgree, kDiverged };

// Streams `text` every way and checks split invariance and agreement with parse_tool_calls.
// kDiverged: the stream began calls where the whole parse found none (the documented case).
Outcome check_text(ToolCallFormat format, const std::string& text, uint32_t seed = 1) {
  const Assembled whole = stream(format, {text});
  std::vector<std::vector<size_t>> splits;
  for (size_t i = 0; i <= text.size(); ++i) splits.push_back({i});
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  splits.push_back(every);
  std::mt19937 rng(seed);
  for (int r = 0; r < 8; ++r) {
    std::vector<size_t> cuts;
    for (size_t at = 0; (at += 1 + rng() % 7) < text.size();) cuts.push_back(at);
    splits.push_back(cuts);
  }
  for (const auto& cuts : splits) {
    const Assembled split = stream(format, split_at(text, cuts));
    EXPECT_TRUE(split == whole) << "split differs for " << json(text) << " cut " << json(cuts) << ": "
                                << json(split.content) << " vs " << json(whole.content);
    if (!(split == whole)) break;
  }
  const std::optional<ParsedToolCalls> parsed = parse_tool_calls(format, text, counter());
  if (!parsed) {
    if (whole.has_calls) return Outcome::kDiverged;
    EXPECT_EQ(whole.content, text);
    EXPECT_TRUE(whole.calls.empty());
    return Outcome::kAgree;
  }
  EXPECT_TRUE(whole.has_calls) << json(text);
  EXPECT_EQ(whole.content, parsed->content.value_or("")) << json(text);
  EXPECT_EQ(whole.calls.size(), parsed->tool_calls.size()) << json(text);
  for (size_t i = 0; i < std::min(whole.calls.size(), parsed->tool_calls.size()); ++i) {
    const json& expected = parsed->tool_calls[i]["function"];
    EXPECT_EQ(whole.calls[i].name, expected["name"]) << json(text);
    EXPECT_TRUE(same_arguments(whole.calls[i].arguments, expected["arguments"]))
        << json(text) << ": " << json(whole.calls[i].arguments) << " vs " << expected["arguments"];
  }
  return Outcome::kAgree;
}

void expect_agree(ToolCallFormat format, const std::vector<std::string>& texts) {
  for (const std::string& text : texts) EXPECT_EQ(check_text(format, text), Outcome::kAgree) << json(text);
}

TEST(ToolCallStream, HermesAgreesWithTheWholeParse) {
  expect_agree(ToolCallFormat::kHermes, {
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>{\"name\": \"now\"}</tool_call>",
      "<tool_call>{\"name\": \"f\"}",  // a reply may end without the closing tag
      "  hi \t\n <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
      " \n<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
      "<tool_call>{\"arguments\": {\"a\": [1, 2.5e3, {\"b\": null}], \"c\": \"}{][\\\"\"}, \"name\": \"f\"}</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>",  // arguments as JSON text
      "<tool_call>{\"name\": \"f\", \"arguments\": 5}</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": null, \"other\": [true, false]}</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": \"\"}</tool_call>",
      "<tool_call>{\"name\": \"caf\\u00e9\\n\", \"arguments\": {\"s\": \"\\ud83d\\ude00 é 😀 \\\\\"}}</tool_call>",
      "<tool_call>{\"name\": \"f\"}</tool_call> and text after the calls, which is dropped",
      "a<tool_call>{\"name\": \"f\"}</tool_call>b<tool_call>{\"name\": \"g\", \"arguments\": {\"x\": 1}}</tool_call>c",
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"deep\": [[[[{\"k\": [{}]}]]]]}}   \n</tool_call>",
      // Not calls: all content, as written.
      "no calls here",
      "a < b, <tool and <tool_cal l> and <tool_call",
      "  leading and trailing whitespace  \n",
      "<tool_call>{\"name\": </tool_call>",
      "<tool_call>{\"arguments\": {}}</tool_call>",
      "<tool_call>{\"name\": 3}</tool_call>",
      "<tool_call>[1]</tool_call>",
      "<tool_call>",
      "<tool_call>  ",
      "text <tool_call>{\"arguments\": {\"a\": 1}, \"name",  // cut before its name: content
      "<tool_call>{\"arguments\": {\"a\": 1}, \"nam",
      "",
  });
}

TEST(ToolCallStream, Llama3AgreesWithTheWholeParse) {
  expect_agree(ToolCallFormat::kLlama3, {
      "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}",
      "  {\"name\": \"search\", \"parameters\": {\"q\": \"x\", \"n\": [1, 2]}}  \n",
      "<|python_tag|>  \n{\"parameters\": {\"a\": 1}, \"name\": \"f\"}",
      "{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"parameters\": {\"b\": 2}}",  // "parameters" wins
      "{\"name\": \"f\", \"parameters\": {\"b\": 2}, \"arguments\": {\"a\": 1}}",
      "{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
      "{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}",
      "{\"name\": \"f\"}",
      // Not calls.
      "The answer is 4.",
      "{\"a\": 1}",
      "{\"name\": 3}",
      "{\"parameters\": {}, \"name\": \"f",
      "<|python_tag|",
      "<|pyth0n_tag|>{\"name\": \"f\"}",
      "<|python_tag|>hello",
      "[{\"name\": \"f\"}]",
      "{",
      "   ",
      "",
  });
}

TEST(ToolCallStream, MistralAgreesWithTheWholeParse) {
  expect_agree(ToolCallFormat::kMistral, {
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"k\": 1}}]",
      " [ {\"name\": \"a\"} ] \n",
      "[TOOL_CALLS] \n [{\"arguments\": {\"x\": [\"]\"]}, \"name\": \"a\"},{\"name\": \"b\"}]",
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": \"{}\"}]",
      // Not calls.
      "[1, 2]",
      "[]",
      "[ ]",
      "[TOOL",
      "[TOOL_CALLS] hello",
      "[TOOLS]",
      "Sure: [TOOL_CALLS][{\"name\": \"a\"}]",
      "[{\"arguments\": {}}]",
      "[{\"arguments\": {}}, {\"name\": \"a\"}]",
  });
}

TEST(ToolCallStream, WhereAStreamCannotTakeBackABegunCall) {
  // The whole parse calls these plain content; the stream had sent the calls' beginnings.
  const std::pair<ToolCallFormat, std::string> cases[] = {
      {ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1"},
      {ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\"}</tool_call><tool_call>{\"name\": 1}</tool_call>"},
      {ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\"} junk</tool_call>"},
      {ToolCallFormat::kLlama3, "{\"name\": \"f\", \"parameters\": {}} and then some text"},
      {ToolCallFormat::kMistral, "[{\"name\": \"a\"}, {\"name\": \"b\""},
      {ToolCallFormat::kMistral, "[{\"name\": \"a\"}"},
      {ToolCallFormat::kLlama3, "{\"name\": \"f\""},
  };
  for (const auto& [format, text] : cases) EXPECT_EQ(check_text(format, text), Outcome::kDiverged) << text;
  // What the client gets: the call as far as it went, and the rest of the reply as content.
  const Assembled llama = stream(ToolCallFormat::kLlama3, {"{\"name\": \"f\", \"parameters\": {}} and then"});
  ASSERT_EQ(llama.calls.size(), 1u);
  EXPECT_EQ(llama.calls[0].arguments, "{}");
  EXPECT_EQ(llama.content, " and then");
  const Assembled hermes =
      stream(ToolCallFormat::kHermes, {"<tool_call>{\"name\": \"f\"}</tool_call><tool_call>{\"name\": 1}"});
  ASSERT_EQ(hermes.calls.size(), 1u);
  EXPECT_EQ(hermes.content, "</tool_call><tool_call>{\"name\": 1}");
}

TEST(ToolCallStream, DeltasAndWhatIsHeldBack) {
  ToolCallStream s(ToolCallFormat::kHermes, counter());
  EXPECT_EQ(s.feed("Hello"), std::vector<json>({{{"content", "Hello"}}}));
  EXPECT_TRUE(s.feed(" \n<tool").empty());  // the whitespace and what may begin a tag wait
  EXPECT_EQ(s.feed("s> are"), std::vector<json>({{{"content", " \n<tools> are"}}}));
  EXPECT_TRUE(s.feed("\n<tool_call>\n{\"name\": \"get_").empty());
  EXPECT_EQ(s.feed("weather\", \"arguments\": {\"ci"),
            std::vector<json>({json::parse(R"({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                                               "function": {"name": "get_weather", "arguments": ""}}]})"),
                               json::parse(R"({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]})")}));
  EXPECT_EQ(s.feed("ty\": \"Paris\"}}\n</tool_call>"),
            std::vector<json>({json::parse(R"({"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Paris\"}"}}]})")}));
  EXPECT_TRUE(s.finish().empty());
  EXPECT_TRUE(s.has_calls());

  // Llama 3: the reply is held while it can still be a call, then let go as it was.
  ToolCallStream l(ToolCallFormat::kLlama3, counter());
  EXPECT_TRUE(l.feed(" {\"na").empty());
  EXPECT_TRUE(l.feed("me\": ").empty());
  EXPECT_EQ(l.feed("42, rest"), std::vector<json>({{{"content", " {\"name\": 42, rest"}}}));
  EXPECT_EQ(l.feed(" more"), std::vector<json>({{{"content", " more"}}}));
  EXPECT_TRUE(l.finish().empty());
  EXPECT_FALSE(l.has_calls());
}

TEST(ToolCallStream, ArgumentsArriveAsTheyAreWritten) {
  const std::string text =
      "<tool_call>{\"name\": \"write\", \"arguments\": {\"path\": \"a.txt\", \"lines\": [\"one\", \"two\", \"three\"]}}"
      "</tool_call>";
  ToolCallStream s(ToolCallFormat::kHermes, counter());
  size_t argument_deltas = 0;
  bool header_seen = false;
  for (size_t i = 0; i < text.size(); ++i) {
    for (const json& d : s.feed(text.substr(i, 1))) {
      if (d["tool_calls"][0].contains("id")) header_seen = true;
      else ++argument_deltas;
      // Every argument byte goes out as soon as it is read.
      if (!d["tool_calls"][0].contains("id")) {
        EXPECT_EQ(d["tool_calls"][0]["function"]["arguments"], text.substr(i, 1));
      }
    }
  }
  EXPECT_TRUE(header_seen);
  EXPECT_EQ(argument_deltas, std::string(R"({"path": "a.txt", "lines": ["one", "two", "three"]})").size());
}

// Random calls in each format: well-formed texts must agree exactly; cut or corrupted ones
// must stay split-invariant and differ from the whole parse only as documented.
std::string random_string(std::mt19937& rng) {
  static const std::vector<std::string> atoms = {"a", "Z", " ", "\\\"", "\\\\", "\\n", "\\u00e9", "é", "😀",
                                                 "{", "}", "[", "]", ",", ":", "<", ">", "<tool_call>", "/"};
  std::string s = "\"";
  for (int n = rng() % 5; n > 0; --n) s += atoms[rng() % atoms.size()];
  return s + "\"";
}

std::string space(std::mt19937& rng) {
  static const char* spaces[] = {"", "", " ", "\n", "  ", "\t", "\r\n"};
  return spaces[rng() % 7];
}

std::string random_value(std::mt19937& rng, int depth) {
  switch (rng() % (depth > 2 ? 4 : 6)) {
    case 0: return random_string(rng);
    case 1: {
      static const char* numbers[] = {"0", "-1", "3.25", "1e3", "-0.5E-2", "12345678901234567890"};
      return numbers[rng() % 6];
    }
    case 2: {
      static const char* literals[] = {"true", "false", "null"};
      return literals[rng() % 3];
    }
    case 3: return "{}";
    case 4: {
      std::string s = "[" + space(rng);
      for (int n = rng() % 3; n > 0; --n) s += random_value(rng, depth + 1) + space(rng) + (n > 1 ? "," + space(rng) : "");
      return s + "]";
    }
    default: {
      std::string s = "{" + space(rng);
      for (int n = rng() % 3; n > 0; --n) {
        s += random_string(rng) + space(rng) + ":" + space(rng) + random_value(rng, depth + 1) + (n > 1 ? "," + space(rng) : "");
      }
      return s + space(rng) + "}";
    }
  }
}

// One call object; the keys in a random order, unknown keys among them.
std::string random_call(std::mt19937& rng, const char* arguments_key) {
  std::vector<std::string> members;
  static const char* names[] = {"\"f\"", "\"get_weather\"", "\"a\\u00e9b\"", "\"x_1\""};
  members.push_back("\"name\"" + space(rng) + ":" + space(rng) + names[rng() % 4]);
  if (rng() % 5 != 0) {
    const std::string arguments = rng() % 4 == 0 ? random_value(rng, 1) : "{\"k\": " + random_value(rng, 1) + "}";
    members.push_back(std::string("\"") + arguments_key + "\":" + space(rng) + arguments);
  }
  if (rng() % 4 == 0) members.push_back("\"id\": " + random_value(rng, 1));
  std::shuffle(members.begin(), members.end(), rng);
  std::string s = "{" + space(rng);
  for (size_t i = 0; i < members.size(); ++i) {
    if (i) s += ",";
    s += space(rng) + members[i];
  }
  return s + space(rng) + "}";
}

std::string random_reply(ToolCallFormat format, std::mt19937& rng) {
  static const char* prose[] = {"", "", "Let me look.", "  ok <tool ", "a < b\n", "<tool_call"};
  switch (format) {
    case ToolCallFormat::kHermes: {
      std::string s = std::string(prose[rng() % 6]) + space(rng);
      for (int n = 1 + rng() % 3; n > 0; --n) {
        s += "<tool_call>" + space(rng) + random_call(rng, "arguments") + space(rng);
        if (n > 1 || rng() % 3 != 0) s += "</tool_call>" + space(rng) + (rng() % 3 == 0 ? "between" : "");
      }
      return s;
    }
    case ToolCallFormat::kLlama3:
      return space(rng) + (rng() % 2 ? "<|python_tag|>" + space(rng) : "") + random_call(rng, "parameters") + space(rng);
    default: {
      std::string s = space(rng) + (rng() % 2 ? "[TOOL_CALLS]" + space(rng) : "") + "[" + space(rng);
      for (int n = 1 + rng() % 3; n > 0; --n) s += random_call(rng, "arguments") + space(rng) + (n > 1 ? "," + space(rng) : "");
      return s + "]" + space(rng);
    }
  }
}

// tool_choice naming a function: the whole reply is its arguments; the header goes out
// with the first piece (even an empty one) and each piece of text as more arguments, the
// same call parse_tool_calls makes of the whole reply.
TEST(ToolCallStream, ForcedFunctionSendsTheReplyAsItsArguments) {
  const std::string text = R"({"city": "Paris", "days": 2})";
  for (const auto& cuts : {std::vector<size_t>{}, std::vector<size_t>{0, 1, 9, 20}}) {
    ToolCallStream s(ToolCallFormat::kForcedFunction, counter(), "get_weather");
    Assembled a;
    const std::vector<std::string_view> pieces = split_at(text, cuts);
    add_deltas(s.feed(pieces[0]), a);
    ASSERT_EQ(a.calls.size(), 1u);  // the header at once
    for (size_t i = 1; i < pieces.size(); ++i) add_deltas(s.feed(pieces[i]), a);
    add_deltas(s.finish(), a);
    EXPECT_TRUE(s.has_calls());
    EXPECT_EQ(a.content, "");
    ASSERT_EQ(a.calls.size(), 1u);
    EXPECT_EQ(a.calls[0], (Call{"call_0", "get_weather", text}));
    const std::optional<ParsedToolCalls> parsed =
        parse_tool_calls(ToolCallFormat::kForcedFunction, text, counter(), "get_weather");
    ASSERT_TRUE(parsed);
    EXPECT_FALSE(parsed->content);
    EXPECT_EQ(parsed->tool_calls[0]["function"]["name"], "get_weather");
    EXPECT_EQ(parsed->tool_calls[0]["function"]["arguments"], text);
  }
  // A reply that sent no text still made its call.
  ToolCallStream empty(ToolCallFormat::kForcedFunction, counter(), "now");
  Assembled a;
  add_deltas(empty.finish(), a);
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.calls[0], (Call{"call_0", "now", ""}));
}

TEST(ToolCallStream, RandomRepliesInEveryFormat) {
  for (const ToolCallFormat format : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral}) {
    std::mt19937 rng(7 + static_cast<int>(format));
    int agreed = 0, diverged = 0;
    for (int i = 0; i < 150; ++i) {
      const std::string text = random_reply(format, rng);
      ASSERT_TRUE(parse_tool_calls(format, text, counter())) << json(text);  // well-formed by construction
      ASSERT_EQ(check_text(format, text, i), Outcome::kAgree) << json(text);
      if (::testing::Test::HasFailure()) return;
      // Cut or corrupted: split-invariant, and different from the whole parse only where
      // the stream had begun a call (check_text's kDiverged).
      std::string broken = text.substr(0, rng() % (text.size() + 1));
      if (rng() % 2 && !broken.empty()) broken.insert(rng() % broken.size(), 1, "x}\"],: {"[rng() % 8]);
      (check_text(format, broken, i) == Outcome::kAgree ? agreed : diverged) += 1;
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(agreed, 0);
    EXPECT_GT(diverged, 0);
  }
}

}  // namespace
}  // namespace dspark
