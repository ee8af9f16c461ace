// `dspark generate --regex / --choice / --grammar / --json-schema / --json-object`, as a user
// types them, on stories260K: the output follows the constraint, sampled or greedy; a bad
// pattern or grammar, an unreadable file or two constraints at once are one clear line.
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/command_run.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

const std::string kStories = std::string(DSPARK_SHARED_DIR) + "/data/models/stories260K-hf";

// args: the command's options after --model and --prompt (--max-tokens defaults to 128).
testing::CommandRun generate(const std::string& args, bool with_stderr = false) {
  return testing::run_command(std::string(DSPARK_CLI) + " generate --model " + kStories +
                              " --prompt Once " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

TEST(OutputFormatOptions, TheOutputFollowsTheConstraint) {
  const std::string pattern = R"([A-Z][a-z]+ (upon|in) a [a-z]+\.)";
  const testing::CommandRun greedy = generate("--temperature 0 --regex '" + pattern + "'");
  ASSERT_EQ(greedy.status, 0);
  EXPECT_TRUE(std::regex_match(greedy.out, std::regex(pattern + "\n"))) << greedy.out;
  for (int seed = 0; seed < 4; ++seed) {
    const testing::CommandRun sampled = generate("--temperature 1 --seed " + std::to_string(seed) +
                                                 " --choice 'a red fox' --choice 'a dog' --choice no");
    EXPECT_TRUE(sampled.out == "a red fox\n" || sampled.out == "a dog\n" || sampled.out == "no\n") << sampled.out;
  }
  const auto dir = testing::make_temp_dir("output-format-schema");
  std::ofstream(dir / "schema.json")
      << R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],)"
      << R"( "additionalProperties": false})";
  const testing::CommandRun schema = generate("--temperature 0 --json-schema " + (dir / "schema.json").string());
  const nlohmann::json value = nlohmann::json::parse(schema.out, nullptr, false);
  ASSERT_TRUE(value.is_object()) << schema.out;
  EXPECT_TRUE(value.size() == 1 && value["ok"].is_boolean()) << schema.out;
  std::ofstream(dir / "story.gbnf") << "# a sentence, then a count\nroot ::= sentence \" \" [0-9]{1,3}\n"
                                    << "sentence ::= [A-Z] [a-z]* (\" \" [a-z]+){2,8} \".\"\n";
  const testing::CommandRun grammar = generate("--temperature 0 --grammar " + (dir / "story.gbnf").string());
  EXPECT_TRUE(std::regex_match(grammar.out, std::regex(R"([A-Z][a-z]*( [a-z]+){2,8}\. [0-9]{1,3}\n)"))) << grammar.out;
  const testing::CommandRun object = generate("--temperature 0 --max-tokens 400 --json-object");
  EXPECT_NE(object.out.find('{'), std::string::npos) << object.out;
}

TEST(OutputFormatOptions, BadValuesAreOneClearLine) {
  const auto dir = testing::make_temp_dir("output-format-bad");
  std::ofstream(dir / "a.gbnf") << "root ::= \"a\"\n";
  const std::string both = "--grammar " + (dir / "a.gbnf").string() + " --regex a";
  testing::expect_refused([](const std::string& args) { return generate(args, true); },
                          {
                              {"--regex '(ab'", "--regex: an unclosed '(' at byte 0"},
                              {"--regex 'a{0}'", "--regex: matches only the empty string"},
                              {"--choice a --choice ''", "--choice: an empty string is not a choice"},
                              {"--regex a --choice b", "--regex excludes --choice"},
                              {"--json-object --regex a", "excludes"},
                              {"--json-schema /nonexistent.json", "--json-schema: cannot read /nonexistent.json"},
                              {"--regex a --min-tokens 2", "min_tokens cannot be combined with a constrained output"},
                              {"--regex a --ignore-eos",
                               "ignore_eos cannot be combined with a regex, choice or grammar"},
                              {"--grammar /nonexistent.gbnf", "--grammar: cannot read /nonexistent.gbnf"},
                              {"--grammar /dev/null", "--grammar: no rule 'root'"},
                              {both.c_str(), "--regex excludes --grammar"},
                          });
}

}  // namespace
}  // namespace dspark
