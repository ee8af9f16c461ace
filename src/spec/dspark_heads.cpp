#include "spec/dspark_heads.h"

#include <cstring>

#include "core/check.h"
#include "kernels/elementwise.h"

namespace dspark {

DSparkHeads::DSparkHeads(const DrafterConfig& c, const WeightStore& store, DType compute)
    : vocab_(c.layer.vocab_size),
      hidden_(c.layer.hidden_size),
      rank_(c.markov_rank),
      confidence_with_markov_(c.confidence_head_with_markov) {
  if (rank_ > 0) {
    const int64_t shape[2] = {vocab_, rank_};
    std::vector<float> w1 = store.load_f32("markov_head.markov_w1.weight", shape);
    if (compute == DType::kF32) {
      w1_f32_ = std::move(w1);
    } else {
      w1_bf16_.resize(w1.size());
      convert_f32_to_bf16(w1.data(), w1_bf16_.data(), w1.size());
    }
    feature_.resize(rank_);
  }
  if (c.enable_confidence_head) {
    const int64_t width = hidden_ + (confidence_with_markov_ ? rank_ : 0);
    const int64_t w_shape[2] = {1, width};
    const int64_t b_shape[1] = {1};
    confidence_w_ = store.load_f32("confidence_head.proj.weight", w_shape);
    confidence_b_ = store.load_f32("confidence_head.proj.bias", b_shape)[0];
  }
}

void DSparkHeads::markov_row(int32_t token, float* out) const {
  const int64_t offset = static_cast<int64_t>(token) * rank_;
  if (!w1_f32_.empty()) {
    std::memcpy(out, w1_f32_.data() + offset, rank_ * sizeof(float));
  } else {
    convert_to_f32(w1_bf16_.data() + offset, DType::kBF16, out, rank_);
  }
}

void DSparkHeads::markov_features(const int32_t* prev_tokens, int64_t n, float* out) const {
  for (int64_t i = 0; i < n; ++i) markov_row(prev_tokens[i], out + i * rank_);
}

float DSparkHeads::confidence_logit(const float* hidden, int32_t prev_token) const {
  DSPARK_CHECK(!confidence_w_.empty(), "this drafter has no confidence head");
  // One fixed summation order per row, so the value does not depend on the batch.
  double z = confidence_b_;
  for (int64_t i = 0; i < hidden_; ++i) z += static_cast<double>(confidence_w_[i]) * hidden[i];
  if (confidence_with_markov_) {
    markov_row(prev_token, feature_.data());
    for (int64_t i = 0; i < rank_; ++i) z += static_cast<double>(confidence_w_[hidden_ + i]) * feature_[i];
  }
  return static_cast<float>(z);
}

}  // namespace dspark
