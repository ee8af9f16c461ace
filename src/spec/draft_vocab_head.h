// One draft vocabulary's output layer of a block drafter: the LM-head rows and (DSpark) the
// Markov W₂ rows of its V_h tokens, their target ids, and the logits rows of one propose().
// A drafter has one for every request (the whole vocabulary, or the speculators-layout
// reduced one of spec/draft_vocab.h) and may have a second, smaller one for greedy requests
// (DrafterConfig::greedy_draft_vocab_size): greedy drafting needs only the argmax, and the
// target's greedy answers use a small part of the vocabulary, while a sampled draft's q
// should keep every token the target might sample.
//
// Rows are in draft ids; target_row() gives the row over the target vocabulary the
// transform and the draw see (the row itself, or its scatter with −∞ elsewhere).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/linear.h"

namespace dspark {

class DraftVocabHead {
 public:
  // lm_head: [V_h, hidden]; markov_w2: [V_h, rank] or null; to_target: [V_h] target ids, or
  // empty when the head covers the whole target vocabulary in order. max_rows: LM-head rows
  // per propose(); max_markov_rows: Markov rows per position (the requests drafting).
  DraftVocabHead(Linear lm_head, std::unique_ptr<Linear> markov_w2, std::vector<int32_t> to_target,
                 int64_t target_vocab, int64_t max_rows, int64_t max_markov_rows, bool keep_base_logits);

  int64_t size() const { return size_; }
  const Linear& lm_head() const { return lm_head_; }
  size_t weight_bytes() const;  // LM head + W₂: what one propose() streams through this head

  // logits rows [first, first + rows) = LM head of hidden [rows, hidden_size].
  void project(const float* hidden, int64_t first, int64_t rows);
  float* row(int64_t r) { return logits_.data() + r * size_; }
  // rows[i][0 .. V_h) += W₂ · features[i] for i < n: one batched product (features [n, rank]).
  void add_markov_bias(const float* features, int64_t n, float* const* rows);
  // The logits of row r over the target vocabulary (after the Markov term, when there is one).
  const float* target_row(int64_t r);
  // Rows [first, first + count) over the target vocabulary: [count, V].
  std::span<const float> target_rows(int64_t first, int64_t count);
  // The target id a greedy transform of target_row(r) picks, without building that row
  // (greedy_draft_token, spec/draft_vocab.h); −1 when only the transform can tell.
  int32_t greedy_token(int64_t r) const;
  // U_j as projected (keep_base_logits), rows [first, first + count): [count, V_h].
  std::span<const float> base_rows(int64_t first, int64_t count) const;

 private:
  Linear lm_head_;
  std::unique_ptr<Linear> markov_w2_;
  std::vector<int32_t> to_target_;      // [V_h] or empty
  bool ascending_;                      // to_target_ increases: the first draft argmax wins ties
  int64_t size_;                        // V_h
  int64_t target_vocab_;                // V
  std::vector<float> logits_;           // [max_rows, V_h] U_j (+ Markov term), draft ids
  std::vector<float> target_logits_;    // [max_rows, V] their scatter (only with to_target)
  std::vector<float> base_logits_;      // [max_rows, V_h] with keep_base_logits
  std::vector<float> markov_out_;       // [max_markov_rows, V_h]
};

}  // namespace dspark
