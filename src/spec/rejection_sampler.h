// Lossless verification of one speculative round of one sequence (DESIGN §4).
//
// Given L drafted tokens x_0..x_{L-1}, the draft distributions q_j they were drawn from and
// the target distributions p_0..p_L (p_L is the position after the last draft), verify()
// returns how many leading drafts survive and the one extra token the round emits. The
// emitted tokens are draft_tokens[0 .. num_accepted) followed by next_token, so a round
// always emits num_accepted + 1 tokens. p and q must come from the same sampling
// transform (temperature, top-k, top-p, ...) of the request, or the output is not
// distributed as the target.
//
// Sampled requests (the standard speculative sampling rule; requests without a seed):
//   - draft x_j is accepted with probability min(1, p_j(x_j) / q_j(x_j)): with u ~ U[0, 1),
//     accept iff u * q_j(x_j) < p_j(x_j). When p >= q this always accepts, so p == q
//     accepts every draft; p(x) = 0 always rejects.
//   - q_j(x_j) = 0 means the draft could not have been drawn from q_j (a drafter whose
//     transform differs from the target's). The rule above then reads "ratio = infinity":
//     accept iff p_j(x_j) > 0. The emitted token is still inside p's support, but the
//     output is exactly target-distributed only when drafts really are drawn from q.
//   - at the first rejection the next token is drawn from normalize(max(0, p_j - q_j))
//     (the "recovered" token); if that residual has no mass in floating point (only
//     possible through rounding, since a rejection implies q_j(x_j) > p_j(x_j)), it is
//     drawn from p_j instead.
//   - if all L drafts are accepted, the "bonus" token is drawn from p_L.
//   - one-hot drafts (draft_probs == nullptr: n-gram or greedy drafters) use
//     q_j = one-hot(x_j), so x_j is accepted with probability p_j(x_j) and the residual is
//     p_j with x_j removed.
//
// Random draws of this rule, in this fixed order, one Rng::uniform() each: the acceptance test of
// x_0, x_1, ... up to and including the first rejected draft, then one draw for the
// recovered or bonus token. A round therefore consumes num_accepted + 1 draws when all
// drafts are accepted and num_accepted + 2 otherwise. Tokens are drawn with
// sample_from_probs (inverse CDF), so a round with L = 0 consumes exactly the one draw
// and yields exactly the token plain decoding yields from the same generator state. Since
// how many drafts a round verifies depends on the schedule (adaptive: on timing and load),
// the stream a sampled request consumes, and so its text, does too; hence the next rule.
//
// Position-keyed requests (SamplingParams::position_keyed, sampled; set when the user gave
// a seed): the coupled rule. Every token is a Gumbel-max draw whose noise is keyed on the
// request's seed and the token's sequence position t (sample_gumbel_max, kernels/
// sampling.h): y_t = argmax_i log p_t(i) + G(seed, t, i). With drafts x_0..x_{L-1} at
// positions t..t+L-1 (t = first_position), y_j is computed from p_j for j = 0, 1, ...;
// drafts are accepted while x_j == y_j, and next_token is y_j at the first mismatch, or
// the bonus y_L when all match. p_j depends only on the tokens before position t+j, which
// on the accepted prefix are exactly the y's, so the emitted tokens are the ones plain
// decoding with the same noise emits, whatever the drafts: the output is target-distributed
// (Gumbel-max is exact sampling) and independent of the schedule, the speculator and the
// load. Drafters draw x with the same noise on their q (x = argmax log q + G), so a draft
// matches whenever q's and p's Gumbel-max agree: with probability at least (1 - TV) /
// (1 + TV), TV the total variation between q and p. The standard rule's 1 - TV is the most
// any coupling reaches per token, so this accepts somewhat less, which is why only seeded
// requests use it. No Rng draws; draft_probs unused.
//
// Greedy requests (temperature 0; the p rows are one-hot at the argmax): accept while
// x_j == argmax(p_j) (lowest index on ties); next_token = argmax(p_j) at the first
// mismatch, or argmax(p_L) when all match. Greedy draws no random numbers and ignores
// draft_probs.
//
// Cost: sampled, O(L) probability look-ups plus O(vocab) for the final token;
// position-keyed, one sample_gumbel_max (O(vocab)) over each row it examines; greedy, one
// argmax over each row it examines. verify() does not allocate. A round's outcome feeds
// SpecDecodeMetrics::record_round(L, num_accepted).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"

namespace dspark {

struct VerifyInput {
  std::span<const int32_t> draft_tokens;  // [L], L >= 0
  const float* draft_probs = nullptr;     // [L, vocab] q after the request's transform, or
                                          // nullptr for one-hot drafts
  const float* target_probs = nullptr;    // [L + 1, vocab] p after the same transform
  int64_t vocab_size = 0;
  bool greedy = false;                    // temperature 0: p rows are one-hot at argmax
  bool position_keyed = false;            // sampled with the coupled rule (ignored when greedy)
  uint64_t seed = 0;                      // position_keyed: the request's seed
  int64_t first_position = 0;             // position_keyed: sequence position row 0 decides
};

struct VerifyResult {
  int32_t num_accepted = 0;  // leading drafts accepted, 0..L
  int32_t next_token = -1;   // recovered token (first rejection) or bonus token (all accepted)
  bool is_bonus = false;     // true when all L drafts were accepted
};

class RejectionSampler {
 public:
  explicit RejectionSampler(int64_t vocab_size);

  // Throws Error when the input does not match the vocabulary (size, a missing target
  // pointer, a draft token id outside [0, vocab)).
  VerifyResult verify(const VerifyInput& input, Rng& rng);

  int64_t vocab_size() const { return vocab_size_; }

 private:
  VerifyResult verify_greedy(const VerifyInput& input) const;
  VerifyResult verify_position_keyed(const VerifyInput& input) const;
  int32_t sample_recovered(const float* p, const float* q, int32_t draft, double u);

  int64_t vocab_size_;
  std::vector<float> residual_;  // [vocab] max(0, p - q) of the rejected position
};

}  // namespace dspark
