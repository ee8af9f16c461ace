// The pretraining corpus of the embedded target model, built from shared/data (see its
// README for formats and licenses). Three sources, each a list of UTF-8 documents in a
// fixed order:
//   gsm8k  corpus/gsm8k_train.jsonl, one "Question: {question}\nAnswer: {answer}" per line.
//   code   every .py file of corpus/python_stdlib.tar.xz (unpacked with `tar -xJf` into a
//          scratch dir; files in path order), then MBPP's training split only — task_id
//          601..974 of eval/mbpp.jsonl — as "# {text}\n{code}\n" with CRLF turned into LF.
//          MBPP's test (11..510), validation (511..600) and few-shot (1..10) tasks are
//          evaluation data and never become documents.
//   prose  corpus/tinyshakespeare.txt cut at blank lines into documents of about
//          prose_document_chars characters (the blank line between documents is dropped).
// Empty documents and documents that are not valid UTF-8 are skipped (with a warning).
//
// split_documents() holds out a deterministic fraction of every source for validation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dspark::train {

inline constexpr int64_t kMbppTrainFirstTask = 601;
inline constexpr int64_t kMbppTrainLastTask = 974;
inline bool is_mbpp_training_task(int64_t task_id) {
  return task_id >= kMbppTrainFirstTask && task_id <= kMbppTrainLastTask;
}

inline const std::vector<std::string> kCorpusSources = {"gsm8k", "code", "prose"};

struct CorpusOptions {
  std::filesystem::path shared_dir;     // the folder holding data/corpus and data/eval
  int64_t prose_document_chars = 3000;  // a prose document ends at the first blank line past this
  std::filesystem::path scratch_dir;    // where archives are unpacked; empty: a temp dir
};

std::vector<std::string> gsm8k_documents(const std::filesystem::path& jsonl);
std::vector<std::string> mbpp_training_documents(const std::filesystem::path& jsonl);
// Each .py file of a .tar.xz archive, in path order.
std::vector<std::string> python_archive_documents(const std::filesystem::path& archive,
                                                  const std::filesystem::path& scratch_dir);
std::vector<std::string> split_prose(std::string_view text, int64_t document_chars);

// Documents of one source by name (one of kCorpusSources). Throws dspark::Error naming the
// file when an input is missing or malformed, or the name is unknown.
std::vector<std::string> load_source_documents(std::string_view name, const CorpusOptions& options);

struct DocumentSplit {
  std::vector<int64_t> train;  // document indices, ascending
  std::vector<int64_t> val;    // document indices, ascending
};

// Holds out round(num_documents * val_fraction) documents (at least one when there are two
// or more and val_fraction > 0), chosen by a hash of (source, index): deterministic, spread
// over the whole source, and independent of the other sources.
DocumentSplit split_documents(int64_t num_documents, double val_fraction, std::string_view source);

}  // namespace dspark::train
