// Choosing a draft vocabulary from training data: the V_d target tokens the training answers
// use most, for an EAGLE-3 drafter's LM head (spec/eagle3_config.h) and for the vocabularies
// `dspark-train draft-vocab` gives a DSpark / DFlash drafter (drafter_vocab.h), so that a head
// costs V_d·H instead of V·H per drafted token.
//
// build_draft_vocab(): the V_d most frequent target tokens (ties: lower id first), listed in
// ascending id order (the speculators convention, so that d2t is non-decreasing);
// d2t[d] = target_id(d) − d (int64, the offset the engine adds: target id = d + d2t[d]),
// t2d[t] = 1 for a chosen target id t (bool). Tokens that never occur can be chosen (count 0)
// when fewer than V_d distinct tokens occur; they are then the lowest unused ids.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "train/draft/regen_records.h"

namespace dspark::train {

struct DraftVocab {
  std::vector<int64_t> target_ids;  // [V_d] target id of draft id d (ascending when built here)
  std::vector<int64_t> d2t;         // [V_d] target_ids[d] − d
  std::vector<uint8_t> t2d;         // [V] 1 where the target id is in the draft vocabulary

  int64_t size() const { return static_cast<int64_t>(target_ids.size()); }
};

// counts: [V] occurrences of each target token; draft_vocab_size in 1..V.
DraftVocab build_draft_vocab(std::span<const int64_t> counts, int64_t draft_vocab_size);

// The inverse direction: a vocabulary from a stored d2t (and the target vocabulary size),
// checking that the ids are in range and distinct (other trainers need not sort them).
DraftVocab draft_vocab_from_d2t(std::span<const int64_t> d2t, int64_t vocab_size);

// Fraction of the counted tokens (counts: [V]) the draft vocabulary covers.
double vocab_coverage(std::span<const int64_t> counts, const DraftVocab& vocab);

// Occurrences of every target token the drafter is trained to predict: the completion
// tokens of the sequences (EOS included when appended). [vocab_size]
std::vector<int64_t> count_completion_tokens(const std::vector<DraftSequence>& sequences, int64_t vocab_size);

}  // namespace dspark::train
