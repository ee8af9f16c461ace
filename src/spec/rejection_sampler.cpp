#include "spec/rejection_sampler.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/sampling.h"

namespace dspark {

RejectionSampler::RejectionSampler(int64_t vocab_size)
    : vocab_size_(vocab_size), residual_(static_cast<size_t>(std::max<int64_t>(vocab_size, 0))) {
  DSPARK_CHECK(vocab_size > 0, "RejectionSampler: vocab_size must be positive, got {}", vocab_size);
}

VerifyResult RejectionSampler::verify(const VerifyInput& input, Rng& rng) {
  DSPARK_CHECK(input.vocab_size == vocab_size_,
               "RejectionSampler: input vocab_size {} differs from the sampler's {}",
               input.vocab_size, vocab_size_);
  DSPARK_CHECK(input.target_probs != nullptr, "RejectionSampler: target_probs is null");
  for (const int32_t token : input.draft_tokens) {
    DSPARK_CHECK(token >= 0 && token < vocab_size_,
                 "RejectionSampler: draft token {} outside the vocabulary [0, {})", token,
                 vocab_size_);
  }
  if (input.greedy) return verify_greedy(input);
  if (input.position_keyed) return verify_position_keyed(input);

  const int64_t vocab = vocab_size_;
  const auto num_drafts = static_cast<int32_t>(input.draft_tokens.size());
  for (int32_t j = 0; j < num_drafts; ++j) {
    const int32_t x = input.draft_tokens[static_cast<size_t>(j)];
    const float* p = input.target_probs + j * vocab;                                  // [vocab]
    const float* q = input.draft_probs ? input.draft_probs + j * vocab : nullptr;     // [vocab]
    const double px = p[x];
    const double qx = q ? static_cast<double>(q[x]) : 1.0;
    // u * q < p: min(1, p/q) acceptance without a division, and well defined at q = 0.
    const double u = rng.uniform();
    if (u * qx < px) continue;
    return VerifyResult{j, sample_recovered(p, q, x, rng.uniform()), false};
  }
  const float* p_bonus = input.target_probs + num_drafts * vocab;  // [vocab]
  return VerifyResult{num_drafts, sample_from_probs(p_bonus, vocab, rng.uniform()), true};
}

VerifyResult RejectionSampler::verify_greedy(const VerifyInput& input) const {
  const int64_t vocab = vocab_size_;
  const auto num_drafts = static_cast<int32_t>(input.draft_tokens.size());
  for (int32_t j = 0; j < num_drafts; ++j) {
    const int32_t best = argmax(input.target_probs + j * vocab, vocab);
    if (input.draft_tokens[static_cast<size_t>(j)] != best) return VerifyResult{j, best, false};
  }
  return VerifyResult{num_drafts, argmax(input.target_probs + num_drafts * vocab, vocab), true};
}

VerifyResult RejectionSampler::verify_position_keyed(const VerifyInput& input) const {
  const int64_t vocab = vocab_size_;
  const auto num_drafts = static_cast<int32_t>(input.draft_tokens.size());
  // y_j: the token plain decoding would emit at position first_position + j.
  auto y = [&](int32_t j) {
    return sample_gumbel_max(input.target_probs + j * vocab, vocab, input.seed, input.first_position + j);
  };
  for (int32_t j = 0; j < num_drafts; ++j) {
    const int32_t token = y(j);
    if (input.draft_tokens[static_cast<size_t>(j)] != token) return VerifyResult{j, token, false};
  }
  return VerifyResult{num_drafts, y(num_drafts), true};
}

int32_t RejectionSampler::sample_recovered(const float* p, const float* q, int32_t draft, double u) {
  const int64_t vocab = vocab_size_;
  float* residual = residual_.data();  // [vocab]
  double mass = 0.0;
  if (q == nullptr) {
    // q = one-hot(draft): max(0, p - q) is p without the draft token.
    std::copy(p, p + vocab, residual);
    residual[draft] = 0.0f;
    for (int64_t i = 0; i < vocab; ++i) mass += residual[i];
  } else {
    for (int64_t i = 0; i < vocab; ++i) {
      const float r = std::max(p[i] - q[i], 0.0f);
      residual[i] = r;
      mass += r;
    }
  }
  // All entries are >= 0, so mass > 0 means sample_from_probs has something to draw from.
  if (!(mass > 0.0)) return sample_from_probs(p, vocab, u);
  return sample_from_probs(residual, vocab, u);
}

}  // namespace dspark
