#include "train/draft/regen_records.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

std::string regen_record_to_json(const RegenRecord& r) {
  json j{{"id", r.id},
         {"source", r.source},
         {"prompt", r.prompt},
         {"completion", r.completion},
         {"prompt_ids", r.prompt_ids},
         {"completion_ids", r.completion_ids},
         {"finish_reason", r.finish_reason}};
  if (r.temperature >= 0) j["temperature"] = r.temperature;
  // Invalid UTF-8 in decoded text (a cut multi-byte character) becomes U+FFFD.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

RegenRecord regen_record_from_json(const std::string& line, const std::string& where) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    DSPARK_FAIL("{}: invalid JSON: {}", where, e.what());
  }
  DSPARK_CHECK(j.is_object(), "{}: a regen record must be a JSON object", where);
  RegenRecord r;
  try {
    r.id = j.at("id").get<std::string>();
    r.source = j.value("source", std::string());
    r.prompt = j.value("prompt", std::string());
    r.completion = j.value("completion", std::string());
    r.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    r.completion_ids = j.at("completion_ids").get<std::vector<int32_t>>();
    r.finish_reason = j.value("finish_reason", std::string("length"));
    if (j.contains("temperature")) {
      r.temperature = j.at("temperature").get<float>();
      DSPARK_CHECK(r.temperature >= 0, "{}: record '{}' has a negative temperature", where, r.id);
    }
  } catch (const json::exception& e) {
    DSPARK_FAIL("{}: bad regen record field: {}", where, e.what());
  }
  DSPARK_CHECK(!r.prompt_ids.empty(), "{}: record '{}' has an empty prompt_ids", where, r.id);
  return r;
}

std::string RegenReadReport::summary() const {
  if (corrupt_lines == 0 && out_of_vocab == 0) return {};
  return fmt::format("regen data: skipped {} corrupt line(s) and {} record(s) with out-of-vocabulary ids (first: {})",
                     corrupt_lines, out_of_vocab, first_problem);
}

std::vector<RegenRecord> read_regen_records(const fs::path& path, RegenReadReport* report) {
  std::vector<RegenRecord> out;
  std::ifstream in(path);
  if (!in) return out;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const bool complete = !in.eof();  // the last line of a killed writer has no newline
    try {
      out.push_back(regen_record_from_json(line, fmt::format("{}:{}", path.string(), line_no)));
    } catch (const Error& e) {
      if (!complete) continue;  // a truncated final line (regen rewrites it)
      if (report) {
        if (report->first_problem.empty()) report->first_problem = e.what();
        ++report->corrupt_lines;
      }
    }
  }
  return out;
}

namespace {

bool ids_in_vocab(const std::vector<int32_t>& ids, int64_t vocab_size) {
  return std::all_of(ids.begin(), ids.end(), [&](int32_t id) { return id >= 0 && id < vocab_size; });
}

}  // namespace

std::vector<RegenRecord> read_regen_data(const fs::path& path, int64_t vocab_size, RegenReadReport* report) {
  DSPARK_CHECK(fs::exists(path), "regen data {} does not exist", path.string());
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (const auto& entry : fs::directory_iterator(path))
      if (entry.is_regular_file() && entry.path().extension() == ".jsonl") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    DSPARK_CHECK(!files.empty(), "regen data directory {} has no .jsonl file", path.string());
  } else {
    files.push_back(path);
  }
  RegenReadReport local;
  RegenReadReport& r = report ? *report : local;
  std::vector<RegenRecord> out;
  for (const auto& f : files) {
    for (RegenRecord& record : read_regen_records(f, &r)) {
      if (vocab_size > 0 && !(ids_in_vocab(record.prompt_ids, vocab_size) &&
                              ids_in_vocab(record.completion_ids, vocab_size))) {
        if (r.first_problem.empty())
          r.first_problem = fmt::format("{}: record '{}' has a token id outside [0, {})", f.string(), record.id,
                                        vocab_size);
        ++r.out_of_vocab;
        continue;
      }
      out.push_back(std::move(record));
    }
  }
  return out;
}

bool is_held_out(const std::string& id, double val_fraction) {
  // FNV-1a then a splitmix finaliser: stable across platforms and standard libraries.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : id) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<double>(h >> 11) * 0x1.0p-53 < val_fraction;
}

std::vector<DraftSequence> make_draft_sequences(const std::vector<RegenRecord>& records, bool held_out,
                                                double val_fraction, int32_t eos_id, int64_t max_len) {
  std::vector<DraftSequence> out;
  for (const RegenRecord& r : records) {
    if (is_held_out(r.id, val_fraction) != held_out) continue;
    DraftSequence s;
    s.tokens = r.prompt_ids;
    s.prompt_len = static_cast<int32_t>(r.prompt_ids.size());
    s.sampled = r.temperature > 0.0f;
    s.tokens.insert(s.tokens.end(), r.completion_ids.begin(), r.completion_ids.end());
    if (r.finish_reason == "eos" && eos_id >= 0) s.tokens.push_back(eos_id);
    if (static_cast<int64_t>(s.tokens.size()) > max_len) s.tokens.resize(static_cast<size_t>(max_len));
    if (static_cast<int64_t>(s.tokens.size()) - s.prompt_len < 2) continue;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dspark::train
