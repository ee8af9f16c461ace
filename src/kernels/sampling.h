// Turning logits into a probability distribution under a request's sampling parameters,
// and drawing from it. The same transform produces the target's p and the drafter's q,
// which lossless verification requires.
//
// Order (as vLLM/HF): repetition penalty -> frequency and presence penalties -> logit bias
// -> temperature -> top-k -> top-p -> min-p. The repetition penalty looks at every token of
// the history (prompt and output); frequency and presence penalties, as OpenAI defines
// them, only at the generated ones: logit -= frequency_penalty * count + presence_penalty
// * (count > 0). The logit bias (OpenAI's logit_bias) is added to the logits of the tokens
// it names, in f32, after the penalties (which see the model's own logits): +100 all but
// forces a token, -100 all but bans it, under greedy decoding as under sampling.
// temperature == 0 means greedy: the distribution is one-hot at the (penalised, biased) argmax,
// lowest index on ties. NaN logits count as -inf; if every logit is -inf, to_probs throws.
// top_k >= vocabulary size is the same as off.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace dspark {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int32_t top_k = 0;                // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;               // keep the smallest prefix with mass >= top_p; 1 = off
  float min_p = 0.0f;               // drop tokens with p < min_p * max p; 0 = off
  float repetition_penalty = 1.0f;  // HF rule: logit>0 ? logit/pen : logit*pen for seen tokens
  uint64_t seed = 0;                // per-request generator seed
  float presence_penalty = 0.0f;    // [-2, 2]; subtracted once from every generated token
  float frequency_penalty = 0.0f;   // [-2, 2]; subtracted per occurrence in the output
  // Draw every sampled token by Gumbel-max with noise keyed on (seed, position), and verify
  // drafts by matching that draw, instead of drawing from the request's Rng stream: the
  // output then depends only on the seed, never on how many drafts a round verified, so a
  // seeded request reproduces under any speculator, schedule and load. Set when the user
  // gives a seed; off otherwise, since standard rejection sampling accepts more drafts.
  bool position_keyed = false;
  // (token id, bias) pairs, ids strictly increasing, biases in [-100, 100]; empty = off.
  std::vector<std::pair<int32_t, float>> logit_bias;

  bool greedy() const { return temperature <= 0.0f; }
  // Whether to_probs reads the token history (some penalty is on).
  bool uses_history() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
  // Whether to_probs moves any logit before choosing (a penalty or a bias): if not, the
  // greedy token is the argmax of the model's own logits.
  bool shifts_logits() const { return uses_history() || !logit_bias.empty(); }
  // Sorts logit_bias by token id, the order validate() requires; returns a token id the list
  // names twice (-1 when none), for the caller to report in its own terms.
  int32_t sort_logit_bias();
  void validate() const;            // throws Error (kInvalidRequest) naming the bad field
};

// Owns scratch sized for one vocabulary, so the step loop does not allocate.
class LogitsProcessor {
 public:
  explicit LogitsProcessor(int64_t vocab_size);

  // logits: [vocab]; probs: [vocab] output, sums to 1, zero outside the kept set.
  // history: the sequence so far (prompt, then generated tokens and any drafts before
  // this position); its first num_prompt_tokens are the prompt. Only read when
  // params.uses_history().
  void to_probs(const float* logits, float* probs, const SamplingParams& params,
                std::span<const int32_t> history, int64_t num_prompt_tokens);

 private:
  int64_t vocab_size_;
  std::vector<float> work_;        // [vocab]
  std::vector<int32_t> order_;     // [vocab]
  std::vector<int32_t> counts_;    // [vocab] occurrences in the output; all zero between calls
};

// Index of the largest value; lowest index on ties.
int32_t argmax(const float* x, int64_t n);

// Inverse-CDF draw: smallest i with cumsum(probs)[i] > u * total; u in [0, 1).
int32_t sample_from_probs(const float* probs, int64_t n, double u);

// Gumbel-max draw with counter-based noise: the token at sequence position `position`
// (index into prompt + output) is argmax over kept tokens (probs[i] > 0) of
//   log probs[i] + G(seed, position, i),   G = -log(-log(u)), u = keyed_uniform(...),
// lowest id on ties. Since the G are independent standard Gumbel variables, the result is
// distributed exactly as probs / sum(probs) (the Gumbel-max trick), and it is a pure
// function of (probs, seed, position): no generator state. Throws when no token is kept.
// Cost: one hash and one multiply-compare per token; the two logarithms of the exact key
// only for tokens whose cheap bound (-log u >= 1 - u) cannot rule them out.
int32_t sample_gumbel_max(const float* probs, int64_t n, uint64_t seed, int64_t position);

// The uniform in (0, 1) behind G(seed, position, token), counter-based (SplitMix64 mixing,
// Steele et al. 2014): s = mix(seed ^ K), b = mix(s + position * gamma), h = mix(b +
// (token + 1) * gamma), u = ((h >> 11) | 1) * 2^-53 (odd 53-bit numerators: never 0 or 1,
// so G is finite). Each (seed, position) starts its own SplitMix64 stream at a
// pseudo-random state b and token i takes output i of it: values of different (position,
// token) pairs are independent unless two streams overlap within a vocabulary's length
// (probability ~ vocab / 2^63 per pair of positions).
double keyed_uniform(uint64_t seed, int64_t position, int32_t token);

namespace reference {
int32_t sample_gumbel_max(const float* probs, int64_t n, uint64_t seed, int64_t position);
void to_probs(const float* logits, float* probs, int64_t vocab_size, const SamplingParams& params,
              std::span<const int32_t> history, int64_t num_prompt_tokens);
}  // namespace reference

}  // namespace dspark
