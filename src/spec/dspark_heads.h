// The sequential heads DSpark adds on top of the parallel block backbone (DESIGN §4):
//
//  Markov head (vanilla, rank r): logits_j = U_j + W₂·W₁[x_{j−1}], W₁: [V, r] an embedding
//    of the previous token (x₀ = the anchor), W₂: [V_h, r] (markov_w2 is Linear(r → V_h), so
//    the bias is the matrix-vector product W₂ · W₁[x]). W₁ lives here; W₂ has a row per
//    drafted token, so it belongs to each draft vocabulary's head (spec/draft_vocab_head.h).
//  Confidence head: z_j = w·[h_j ; W₁[x_{j−1}]] + b (the W₁ part only with
//    confidence_head_with_markov), h_j the block's final-norm hidden state at the slot that
//    produced U_j; the proposer reports c_j = sigmoid(z_j / T_j) with the calibrated T_j.
//
// With compute = bf16 the W₁ table is kept in bf16 (like the embedding table), so the
// Markov and confidence features are bf16 values.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "loader/safetensors.h"
#include "spec/drafter_config.h"

namespace dspark {

class DSparkHeads {
 public:
  DSparkHeads(const DrafterConfig& config, const WeightStore& weights, DType compute);

  bool has_markov() const { return rank_ > 0; }
  bool has_confidence() const { return !confidence_w_.empty(); }

  // out[i] = W₁[prev_tokens[i]] as f32 for i < n: [n, rank], the Markov features W₂ multiplies.
  void markov_features(const int32_t* prev_tokens, int64_t n, float* out) const;

  // z_j (before the temperature): hidden [hidden], prev_token = x_{j−1}.
  float confidence_logit(const float* hidden, int32_t prev_token) const;

 private:
  void markov_row(int32_t token, float* out) const;  // W₁[token] -> out [rank] as f32

  int64_t vocab_;
  int64_t hidden_;
  int64_t rank_;
  bool confidence_with_markov_;
  std::vector<float> w1_f32_;        // [vocab, rank] when compute is f32
  std::vector<uint16_t> w1_bf16_;    // [vocab, rank] when compute is bf16
  std::vector<float> confidence_w_;  // [hidden (+ rank)] or empty
  float confidence_b_ = 0.0f;
  mutable std::vector<float> feature_;  // [rank]
};

}  // namespace dspark
