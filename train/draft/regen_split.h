// A drafter training run's data: the regen records of --data (regen_records.h), out-of-
// vocabulary and corrupt ones skipped and counted, as the training and held-out sequences
// every drafter trainer (draft, eagle3, draft-lm) uses.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/draft/regen_records.h"

namespace dspark::train {

struct RegenSplitOptions {
  int64_t vocab_size = 0;         // the target's: records with ids outside it are skipped
  int32_t eos_id = -1;            // appended to answers that ended with it
  double val_fraction = 0.05;     // held-out records (by id hash)
  int64_t max_len = 512;          // sequence cap (tokens)
  int64_t max_val_sequences = 64; // held-out sequences kept, at most, evenly spaced over the split
};

struct RegenSplit {
  int64_t num_records = 0;
  std::vector<DraftSequence> train;
  std::vector<DraftSequence> val;
  RegenReadReport read_report;    // what reading skipped (summary() for the run's log)
};

// At most n of the sequences, those at indices floor(i * size / n), i < n: spread over the
// whole list (so over every file and source of file-ordered data), the same on every run.
std::vector<DraftSequence> evenly_spaced(std::vector<DraftSequence> all, int64_t n);

// The held-out sequences kept are evenly spaced over all held-out records in file order,
// so every file (greedy and sampled answers) and source is represented in proportion,
// not just the first file's first prompts.
// Throws naming `command` and the data when no training sequence is left.
RegenSplit split_regen_data(const std::filesystem::path& data, const RegenSplitOptions& options,
                            const std::string& command);

}  // namespace dspark::train
