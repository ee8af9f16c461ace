// Reading a generated token's log-probability, and its most likely alternatives, off the
// distribution it was drawn from.
#pragma once

#include <cstdint>

#include "engine/generation.h"

namespace dspark {

// probs: [vocab] a normalised distribution (zero outside its kept set). Returns
// log(probs[token]) and the top_n most likely tokens with their log-probabilities, most
// likely first, lower id first on ties. A zero probability reads as -inf. top_n <= vocab.
TokenLogprob token_logprob(const float* probs, int64_t vocab, int32_t token, int32_t top_n);

}  // namespace dspark
