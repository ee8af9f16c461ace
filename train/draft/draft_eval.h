// Offline evaluation of a drafter against its target on held-out regen sequences, and the
// data Sequential Temperature Scaling calibrates on.
//
// Blocks: every anchor of a sequence whose D labels all lie inside it (at most
// max_anchors per sequence, evenly spaced). One target pass and one drafter pass per batch.
//
// Greedy verification, exactly as the engine drafts and verifies a greedy request:
//   x_0 = anchor; x_j = argmax(U_j + W₂·W₁[x_{j−1}]) with the DRAFTED previous token;
//   z_j = w·[h_j ; W₁[x_{j−1}]] + b; y_j = argmax p_j (the target's greedy token).
//   Draft j is accepted when x_j = y_j and drafts 1..j−1 were. The target's p_j is read
//   along the stored sequence, so it is the target's distribution after the accepted prefix
//   only while the sequence itself follows the target's greedy path (t_{a+i} = y_i for the
//   accepted i); a block where it does not (sampled regen data, numeric near-ties) is
//   undeterminable and left out of the greedy numbers.
//   tau_greedy = 1 + mean accepted drafts per block (the bonus token counts, DESIGN §6);
//   accept_greedy[j] = fraction of blocks with drafts 1..j accepted (vLLM's per-position
//   acceptance); accept_conditional[j] = that / fraction with 1..j−1 accepted.
// Probabilistic (sampled verification at temperature 1, teacher forced):
//   α_j = 1 − ½‖q_j − p_j‖₁ with q_j the teacher-forced draft distribution (prev = t);
//   tau_expected = 1 + mean Σ_j ∏_{i≤j} α_i (the reference's tau_probabilistic);
//   tau_expected_sampled the same over the blocks of sampled answers only: the contexts a
//   temperature-1 request drafts in (greedy answers' contexts are far more predictable).
// Confidence data (DSpark with a confidence head), for greedy verification: z_1..z_D and the
// outcome s_j of every determinable block, as the engine would compute them (drafted
// previous tokens), and how many of its drafts agree with the context's repeat
// continuation (spec/tail_match.h); for sampled verification at temperature 1: z_j teacher forced (previous
// token = the stored one) and the survival probability s_j = ∏_{i≤j} α_i of every block.
#pragma once

#include <cstdint>
#include <vector>

#include "train/draft/regen_records.h"
#include "train/draft/sts.h"
#include "train/model/bf16_default.h"

namespace dspark::train {

class CausalLmImpl;
class DrafterImpl;

struct DraftEvalOptions {
  int64_t max_anchors = 64;  // blocks per sequence at most
  int64_t batch = 4;         // sequences per forward
  bool bf16 = bf16_autocast_by_default();          // autocast for target and drafter
  int32_t pad_id = 0;
};

struct DraftEvalResult {
  int64_t num_sequences = 0;
  int64_t num_blocks = 0;              // full blocks evaluated
  int64_t num_greedy_blocks = 0;       // of which greedy-determinable
  int64_t num_sampled_blocks = 0;      // of which in sampled answers (DraftSequence::sampled)
  double tau_greedy = 0;
  double tau_expected = 0;
  double tau_expected_sampled = 0;     // 0 when no held-out answer was sampled
  std::vector<double> accept_greedy;       // [D]
  std::vector<double> accept_conditional;  // [D]
  std::vector<double> alpha;               // [D] mean α_j
  double ce = 0;                           // mean teacher-forced CE per position (unweighted)
  ConfidenceData confidence;               // greedy: z and s of the determinable blocks (if any head)
  ConfidenceData confidence_sampled;       // temperature 1: z and ∏α of every block (if any head)
};

DraftEvalResult evaluate_drafter(const CausalLmImpl& target, const DrafterImpl& drafter,
                                 const std::vector<DraftSequence>& sequences, const DraftEvalOptions& options);

// "1.00 0.62 0.31 ..." for logs.
std::string format_rates(const std::vector<double>& rates);

}  // namespace dspark::train
