#include "kernels/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"
#include "kernels/simd.h"

namespace dspark {
namespace {

// HF repetition penalty on one logit.
float penalize(float logit, float penalty) { return logit > 0.0f ? logit / penalty : logit * penalty; }

// NaN logits are treated as -inf (never chosen), so orderings stay strict.
float clean(float logit) { return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit; }

// top-p first sorts this many candidates, then four times more while the mass is short.
constexpr int64_t kTopPFirstChunk = 64;

}  // namespace

void SamplingParams::validate() const {
  DSPARK_CHECK(std::isfinite(temperature) && temperature >= 0.0f,
               "sampling: temperature must be a finite value >= 0 (0 = greedy), got {}", temperature);
  DSPARK_CHECK(top_k >= 0, "sampling: top_k must be >= 0 (0 = off), got {}", top_k);
  DSPARK_CHECK(top_p > 0.0f && top_p <= 1.0f, "sampling: top_p must be in (0, 1], got {}", top_p);
  DSPARK_CHECK(min_p >= 0.0f && min_p <= 1.0f, "sampling: min_p must be in [0, 1], got {}", min_p);
  DSPARK_CHECK(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f,
               "sampling: repetition_penalty must be a finite value > 0 (1 = off), got {}",
               repetition_penalty);
}

LogitsProcessor::LogitsProcessor(int64_t vocab_size)
    : vocab_size_(vocab_size), work_(static_cast<size_t>(vocab_size)), order_(static_cast<size_t>(vocab_size)) {
  DSPARK_CHECK(vocab_size > 0, "LogitsProcessor: vocab_size must be positive, got {}", vocab_size);
}

void LogitsProcessor::to_probs(const float* logits, float* probs, const SamplingParams& params,
                               std::span<const int32_t> history) {
  params.validate();
  const int64_t vocab = vocab_size_;
  float* w = work_.data();  // [vocab] adjusted logits
  for (int64_t i = 0; i < vocab; ++i) w[i] = clean(logits[i]);
  if (params.repetition_penalty != 1.0f) {
    // Computed from the original logit, so a token repeated in history is penalised once.
    for (const int32_t token : history) {
      DSPARK_CHECK(token >= 0 && token < vocab, "sampling: history token {} outside [0, {})", token, vocab);
      w[token] = penalize(clean(logits[token]), params.repetition_penalty);
    }
  }
  std::fill(probs, probs + vocab, 0.0f);
  if (params.greedy()) {
    probs[argmax(w, vocab)] = 1.0f;
    return;
  }

  int32_t* order = order_.data();  // [vocab] candidate token ids; the first n are kept
  std::iota(order, order + vocab, 0);
  int64_t n = vocab;
  // Strict order: larger first, lower id on ties, so every cut keeps an exact count.
  auto by_logit = [w](int32_t a, int32_t b) { return w[a] > w[b] || (w[a] == w[b] && a < b); };
  if (params.top_k > 0 && params.top_k < vocab) {
    n = params.top_k;
    std::nth_element(order, order + n, order + vocab, by_logit);
  }
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, w[order[i]]);
  DSPARK_CHECK(max > -std::numeric_limits<float>::infinity(), "sampling: every logit is -inf or NaN");

  // Unnormalised probabilities exp((w - max) / T), written straight into probs.
  const float inv_t = 1.0f / params.temperature;
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp((w[order[i]] - max) * inv_t);
    probs[order[i]] = e;
    total += e;
  }

  if (params.top_p < 1.0f) {
    auto by_prob = [probs](int32_t a, int32_t b) {
      return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
    };
    const double target = static_cast<double>(params.top_p) * total;
    int64_t cut = n;
    for (int64_t sorted = std::min(n, kTopPFirstChunk);; sorted = std::min(n, sorted * 4)) {
      std::partial_sort(order, order + sorted, order + n, by_prob);
      double mass = 0.0;
      int64_t i = 0;
      while (i < sorted && mass < target) mass += probs[order[i++]];
      if (mass >= target || sorted == n) {
        cut = std::max<int64_t>(i, 1);
        break;
      }
    }
    for (int64_t i = cut; i < n; ++i) probs[order[i]] = 0.0f;
    n = cut;
  }

  if (params.min_p > 0.0f) {
    float top = 0.0f;
    for (int64_t i = 0; i < n; ++i) top = std::max(top, probs[order[i]]);
    const float threshold = params.min_p * top;
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (probs[order[i]] >= threshold) order[kept++] = order[i];
      else probs[order[i]] = 0.0f;
    }
    n = kept;
  }

  total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += probs[order[i]];
  const double inv_total = 1.0 / total;
  for (int64_t i = 0; i < n; ++i) probs[order[i]] = static_cast<float>(probs[order[i]] * inv_total);
}

int32_t argmax(const float* x, int64_t n) {
#ifdef __AVX512F__
  // Two passes: the maximum (NaN lanes skipped: vmaxps returns its second operand when the
  // first is NaN), then the first index holding it.
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 best = neg_inf;
  for (int64_t i = 0; i < n; i += 16)
    best = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, simd::lanes(n - i), x + i), best);
  const __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(best));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 valid = simd::lanes(n - i);
    const __mmask16 hit = _mm512_mask_cmp_ps_mask(valid, _mm512_maskz_loadu_ps(valid, x + i), top, _CMP_EQ_OQ);
    if (hit) return static_cast<int32_t>(i + __builtin_ctz(hit));
  }
  return 0;  // every value is NaN
#else
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best] || (std::isnan(x[best]) && !std::isnan(x[i]))) best = i;
  return static_cast<int32_t>(best);
#endif
}

int32_t sample_from_probs(const float* probs, int64_t n, double u) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += probs[i];
  const double target = u * total;
  double cumulative = 0.0;
  int64_t last_positive = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (probs[i] > 0.0f) last_positive = i;
    cumulative += probs[i];
    if (cumulative > target) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last_positive);  // u * total rounded up to the full mass
}

}  // namespace dspark
