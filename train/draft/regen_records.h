// Regenerated training data for drafters: the target's own answers to training prompts,
// one JSON object per line (JSONL), as `dspark-train regen` writes them:
//
//   {"id": "gsm8k:12", "source": "gsm8k", "prompt": "...", "completion": "...",
//    "prompt_ids": [...], "completion_ids": [...], "finish_reason": "eos"|"length"|"stop",
//    "temperature": 0.0}
//
// temperature is the sampling temperature of the answer (0 = greedy); older files lack it.
// completion_ids never contain the EOS token; finish_reason "eos" says the target ended
// the answer with it (the drafter data appends it back, so drafters learn to stop).
// `id` names the prompt (source and index), so an interrupted run resumes by skipping ids
// already in the file. A truncated last line (a killed writer) is ignored on read; other
// corrupt lines are skipped and counted (RegenReadReport).
//
// Held-out split: a record is held out when a hash of its id falls below val_fraction, so
// the split is stable across resumes, reruns and file order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dspark::train {

struct RegenRecord {
  std::string id;
  std::string source;
  std::string prompt;
  std::string completion;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> completion_ids;
  std::string finish_reason;  // "eos", "length", "stop"
  float temperature = -1.0f;  // of the answer, 0 = greedy; -1 = not recorded
};

// One JSON line (no trailing newline).
std::string regen_record_to_json(const RegenRecord& record);
RegenRecord regen_record_from_json(const std::string& line, const std::string& where);

// What reading skipped: a corrupt line or record never stops a training run, it is left
// out and counted, and the run's log says so.
struct RegenReadReport {
  int64_t corrupt_lines = 0;  // malformed JSON or fields, other than a truncated last line
  int64_t out_of_vocab = 0;   // records with a token id outside [0, vocab_size)
  std::string first_problem;  // file:line and what was wrong with the first skipped one
  // One log line, or "" when nothing was skipped.
  std::string summary() const;
};

// Reads every complete record of a JSONL file (missing file: empty). A truncated last line
// (a killed writer) is ignored; any other malformed line is skipped and counted in report.
std::vector<RegenRecord> read_regen_records(const std::filesystem::path& path, RegenReadReport* report = nullptr);
// Reads every *.jsonl file of a directory, or the one file given. With vocab_size > 0,
// records holding a token id outside [0, vocab_size) are skipped and counted as well.
std::vector<RegenRecord> read_regen_data(const std::filesystem::path& path, int64_t vocab_size = 0,
                                         RegenReadReport* report = nullptr);

// True when the record belongs to the held-out split.
bool is_held_out(const std::string& id, double val_fraction);

// A training sequence made from a record: prompt then completion (+ EOS when the record
// ended with it), cut to max_len tokens.
struct DraftSequence {
  std::vector<int32_t> tokens;  // [length]
  int32_t prompt_len = 0;       // tokens[0, prompt_len) are the prompt
  bool sampled = false;         // the answer was sampled (temperature > 0), not greedy
};

// Records -> sequences of one split (held_out or not); sequences with fewer than two
// completion tokens are dropped.
std::vector<DraftSequence> make_draft_sequences(const std::vector<RegenRecord>& records, bool held_out,
                                                double val_fraction, int32_t eos_id, int64_t max_len);

}  // namespace dspark::train
