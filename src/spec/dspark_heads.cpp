#include "spec/dspark_heads.h"

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "kernels/elementwise.h"

namespace dspark {

DSparkHeads::DSparkHeads(const DrafterConfig& c, const WeightStore& store, const LinearOptions& linear,
                         int64_t max_state_rows)
    : vocab_(c.layer.vocab_size),
      hidden_(c.layer.hidden_size),
      rank_(c.markov_rank),
      confidence_with_markov_(c.confidence_head_with_markov),
      context_size_(c.contextual_markov() ? c.markov_context_size : 0) {
  if (rank_ > 0) {
    const int64_t shape[2] = {vocab_, rank_};
    std::vector<float> w1 = store.load_f32("markov_head.markov_w1.weight", shape);
    if (linear.compute == DType::kF32) {
      w1_f32_ = std::move(w1);
    } else {
      w1_bf16_.resize(w1.size());
      convert_f32_to_bf16(w1.data(), w1_bf16_.data(), w1.size());
    }
    feature_.resize(rank_);
  }
  if (context_size_ > 0) {
    const int64_t m = context_size_, in = hidden_ + rank_;
    const int64_t in_shape[2] = {m, in};
    const int64_t out_shape[2] = {rank_, m};
    const std::vector<float> w_in = store.load_f32("markov_head.context_in.weight", in_shape);
    std::vector<float> w_h(m * hidden_), w_e(m * rank_);
    for (int64_t u = 0; u < m; ++u) {
      std::memcpy(w_h.data() + u * hidden_, w_in.data() + u * in, hidden_ * sizeof(float));
      std::memcpy(w_e.data() + u * rank_, w_in.data() + u * in + hidden_, rank_ * sizeof(float));
    }
    LinearOptions states = linear;
    states.max_rows = max_state_rows;
    context_h_ = std::make_unique<Linear>(w_h, m, hidden_, std::span<const float>{}, states);
    context_e_ = std::make_unique<Linear>(w_e, m, rank_, std::span<const float>{}, linear);
    context_out_ = std::make_unique<Linear>(store.load_f32("markov_head.context_out.weight", out_shape), rank_, m,
                                            std::span<const float>{}, linear);
    state_proj_.resize(max_state_rows * m);
    context_mid_.resize(linear.max_rows * m);
    context_delta_.resize(linear.max_rows * rank_);
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

void DSparkHeads::project_states(const float* hidden, int64_t rows) {
  if (context_size_ > 0 && rows > 0) context_h_->forward(hidden, state_proj_.data(), rows);
}

void DSparkHeads::markov_features(const int32_t* prev_tokens, const int32_t* state_rows, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) markov_row(prev_tokens[i], out + i * rank_);
  if (context_size_ == 0 || n == 0) return;
  const int64_t m = context_size_;
  context_e_->forward(out, context_mid_.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    float* mid = context_mid_.data() + i * m;
    const float* from_state = state_proj_.data() + static_cast<int64_t>(state_rows[i]) * m;
    for (int64_t u = 0; u < m; ++u) {
      const float v = from_state[u] + mid[u];
      mid[u] = v / (1.0f + std::exp(-v));
    }
  }
  context_out_->forward(context_mid_.data(), context_delta_.data(), n);
  for (int64_t i = 0; i < n * rank_; ++i) out[i] += context_delta_[i];
}

size_t DSparkHeads::weight_bytes() const {
  return context_h_ ? context_h_->weight_bytes() + context_e_->weight_bytes() + context_out_->weight_bytes() : 0;
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
