// `dspark-train regen`: the target answers the drafters' training prompts through the
// engine (continuous batching, max_running requests at once), so the drafter learns the
// target's own distribution (self-distillation, DESIGN §4).
//
// Prompts (training splits only, never evaluation data):
//   gsm8k  corpus/gsm8k_train.jsonl questions as "Question: {question}\nAnswer:"
//   mbpp   eval/mbpp.jsonl tasks 601..974 (its training split; any other task id is a hard
//          error) as "# {text}\n"
//   code / prose  prefixes of prefix_tokens tokens cut from the TRAIN shards of the token
//          shard directory (prepare's output) at seeded random offsets inside a document
// All prompts are shuffled together with the seed (so a --limit run is a mix) and written
// as regen_records.h JSONL, one line per finished answer, flushed as it arrives. Running
// again with the same options resumes: ids already in the output are skipped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dspark {
class Tokenizer;
}

namespace dspark::train {

struct RegenOptions {
  std::filesystem::path model;       // target: Hugging Face directory or a pretraining checkpoint
  std::filesystem::path tokenizer;   // empty: the model directory, else its checkpoint's tokenizer_dir
  std::filesystem::path shared_dir;  // folder holding data/corpus and data/eval
  std::filesystem::path shards;      // token shards for code/prose prefixes (empty: none)
  std::filesystem::path out;         // JSONL output (appended to)
  int64_t gsm8k = -1;                // prompts per source; -1 = all the source has
  int64_t mbpp = -1;
  int64_t code = 2000;
  int64_t prose = 1000;
  int64_t prefix_tokens = 48;        // length of code/prose prefixes
  int64_t limit = 0;                 // prompts in all after shuffling; 0 = no limit
  int64_t max_tokens = 256;          // answer length cap
  float temperature = 0.0f;          // 0 = greedy
  float top_p = 1.0f;
  int32_t top_k = 0;
  uint64_t seed = 1;                 // prompt choice, order, and per-request sampling seeds
  int64_t max_running = 8;           // concurrent requests in the engine
  int64_t max_batch_tokens = 256;    // engine tokens per step
  std::string dtype = "bf16";        // engine compute dtype
  int threads = 2;
  double log_every_seconds = 10;     // progress line period
  bool quiet = false;

  void validate() const;
};

struct RegenPrompt {
  std::string id;      // "gsm8k:17", "mbpp:601", "code:123456", "prose:99"
  std::string source;
  std::string text;
  std::vector<int32_t> ids;
};

// The prompt list (shuffled, limited) the options describe. notes receives one line per
// thing left out (a shard source too broken to read).
std::vector<RegenPrompt> regen_prompts(const RegenOptions& options, const Tokenizer& tokenizer,
                                       std::vector<std::string>& notes);

struct RegenResult {
  int64_t prompts = 0;           // in the list
  int64_t skipped = 0;           // already in the output
  int64_t written = 0;           // answered now
  int64_t failed = 0;            // finished with an error (not written; retried next run)
  int64_t generated_tokens = 0;  // answered now
  double seconds = 0;
};

RegenResult run_regen(const RegenOptions& options);

// `dspark-train regen ...`
void add_regen_command(CLI::App& app);

}  // namespace dspark::train
