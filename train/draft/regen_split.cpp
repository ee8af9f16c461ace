#include "train/draft/regen_split.h"

#include <algorithm>

#include "core/check.h"

namespace dspark::train {

std::vector<DraftSequence> evenly_spaced(std::vector<DraftSequence> all, int64_t n) {
  const auto size = static_cast<int64_t>(all.size());
  if (size <= n) return all;
  std::vector<DraftSequence> kept;
  kept.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) kept.push_back(std::move(all[static_cast<size_t>(i * size / n)]));
  return kept;
}

RegenSplit split_regen_data(const std::filesystem::path& data, const RegenSplitOptions& o, const std::string& command) {
  RegenSplit s;
  const std::vector<RegenRecord> records = read_regen_data(data, o.vocab_size, &s.read_report);
  s.num_records = static_cast<int64_t>(records.size());
  s.train = make_draft_sequences(records, false, o.val_fraction, o.eos_id, o.max_len);
  s.val = make_draft_sequences(records, true, o.val_fraction, o.eos_id, o.max_len);
  s.val = evenly_spaced(std::move(s.val), o.max_val_sequences);
  DSPARK_CHECK(!s.train.empty(), "{}: {} has no training sequence ({} records)", command, data.string(),
               records.size());
  return s;
}

}  // namespace dspark::train
