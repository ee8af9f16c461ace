#include "loadgen/dataset.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark {
namespace {

std::string question(const std::string& text) { return "Question: " + text + "\nAnswer:"; }

// Domain for records that carry none: the file name up to its first '_' or '.'
// ("gsm8k_test.jsonl" -> "gsm8k").
std::string domain_from_path(const std::filesystem::path& path) {
  const std::string stem = path.filename().string();
  return stem.substr(0, stem.find_first_of("_."));
}

std::string id_of(const nlohmann::json& r, const char* key, int64_t line) {
  if (!r.contains(key)) return std::to_string(line);
  return r[key].is_string() ? r[key].get<std::string>() : r[key].dump();
}

// Calls on_record(record, line number) for each non-blank line of a JSONL file, until it
// returns false. Throws Error naming the file and line for malformed JSON or a non-object.
template <typename OnRecord>
void for_each_record(const std::filesystem::path& path, OnRecord on_record) {
  std::ifstream in(path);
  DSPARK_CHECK(in.good(), "cannot read dataset {}", path.string());
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json r;
    try {
      r = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      DSPARK_FAIL("{}:{}: malformed JSON: {}", path.string(), line_no, e.what());
    }
    DSPARK_CHECK(r.is_object(), "{}:{}: expected a JSON object per line", path.string(), line_no);
    if (!on_record(r, line_no)) break;
  }
}

}  // namespace

std::vector<DatasetPrompt> load_dataset(const std::filesystem::path& path, int64_t limit) {
  const std::string file_domain = domain_from_path(path);
  std::vector<DatasetPrompt> out;
  for_each_record(path, [&](const nlohmann::json& r, int64_t line_no) {
    DatasetPrompt p;
    if (r.contains("question") && r.contains("answer")) {  // GSM8K
      p = {file_domain, id_of(r, "id", line_no), question(r["question"].get<std::string>())};
    } else if (r.contains("task_id") && r.contains("prompt")) {  // HumanEval
      p = {file_domain, id_of(r, "task_id", line_no), r["prompt"].get<std::string>()};
    } else if (r.contains("task_id") && r.contains("text") && r.contains("code")) {  // MBPP
      const int64_t task = r["task_id"].get<int64_t>();
      if (task < 11 || task > 510) return true;  // only the test split is for measurement
      p = {file_domain, std::to_string(task), "# " + r["text"].get<std::string>() + "\n"};
    } else if (r.contains("turns")) {  // MT-bench, Spec-Bench, AIME
      DSPARK_CHECK(r["turns"].is_array() && !r["turns"].empty(), "{}:{}: 'turns' must be a non-empty list",
                   path.string(), line_no);
      const std::string domain = r.contains("category") ? r["category"].get<std::string>() : file_domain;
      p = {domain, id_of(r, "question_id", line_no), question(r["turns"][0].get<std::string>())};
    } else if (r.contains("problem")) {  // MATH-500
      p = {file_domain, id_of(r, "unique_id", line_no), question(r["problem"].get<std::string>())};
    } else {
      DSPARK_FAIL("{}:{}: unrecognised record (expected GSM8K, HumanEval, MBPP, MT-bench/Spec-Bench or MATH fields)",
                  path.string(), line_no);
    }
    out.push_back(std::move(p));
    return limit <= 0 || static_cast<int64_t>(out.size()) < limit;
  });
  return out;
}

std::vector<Conversation> load_conversations(const std::filesystem::path& path, int64_t limit) {
  const std::string file_domain = domain_from_path(path);
  std::vector<Conversation> out;
  for_each_record(path, [&](const nlohmann::json& r, int64_t line_no) {
    auto turns = r.find("turns");
    DSPARK_CHECK(turns != r.end(), "{}:{}: a conversation record needs \"turns\" (a list of user turns)",
                 path.string(), line_no);
    DSPARK_CHECK(turns->is_array() && !turns->empty(), "{}:{}: \"turns\" must be a non-empty list",
                 path.string(), line_no);
    Conversation c;
    auto category = r.find("category");
    c.domain = category != r.end() && category->is_string() ? category->get<std::string>() : file_domain;
    c.id = id_of(r, "question_id", line_no);
    for (const nlohmann::json& t : *turns) {
      DSPARK_CHECK(t.is_string(), "{}:{}: every turn must be a string, got {}", path.string(), line_no,
                   t.dump().substr(0, 80));
      c.turns.push_back(t.get<std::string>());
    }
    out.push_back(std::move(c));
    return limit <= 0 || static_cast<int64_t>(out.size()) < limit;
  });
  return out;
}

}  // namespace dspark
