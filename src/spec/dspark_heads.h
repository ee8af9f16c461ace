// The sequential heads DSpark adds on top of the parallel block backbone (DESIGN §4):
//
//  Markov head (rank r): logits_j = U_j + W₂·f_j with the Markov feature f_j [r]:
//    vanilla     f_j = W₁[x_{j−1}], W₁: [V, r] an embedding of the previous token (x₀ = the
//                anchor): a bigram correction, the same whatever the context;
//    contextual  f_j = W₁[x_{j−1}] + W_out·SiLU(W_in·[h_j ; W₁[x_{j−1}]]), W_in: [m, H + r],
//                W_out: [r, m]: the correction for the previous token can depend on the
//                block's state (which continuation x_{j−1} picked out). With W_out = 0 it is
//                the vanilla head, which is how one is grown from a trained vanilla head.
//    W₂: [V_h, r] (markov_w2 is Linear(r → V_h), so the bias is the matrix-vector product
//    W₂ · f_j). W₁ and the MLP live here; W₂ has a row per drafted token, so it belongs to
//    each draft vocabulary's head (spec/draft_vocab_head.h).
//  Confidence head: z_j = w·[h_j ; W₁[x_{j−1}]] + b (the W₁ part only with
//    confidence_head_with_markov), h_j the block's final-norm hidden state at the slot that
//    produced U_j; the proposer reports c_j = sigmoid(z_j / T_j) with the calibrated T_j.
//
// With compute = bf16 the W₁ table is kept in bf16 (like the embedding table), so W₁[x]
// is a bf16 value. The contextual MLP runs on the Linear kernels (batch invariant: a row's
// feature never depends on how many requests draft beside it), with W_in split by its
// input: W_h·h_j for every draft row of a round in one product before the sequential stage
// (h_j does not depend on the drafts), only W_e·W₁[x_{j−1}] and W_out per position.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "kernels/linear.h"
#include "loader/safetensors.h"
#include "spec/drafter_config.h"

namespace dspark {

class DSparkHeads {
 public:
  // linear: the options of the contextual MLP's products; linear.max_rows bounds n of
  // markov_features, max_state_rows the rows of project_states.
  DSparkHeads(const DrafterConfig& config, const WeightStore& weights, const LinearOptions& linear,
              int64_t max_state_rows);

  bool has_markov() const { return rank_ > 0; }
  bool has_confidence() const { return !confidence_w_.empty(); }
  // The contextual MLP's packed weights (0 for a vanilla head): W_h once per round, W_e and
  // W_out once per draft position.
  size_t weight_bytes() const;

  // The contextual head's W_h·h_j for the round's draft rows, hidden [rows, hidden] (kept
  // until the next call); nothing for a vanilla head.
  void project_states(const float* hidden, int64_t rows);
  // out[i] = f_j of draft i < n: x_{j−1} = prev_tokens[i], state_rows[i] its row in the
  // last project_states() (read only by the contextual head): [n, rank], what W₂ multiplies.
  void markov_features(const int32_t* prev_tokens, const int32_t* state_rows, int64_t n, float* out);

  // z_j (before the temperature): hidden [hidden], prev_token = x_{j−1}.
  float confidence_logit(const float* hidden, int32_t prev_token) const;

 private:
  void markov_row(int32_t token, float* out) const;  // W₁[token] -> out [rank] as f32

  int64_t vocab_;
  int64_t hidden_;
  int64_t rank_;
  bool confidence_with_markov_;
  int64_t context_size_;             // m, 0 for the vanilla head
  std::vector<float> w1_f32_;        // [vocab, rank] when compute is f32
  std::vector<uint16_t> w1_bf16_;    // [vocab, rank] when compute is bf16
  std::vector<float> confidence_w_;  // [hidden (+ rank)] or empty
  float confidence_b_ = 0.0f;
  mutable std::vector<float> feature_;  // [rank]
  std::unique_ptr<Linear> context_h_;    // W_in's columns 0..hidden: W_h [m, hidden] (contextual head)
  std::unique_ptr<Linear> context_e_;    // W_in's last rank columns: W_e [m, rank]
  std::unique_ptr<Linear> context_out_;  // W_out [rank, m]
  std::vector<float> state_proj_;        // [max_state_rows, m] W_h · h_j
  std::vector<float> context_mid_;       // [max_rows, m] W_e · W₁[x_{j−1}], then + W_h·h_j, SiLU
  std::vector<float> context_delta_;     // [max_rows, rank] W_out · mid
};

}  // namespace dspark
