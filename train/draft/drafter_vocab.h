// Reducing a trained DSpark / DFlash drafter to a draft vocabulary (spec/draft_vocab.h): the
// V_d target tokens the training answers use most. Nothing is retrained: the drafter keeps
// exactly its LM-head and Markov W₂ rows for those tokens, and a round costs V_d instead of V
// LM-head rows per draft.
//
// dspark-train draft-vocab --drafter D --target T --data REGEN --size V_d [--greedy] --out OUT
//   counts the completion tokens of REGEN's training split (the held-out records, chosen by
//   id hash as in training, are left out), keeps the V_d most frequent (draft_vocab_choice.h) and
//   writes OUT with write_draft_vocab (spec/draft_vocab.h): the drafter's vocabulary, or with
//   --greedy a second one for greedy requests (count greedy answers for it).
#pragma once

#include <cstdint>
#include <filesystem>

namespace dspark::train {

struct DraftVocabOptions {
  std::filesystem::path drafter;
  std::filesystem::path target;
  std::filesystem::path data;
  std::filesystem::path out;
  int64_t size = 0;               // V_d (or V_g)
  bool greedy = false;            // a greedy vocabulary beside the whole one (DraftVocabUse)
  double val_fraction = 0.05;     // held-out records not counted (the training split's)
  int64_t max_len = 512;          // sequence cap, as in training
  bool quiet = false;
};

struct DraftVocabResult {
  double coverage = 0;            // of the counted completion tokens
  int64_t training_sequences = 0;
};

DraftVocabResult run_draft_vocab(const DraftVocabOptions& o);

}  // namespace dspark::train
