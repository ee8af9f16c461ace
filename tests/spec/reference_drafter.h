// A deliberately plain, scalar implementation of one block-drafter pass (DSpark / DFlash),
// written from the reference semantics and sharing no kernel code with the engine: the
// independent reference for the proposer's parity tests. Recomputes everything from the
// context's target hidden states each call (no cache), double accumulation.
//
//   ctx_p   = hidden_norm(fc(concat_l h_l[p]))                   p = 0 .. C−1
//   block   = embed([anchor, mask × (γ−1)]) at positions C .. C+γ−1
//   layer:  keys/values of ctx (k_norm, RoPE at p) and of the normed block; every block
//           query sees all of them; pre-norm residual attention + SwiGLU MLP
//   h       = norm(block);  U_j = lm_head(h[slot(j)]), slot(j) = j−1 (DSpark) or j (DFlash)
//   logits_j = U_j + W₂·f_j, f_j = W₁[x_{j−1}] (x₀ = anchor), plus for a contextual head
//           W_out·SiLU(W_in·[h_slot(j) ; W₁[x_{j−1}]]);  z_j = w·[h_slot(j) ; W₁[x_{j−1}]] + b
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "loader/config.h"
#include "spec/drafter_config.h"
#include "support/reference_ops.h"

namespace dspark::testing {

class ReferenceDrafter {
 public:
  // round_to_bf16 mirrors the engine's bf16 compute: matmul operands, the embedding table
  // and W₁ rounded to bf16, accumulation in higher precision.
  ReferenceDrafter(const std::filesystem::path& drafter_dir, const std::filesystem::path& target_dir,
                   bool round_to_bf16);

  struct Output {
    std::vector<float> hidden;             // [block_size, hidden] after the final norm
    std::vector<float> base_logits;        // [num_drafts, vocab] U_j
    std::vector<float> logits;             // [num_drafts, vocab] with the Markov term
    std::vector<float> confidence_logits;  // [num_drafts] z_j (empty without a head)
  };

  // context[l]: [C, target_hidden] hidden states of aux layer l at positions 0..C−1.
  // prev_tokens: x₀ (the anchor) .. x_{L−1}; the Markov / confidence terms of draft j use
  // prev_tokens[j−1]. L = prev_tokens.size() <= num_drafts.
  Output forward(const std::vector<std::vector<float>>& context, const std::vector<int32_t>& prev_tokens) const;

  const DrafterConfig& config() const { return config_; }

 private:
  DrafterConfig config_;
  bool bf16_;
  std::vector<float> embed_, lm_head_, fc_, hidden_norm_, final_norm_, w1_, w2_, conf_w_;
  std::vector<float> context_in_, context_out_;  // contextual Markov head [m, H + r], [r, m]
  float conf_b_ = 0.0f;
  std::vector<ref::LayerWeights> layers_;
};

}  // namespace dspark::testing
