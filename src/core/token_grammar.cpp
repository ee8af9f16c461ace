#include "core/token_grammar.h"

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace dspark {

void apply_token_mask(std::span<const uint64_t> mask, float* logits, int64_t num_logits) {
  DSPARK_CHECK(static_cast<int64_t>(mask.size()) >= token_mask_words(num_logits),
               "apply_token_mask: {} mask words for {} logits", mask.size(), num_logits);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t w = 0; w < token_mask_words(num_logits); ++w) {
    const uint64_t word = mask[w];
    if (word == ~uint64_t{0}) continue;
    const int64_t end = std::min<int64_t>(64, num_logits - w * 64);
    for (int64_t b = 0; b < end; ++b) {
      if (((word >> b) & 1) == 0) logits[w * 64 + b] = kNegInf;
    }
  }
}

}  // namespace dspark
