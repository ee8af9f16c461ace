#include "train/draft/drafter_vocab.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "loader/config.h"
#include "spec/drafter_config.h"
#include "spec/draft_vocab.h"
#include "train/draft/draft_vocab_choice.h"
#include "train/draft/regen_split.h"

namespace dspark::train {

DraftVocabResult run_draft_vocab(const DraftVocabOptions& o) {
  const DrafterConfig config = DrafterConfig::from_file(o.drafter / "config.json");
  const ModelConfig target = ModelConfig::from_file(o.target / "config.json");
  const int32_t eos = static_cast<int32_t>(target.eos_token_id);
  RegenSplit split = split_regen_data(o.data, RegenSplitOptions{target.vocab_size, eos, o.val_fraction, o.max_len, 0},
                                      "draft-vocab");
  if (!o.quiet && !split.read_report.summary().empty()) fmt::print("{}\n", split.read_report.summary());
  const std::vector<int64_t> counts = count_completion_tokens(split.train, target.vocab_size);
  const DraftVocab vocab = build_draft_vocab(counts, o.size);
  const std::vector<int32_t> ids(vocab.target_ids.begin(), vocab.target_ids.end());
  write_draft_vocab(o.drafter, o.target, ids, o.greedy ? DraftVocabUse::kGreedyRequests : DraftVocabUse::kEveryRequest, o.out);
  const DraftVocabResult result{vocab_coverage(counts, vocab), static_cast<int64_t>(split.train.size())};
  if (!o.quiet) {
    fmt::print("draft-vocab: {} of {} tokens cover {:.3f}% of the completion tokens of {} training sequences; wrote {}\n",
               vocab.size(), config.layer.vocab_size, 100.0 * result.coverage, result.training_sequences,
               o.out.string());
  }
  return result;
}

}  // namespace dspark::train
