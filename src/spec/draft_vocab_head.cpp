#include "spec/draft_vocab_head.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/elementwise.h"
#include "spec/draft_vocab.h"

namespace dspark {

DraftVocabHead::DraftVocabHead(Linear lm_head, std::unique_ptr<Linear> markov_w2, std::vector<int32_t> to_target,
                               int64_t target_vocab, int64_t max_rows, int64_t max_markov_rows,
                               bool keep_base_logits)
    : lm_head_(std::move(lm_head)),
      markov_w2_(std::move(markov_w2)),
      to_target_(std::move(to_target)),
      ascending_(std::is_sorted(to_target_.begin(), to_target_.end())),
      size_(lm_head_.out_features()),
      target_vocab_(target_vocab),
      logits_(max_rows * size_),
      // Entries outside the vocabulary stay −∞: the scatter only ever writes the others.
      target_logits_(to_target_.empty() ? 0 : max_rows * target_vocab, -std::numeric_limits<float>::infinity()),
      base_logits_(keep_base_logits ? max_rows * size_ : 0),
      markov_out_(markov_w2_ ? max_markov_rows * size_ : 0) {}

size_t DraftVocabHead::weight_bytes() const {
  return lm_head_.weight_bytes() + (markov_w2_ ? markov_w2_->weight_bytes() : 0);
}

void DraftVocabHead::project(const float* hidden, int64_t first, int64_t rows) {
  if (rows == 0) return;
  lm_head_.forward(hidden, row(first), rows);
  if (!base_logits_.empty()) {
    std::memcpy(base_logits_.data() + first * size_, row(first), static_cast<size_t>(rows * size_) * sizeof(float));
  }
}

void DraftVocabHead::add_markov_bias(const float* features, int64_t n, float* const* rows) {
  if (!markov_w2_ || n == 0) return;
  markov_w2_->forward(features, markov_out_.data(), n);
  for (int64_t i = 0; i < n; ++i) add_inplace(rows[i], markov_out_.data() + i * size_, size_);
}

const float* DraftVocabHead::target_row(int64_t r) {
  if (to_target_.empty()) return row(r);
  float* out = target_logits_.data() + r * target_vocab_;
  scatter_draft_logits(to_target_, row(r), out);
  return out;
}

std::span<const float> DraftVocabHead::target_rows(int64_t first, int64_t count) {
  for (int64_t r = first; r < first + count; ++r) target_row(r);  // (greedy drafting skips the scatter)
  const std::vector<float>& rows = to_target_.empty() ? logits_ : target_logits_;
  return {rows.data() + first * target_vocab_, static_cast<size_t>(count * target_vocab_)};
}

int32_t DraftVocabHead::greedy_token(int64_t r) const {
  return greedy_draft_token(logits_.data() + r * size_, size_, to_target_, ascending_);
}

std::span<const float> DraftVocabHead::base_rows(int64_t first, int64_t count) const {
  if (base_logits_.empty()) return {};
  return {base_logits_.data() + first * size_, static_cast<size_t>(count * size_)};
}

}  // namespace dspark
