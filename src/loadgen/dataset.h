// Prompt sets for measuring acceptance length and speed per domain, read from the JSONL
// formats in shared/data (GSM8K, HumanEval, MBPP, MT-bench, Spec-Bench, MATH-500, AIME).
// The format is recognised from each record's fields; prompts are rendered in the plain
// formats the embedded models were trained on:
//   GSM8K / MATH / AIME / MT-bench / Spec-Bench  "Question: {text}\nAnswer:"
//   HumanEval                                     the function prompt as is
//   MBPP (test split only, task_id 11..510)       "# {text}\n"
// Conversations (for multi-turn benchmarks, bench/multi_turn.h) are records with "turns"
// (MT-bench, Spec-Bench): the user turns kept as raw text, rendered per turn by the caller.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dspark {

struct DatasetPrompt {
  std::string domain;  // "gsm8k", "humaneval", "mbpp", MT-bench/Spec-Bench category, ...
  std::string id;      // the record's id, or its line number
  std::string text;    // the rendered prompt
};

// Reads up to `limit` prompts (0 = all) in file order. Throws Error naming the file and
// line for malformed JSON or a record whose format is not recognised.
std::vector<DatasetPrompt> load_dataset(const std::filesystem::path& path, int64_t limit = 0);

struct Conversation {
  std::string domain;              // the record's "category", else the file's name
  std::string id;                  // "question_id", or the line number
  std::vector<std::string> turns;  // the user turns in order, raw text (>= 1)
};

// Reads up to `limit` conversations (0 = all) in file order. Throws Error naming the file
// and line for malformed JSON, a record without "turns", or turns that are not a
// non-empty list of strings.
std::vector<Conversation> load_conversations(const std::filesystem::path& path, int64_t limit = 0);

}  // namespace dspark
