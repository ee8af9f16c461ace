#include "data/corpus_sources.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/check.h"
#include "data/subprocess.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::train {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot open {}", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Calls fn(json, line_number) for every non-empty line of a .jsonl file.
template <class Fn>
void for_each_jsonl(const std::filesystem::path& path, Fn&& fn) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot open {}", path.string());
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      DSPARK_FAIL("{}:{}: not valid JSON: {}", path.string(), line_number, e.what());
    }
    fn(j, line_number);
  }
}

std::string string_field(const nlohmann::json& j, const char* field,
                         const std::filesystem::path& path, int64_t line) {
  DSPARK_CHECK(j.contains(field) && j[field].is_string(), "{}:{}: missing string field '{}'",
               path.string(), line, field);
  return j[field].get<std::string>();
}

std::string crlf_to_lf(std::string s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;
    out.push_back(s[i]);
  }
  return out;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace

std::vector<std::string> gsm8k_documents(const std::filesystem::path& jsonl) {
  std::vector<std::string> docs;
  for_each_jsonl(jsonl, [&](const nlohmann::json& j, int64_t line) {
    docs.push_back("Question: " + string_field(j, "question", jsonl, line) +
                   "\nAnswer: " + string_field(j, "answer", jsonl, line));
  });
  return docs;
}

std::vector<std::string> mbpp_training_documents(const std::filesystem::path& jsonl) {
  std::vector<std::pair<int64_t, std::string>> tasks;
  for_each_jsonl(jsonl, [&](const nlohmann::json& j, int64_t line) {
    DSPARK_CHECK(j.contains("task_id") && j["task_id"].is_number_integer(),
                 "{}:{}: missing integer field 'task_id'", jsonl.string(), line);
    const auto task_id = j["task_id"].get<int64_t>();
    if (!is_mbpp_training_task(task_id)) return;
    std::string code = crlf_to_lf(string_field(j, "code", jsonl, line));
    if (code.empty() || code.back() != '\n') code.push_back('\n');
    tasks.emplace_back(task_id, "# " + string_field(j, "text", jsonl, line) + "\n" + code);
  });
  std::sort(tasks.begin(), tasks.end());
  std::vector<std::string> docs;
  for (auto& t : tasks) docs.push_back(std::move(t.second));
  return docs;
}

std::vector<std::string> python_archive_documents(const std::filesystem::path& archive,
                                                  const std::filesystem::path& scratch_dir) {
  DSPARK_CHECK(std::filesystem::is_regular_file(archive), "archive {} not found", archive.string());
  std::filesystem::create_directories(scratch_dir);
  run_process({"tar", "-xJf", archive.string(), "-C", scratch_dir.string()});
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(scratch_dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".py") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end(), [&](const auto& a, const auto& b) {
    return a.lexically_relative(scratch_dir).generic_string() <
           b.lexically_relative(scratch_dir).generic_string();
  });
  std::vector<std::string> docs;
  docs.reserve(files.size());
  for (const auto& f : files) docs.push_back(read_file(f));
  return docs;
}

std::vector<std::string> split_prose(std::string_view text, int64_t document_chars) {
  DSPARK_CHECK(document_chars > 0, "prose document size must be positive, got {}", document_chars);
  std::vector<std::string> docs;
  size_t start = text.find_first_not_of('\n');
  while (start != std::string_view::npos && start < text.size()) {
    // Grow the document paragraph by paragraph until it is long enough.
    size_t end = start;
    for (;;) {
      const size_t blank = text.find("\n\n", end);
      if (blank == std::string_view::npos) {
        end = text.size();
        break;
      }
      end = blank + 1;  // keep the paragraph's own line break
      if (static_cast<int64_t>(end - start) >= document_chars) break;
    }
    std::string doc(text.substr(start, end - start));
    while (doc.size() >= 2 && doc[doc.size() - 1] == '\n' && doc[doc.size() - 2] == '\n')
      doc.pop_back();
    docs.push_back(std::move(doc));
    start = text.find_first_not_of('\n', end);
  }
  return docs;
}

std::vector<std::string> load_source_documents(std::string_view name, const CorpusOptions& options) {
  const auto data = options.shared_dir / "data";
  std::vector<std::string> docs;
  if (name == "gsm8k") {
    docs = gsm8k_documents(data / "corpus" / "gsm8k_train.jsonl");
  } else if (name == "code") {
    std::optional<TempDir> temp;
    std::filesystem::path scratch = options.scratch_dir;
    if (scratch.empty()) {
      temp.emplace("dspark-corpus");
      scratch = temp->path();
    }
    docs = python_archive_documents(data / "corpus" / "python_stdlib.tar.xz", scratch / "python_stdlib");
    auto mbpp = mbpp_training_documents(data / "eval" / "mbpp.jsonl");
    for (auto& d : mbpp) docs.push_back(std::move(d));
  } else if (name == "prose") {
    docs = split_prose(read_file(data / "corpus" / "tinyshakespeare.txt"), options.prose_document_chars);
  } else {
    DSPARK_FAIL("unknown corpus source '{}' (known: gsm8k, code, prose)", name);
  }
  std::vector<std::string> kept;
  kept.reserve(docs.size());
  int64_t empty = 0;
  for (auto& d : docs) {
    if (d.empty()) {
      ++empty;
    } else if (!tok::utf8_is_valid(d)) {
      spdlog::warn("{}: skipping a document that is not valid UTF-8 (starts '{}')", name,
                   d.substr(0, 40));
    } else {
      kept.push_back(std::move(d));
    }
  }
  if (empty > 0) spdlog::info("{}: skipped {} empty documents", name, empty);
  return kept;
}

DocumentSplit split_documents(int64_t num_documents, double val_fraction, std::string_view source) {
  DSPARK_CHECK(val_fraction >= 0.0 && val_fraction < 1.0, "val_fraction must be in [0, 1), got {}",
               val_fraction);
  int64_t num_val = 0;
  if (val_fraction > 0.0 && num_documents >= 2) {
    num_val = std::clamp<int64_t>(std::llround(static_cast<double>(num_documents) * val_fraction), 1,
                                  num_documents - 1);
  }
  const uint64_t seed = fnv1a(source);
  std::vector<std::pair<uint64_t, int64_t>> order(num_documents);
  for (int64_t i = 0; i < num_documents; ++i)
    order[i] = {mix64(seed ^ mix64(static_cast<uint64_t>(i) + 0x9e3779b97f4a7c15ull)), i};
  std::sort(order.begin(), order.end());
  std::vector<bool> is_val(num_documents, false);
  for (int64_t k = 0; k < num_val; ++k) is_val[order[k].second] = true;
  DocumentSplit split;
  for (int64_t i = 0; i < num_documents; ++i) (is_val[i] ? split.val : split.train).push_back(i);
  return split;
}

}  // namespace dspark::train
