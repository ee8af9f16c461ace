// The chat templates of eight published models render every reference case of
// shared/data/chat_templates/cases.jsonl byte for byte as Jinja2 3.1 does under Hugging
// Face's apply_chat_template, and the cases where the template rejects the conversation
// raise exactly the template's message.
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/jinja_template.h"

namespace dspark::jinja {
namespace {

const std::string kDir = DSPARK_SHARED_DIR "/data/chat_templates/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct Case {
  int line = 0;
  nlohmann::ordered_json json;
};

std::vector<Case> load_cases() {
  std::ifstream in(kDir + "cases.jsonl");
  std::vector<Case> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (!line.empty()) cases.push_back({n, nlohmann::ordered_json::parse(line)});
  return cases;
}

// Where two renderings first differ, with some context either side, escaped so that
// whitespace differences are visible.
std::string first_difference(const std::string& expected, const std::string& actual) {
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  auto window = [&](const std::string& s) {
    size_t begin = i > 40 ? i - 40 : 0;
    return nlohmann::json(s.substr(begin, 80)).dump();
  };
  return "first difference at byte " + std::to_string(i) + " (expected " + std::to_string(expected.size()) +
         " bytes, got " + std::to_string(actual.size()) + ")\n  expected: " + window(expected) +
         "\n  actual:   " + window(actual);
}

TEST(ChatTemplateCases, EveryCaseRendersLikeJinja2) {
  std::vector<Case> cases = load_cases();
  ASSERT_EQ(cases.size(), 70u);
  std::map<std::string, Template> templates;
  int passed = 0;
  for (const Case& c : cases) {
    const std::string file = c.json.at("template").get<std::string>();
    if (!templates.count(file)) templates.emplace(file, Template::parse(read_file(kDir + file), file));
    const Template& tmpl = templates.at(file);
    const std::string label = "cases.jsonl:" + std::to_string(c.line) + " " + file + " [" +
                              c.json.value("conversation", "") + "]";
    if (c.json.contains("expected_error")) {
      const std::string expected = c.json.at("expected_error").get<std::string>();
      try {
        std::string out = tmpl.render(c.json.at("context"));
        ADD_FAILURE() << label << ": expected TemplateRaisedError \"" << expected << "\", rendered " << out.size()
                      << " bytes";
      } catch (const TemplateRaisedError& e) {
        EXPECT_EQ(std::string(e.what()), expected) << label;
        passed += std::string(e.what()) == expected;
      } catch (const std::exception& e) {
        ADD_FAILURE() << label << ": expected TemplateRaisedError, got: " << e.what();
      }
      continue;
    }
    const std::string expected = c.json.at("expected").get<std::string>();
    try {
      std::string actual = tmpl.render(c.json.at("context"));
      if (actual == expected) ++passed;
      else ADD_FAILURE() << label << ": " << first_difference(expected, actual);
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << ": threw " << e.what();
    }
  }
  EXPECT_EQ(passed, 70);
  std::printf("%d of %zu cases match\n", passed, cases.size());
}

// A chat template renders in well under a millisecond (measured ~0.1 ms; the bound is
// loose because these machines are shared and noisy).
TEST(ChatTemplateCases, RenderingIsFast) {
  std::vector<Case> cases = load_cases();
  std::map<std::string, Template> templates;
  for (const Case& c : cases) {
    const std::string file = c.json.at("template").get<std::string>();
    if (!templates.count(file)) templates.emplace(file, Template::parse(read_file(kDir + file), file));
  }
  constexpr int kRounds = 20;
  int64_t renders = 0;
  auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < kRounds; ++round) {
    for (const Case& c : cases) {
      if (c.json.contains("expected_error")) continue;
      renders += !templates.at(c.json.at("template").get<std::string>()).render(c.json.at("context")).empty();
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double ms_per_render = 1e3 * seconds / static_cast<double>(renders);
  std::printf("%.3f ms per render (context conversion included)\n", ms_per_render);
  EXPECT_LT(ms_per_render, 1.0);
}

}  // namespace
}  // namespace dspark::jinja
