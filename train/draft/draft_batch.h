// Batches of drafter training: sequences (regen_records.h) padded into [B, T] token arrays,
// with the anchor positions of every sequence's blocks.
//
// Anchors. A block anchored at position a drafts the tokens at a+1 .. a+D (D = drafts per
// block). In decoding the anchor is always a committed output token (the bonus token of the
// previous round, the first one being the answer's first token), so a training anchor must
// be a completion token whose next token is also one: prompt_len <= a and a + 1 < length
// (the reference's rule: loss_mask[a] and loss_mask[a+1]). Positions j of the block past
// the sequence end are masked out of the loss (block_targets in draft_loss.h).
//
// DraftBatchSampler::batch(step) is a pure function of (seed, step): sequence order is a
// seeded permutation per epoch, anchors a seeded choice per (step, row) — so a resumed run
// sees exactly the batches of an uninterrupted one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "train/draft/regen_records.h"

namespace dspark::train {

struct DraftBatch {
  int64_t batch = 0;                // B
  int64_t length = 0;               // T (the longest sequence of the batch)
  int64_t num_anchors = 0;          // N
  std::vector<int32_t> tokens;      // [B, T], padded with pad_id
  std::vector<uint8_t> loss_mask;   // [B, T]: 1 for completion tokens
  std::vector<int64_t> anchors;     // [B, N], ascending per row; 0 where unused
  std::vector<uint8_t> keep;        // [B, N]: 1 for real anchors
  int64_t num_tokens = 0;           // real (unpadded) tokens
};

// Valid anchor positions of a sequence (ascending).
std::vector<int64_t> anchor_candidates(const DraftSequence& sequence);
// Up to num_anchors distinct candidates, ascending, drawn uniformly without replacement.
std::vector<int64_t> sample_anchors(std::span<const int64_t> candidates, int64_t num_anchors, Rng& rng);
// Evaluation anchors: candidates whose whole block of num_drafts labels lies inside the
// sequence, evenly thinned to at most max_anchors.
std::vector<int64_t> full_block_anchors(const DraftSequence& sequence, int64_t num_drafts, int64_t max_anchors);

// Pads the given sequences into a batch with the given anchors per row (each at most N).
DraftBatch make_draft_batch(std::span<const DraftSequence* const> rows,
                            const std::vector<std::vector<int64_t>>& anchors, int64_t num_anchors, int32_t pad_id);

class DraftBatchSampler {
 public:
  DraftBatchSampler(const std::vector<DraftSequence>& sequences, int64_t batch, int64_t num_anchors, uint64_t seed,
                    int32_t pad_id);
  DraftBatch batch(int64_t step) const;  // step is 1-based
  // The sequence index of sample i of a step (for tests).
  int64_t sequence_of(int64_t step, int64_t i) const;

 private:
  const std::vector<DraftSequence>& sequences_;
  int64_t batch_;
  int64_t num_anchors_;
  uint64_t seed_;
  int32_t pad_id_;
};

}  // namespace dspark::train
