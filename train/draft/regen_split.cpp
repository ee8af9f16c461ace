#include "train/draft/regen_split.h"

#include "core/check.h"

namespace dspark::train {

RegenSplit split_regen_data(const std::filesystem::path& data, const RegenSplitOptions& o, const std::string& command) {
  RegenSplit s;
  const std::vector<RegenRecord> records = read_regen_data(data, o.vocab_size, &s.read_report);
  s.num_records = static_cast<int64_t>(records.size());
  s.train = make_draft_sequences(records, false, o.val_fraction, o.eos_id, o.max_len);
  s.val = make_draft_sequences(records, true, o.val_fraction, o.eos_id, o.max_len);
  if (static_cast<int64_t>(s.val.size()) > o.max_val_sequences)
    s.val.resize(static_cast<size_t>(o.max_val_sequences));
  DSPARK_CHECK(!s.train.empty(), "{}: {} has no training sequence ({} records)", command, data.string(),
               records.size());
  return s;
}

}  // namespace dspark::train
