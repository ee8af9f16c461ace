#include "kernels/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/simd.h"

namespace dspark {
namespace {

// HF repetition penalty on one logit.
float penalize(float logit, float penalty) { return logit > 0.0f ? logit / penalty : logit * penalty; }

// NaN logits are treated as -inf (never chosen), so orderings stay strict.
float clean(float logit) { return std::isnan(logit) ? -std::numeric_limits<float>::infinity() : logit; }

// top-p sorts candidate ranges of at most this many; larger ones are halved first.
constexpr int64_t kTopPSortBelow = 256;

// probs[i] = exp((w[i] - max) * inv_t) for all i; returns their sum (fixed order, double).
DSPARK_AVX512_BEGIN
double exp_all_avx512(const float* w, float* probs, int64_t n, float max, float inv_t) {
  const __m512 m = _mm512_set1_ps(max), scale = _mm512_set1_ps(inv_t);
  __m512d sum_lo = _mm512_setzero_pd(), sum_hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 valid = simd::lanes(n - i);
    const __m512 x = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(valid, w + i), m), scale);
    const __m512 e = _mm512_maskz_mov_ps(valid, simd::exp(x));
    _mm512_mask_storeu_ps(probs + i, valid, e);
    sum_lo = _mm512_add_pd(sum_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    sum_hi = _mm512_add_pd(sum_hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(sum_lo, sum_hi));
}
DSPARK_AVX512_END

// The same with 8 lanes (AVX2, the build's baseline).
double exp_all_avx2(const float* w, float* probs, int64_t n, float max, float inv_t) {
  const __m256 m = _mm256_set1_ps(max), scale = _mm256_set1_ps(inv_t);
  __m256d sum_lo = _mm256_setzero_pd(), sum_hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i valid = simd::lanes8(n - i);
    const __m256 x = _mm256_mul_ps(_mm256_sub_ps(_mm256_maskload_ps(w + i, valid), m), scale);
    const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(valid), simd::exp8(x));
    _mm256_maskstore_ps(probs + i, valid, e);
    sum_lo = _mm256_add_pd(sum_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    sum_hi = _mm256_add_pd(sum_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  const __m256d sum = _mm256_add_pd(sum_lo, sum_hi);
  const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(sum), _mm256_extractf128_pd(sum, 1));
  return _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
}

double exp_all(const float* w, float* probs, int64_t n, float max, float inv_t) {
  if (simd::wide()) return exp_all_avx512(w, probs, n, max, inv_t);
  return exp_all_avx2(w, probs, n, max, inv_t);
}

// Moves to the front of order[0, n) every candidate that top-p could keep and returns their
// count. Probabilities are bucketed by their top float bits (exponent + 3 mantissa bits,
// monotone in the value); walking buckets from the top, once the mass reaches target every
// candidate below the next bucket is certainly cut: the candidates above already hold the
// target mass, so the sorted prefix ends before them. One extra bucket is kept so rounding
// of the bucket sums cannot decide the cut.
int64_t drop_far_tail(int32_t* order, int64_t n, const float* probs, double target) {
  constexpr int kShift = 20;
  constexpr int kBuckets = 1 << (31 - kShift);  // non-negative floats
  auto bucket = [probs](int32_t token) {
    uint32_t bits;
    std::memcpy(&bits, &probs[token], sizeof(bits));
    return static_cast<int>(bits >> kShift);
  };
  double mass[kBuckets] = {};
  for (int64_t i = 0; i < n; ++i) mass[bucket(order[i])] += probs[order[i]];
  double above = 0.0;
  int first = 0;  // lowest bucket kept
  for (int b = kBuckets - 1; b >= 0; --b) {
    above += mass[b];
    if (above >= target) {
      first = std::max(0, b - 1);
      break;
    }
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i)
    if (bucket(order[i]) >= first) std::swap(order[kept++], order[i]);
  return kept;
}

// Number of candidates top-p keeps: the length of the shortest prefix of `order` sorted by
// probability (higher first, lower id on ties) whose mass reaches target; at least 1.
// Rearranges order[0, n) so that prefix comes first. A selection guided by mass: halve the
// candidate range with nth_element, keep the upper half whole while its mass falls short,
// and sort only the final small range — linear time instead of sorting the vocabulary.
int64_t top_p_count(int32_t* order, int64_t n, const float* probs, double target) {
  auto by_prob = [probs](int32_t a, int32_t b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); };
  if (n > kTopPSortBelow) n = drop_far_tail(order, n, probs, target);
  int64_t lo = 0, hi = n;  // order[0, lo) is kept; the cut lies in (lo, hi]
  double need = target;    // mass still needed from order[lo, hi)
  while (hi - lo > kTopPSortBelow) {
    const int64_t mid = lo + (hi - lo) / 2;
    std::nth_element(order + lo, order + mid, order + hi, by_prob);
    double mass = 0.0;
    for (int64_t i = lo; i < mid; ++i) mass += probs[order[i]];
    if (mass >= need) {
      hi = mid;
    } else {
      need -= mass;
      lo = mid;
    }
  }
  std::sort(order + lo, order + hi, by_prob);
  double mass = 0.0;
  int64_t i = lo;
  while (i < hi && mass < need) mass += probs[order[i++]];
  return std::max<int64_t>(i, 1);
}

}  // namespace

void SamplingParams::validate() const {
  DSPARK_CHECK_REQUEST(std::isfinite(temperature) && temperature >= 0.0f,
                       "sampling: temperature must be a finite value >= 0 (0 = greedy), got {}", temperature);
  DSPARK_CHECK_REQUEST(top_k >= 0, "sampling: top_k must be >= 0 (0 = off), got {}", top_k);
  DSPARK_CHECK_REQUEST(top_p > 0.0f && top_p <= 1.0f, "sampling: top_p must be in (0, 1], got {}", top_p);
  DSPARK_CHECK_REQUEST(min_p >= 0.0f && min_p <= 1.0f, "sampling: min_p must be in [0, 1], got {}", min_p);
  DSPARK_CHECK_REQUEST(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f,
                       "sampling: repetition_penalty must be a finite value > 0 (1 = off), got {}",
                       repetition_penalty);
  DSPARK_CHECK_REQUEST(std::isfinite(presence_penalty) && presence_penalty >= -2.0f && presence_penalty <= 2.0f,
                       "sampling: presence_penalty must be in [-2, 2] (0 = off), got {}", presence_penalty);
  DSPARK_CHECK_REQUEST(std::isfinite(frequency_penalty) && frequency_penalty >= -2.0f && frequency_penalty <= 2.0f,
                       "sampling: frequency_penalty must be in [-2, 2] (0 = off), got {}", frequency_penalty);
  for (size_t i = 0; i < logit_bias.size(); ++i) {
    const auto [token, bias] = logit_bias[i];
    DSPARK_CHECK_REQUEST(token >= 0, "sampling: logit_bias token id {} is negative", token);
    DSPARK_CHECK_REQUEST(i == 0 || token > logit_bias[i - 1].first,
                         "sampling: logit_bias token ids must be strictly increasing, got {} after {}", token,
                         logit_bias[i - 1].first);
    DSPARK_CHECK_REQUEST(std::isfinite(bias) && bias >= -100.0f && bias <= 100.0f,
                         "sampling: logit_bias of token {} must be in [-100, 100], got {}", token, bias);
  }
}

int32_t SamplingParams::sort_logit_bias() {
  std::sort(logit_bias.begin(), logit_bias.end());
  for (size_t i = 1; i < logit_bias.size(); ++i)
    if (logit_bias[i].first == logit_bias[i - 1].first) return logit_bias[i].first;
  return -1;
}

LogitsProcessor::LogitsProcessor(int64_t vocab_size)
    : vocab_size_(vocab_size),
      work_(static_cast<size_t>(vocab_size)),
      order_(static_cast<size_t>(vocab_size)),
      counts_(static_cast<size_t>(vocab_size), 0) {
  DSPARK_CHECK(vocab_size > 0, "LogitsProcessor: vocab_size must be positive, got {}", vocab_size);
}

void LogitsProcessor::to_probs(const float* logits, float* probs, const SamplingParams& params,
                               std::span<const int32_t> history, int64_t num_prompt_tokens) {
  params.validate();
  const int64_t vocab = vocab_size_;
  float* w = work_.data();  // [vocab] adjusted logits
  for (int64_t i = 0; i < vocab; ++i) w[i] = clean(logits[i]);
  auto check = [vocab](int32_t token) {
    DSPARK_CHECK(token >= 0 && token < vocab, "sampling: history token {} outside [0, {})", token, vocab);
  };
  if (params.repetition_penalty != 1.0f) {
    // Computed from the original logit, so a token repeated in history is penalised once.
    for (const int32_t token : history) {
      check(token);
      w[token] = penalize(clean(logits[token]), params.repetition_penalty);
    }
  }
  if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
    DSPARK_CHECK(num_prompt_tokens >= 0 && num_prompt_tokens <= static_cast<int64_t>(history.size()),
                 "sampling: {} prompt tokens in a history of {}", num_prompt_tokens, history.size());
    const std::span<const int32_t> output = history.subspan(static_cast<size_t>(num_prompt_tokens));
    int32_t* counts = counts_.data();
    // Checked before any count moves, so a bad id cannot leave the scratch dirty.
    if (params.repetition_penalty == 1.0f) {
      for (const int32_t token : output) check(token);
    }
    for (const int32_t token : output) ++counts[token];
    // Each distinct token once (its count is reset on first visit), in f32 as the
    // reference does: frequency term first, then presence.
    for (const int32_t token : output) {
      if (counts[token] == 0) continue;
      w[token] -= params.frequency_penalty * static_cast<float>(counts[token]);
      w[token] -= params.presence_penalty;
      counts[token] = 0;
    }
  }
  for (const auto& [token, bias] : params.logit_bias) {
    DSPARK_CHECK(token < vocab, "sampling: logit_bias token {} outside [0, {})", token, vocab);
    w[token] += bias;
  }
  std::fill(probs, probs + vocab, 0.0f);
  if (params.greedy()) {
    probs[argmax(w, vocab)] = 1.0f;
    return;
  }

  int32_t* order = order_.data();  // [vocab] candidate token ids; the first n are kept
  const bool top_k = params.top_k > 0 && params.top_k < vocab;
  const bool filtered = top_k || params.top_p < 1.0f || params.min_p > 0.0f;
  if (filtered) std::iota(order, order + vocab, 0);
  int64_t n = vocab;
  // Strict order: larger first, lower id on ties, so every cut keeps an exact count.
  auto by_logit = [w](int32_t a, int32_t b) { return w[a] > w[b] || (w[a] == w[b] && a < b); };
  if (top_k) {
    n = params.top_k;
    std::nth_element(order, order + n, order + vocab, by_logit);
  }
  float max = -std::numeric_limits<float>::infinity();
  if (top_k) {
    for (int64_t i = 0; i < n; ++i) max = std::max(max, w[order[i]]);
  } else {
    max = w[argmax(w, vocab)];
  }
  DSPARK_CHECK(max > -std::numeric_limits<float>::infinity(), "sampling: every logit is -inf or NaN");

  // Unnormalised probabilities exp((w - max) / T), written straight into probs.
  const float inv_t = 1.0f / params.temperature;
  double total = 0.0;
  if (n == vocab) {
    total = exp_all(w, probs, vocab, max, inv_t);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float e = std::exp((w[order[i]] - max) * inv_t);
      probs[order[i]] = e;
      total += e;
    }
  }

  if (params.top_p < 1.0f) {
    const int64_t cut = top_p_count(order, n, probs, static_cast<double>(params.top_p) * total);
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

  if (!filtered) {  // every token kept: plain passes, no indirection
    const float inv_total = static_cast<float>(1.0 / total);
    for (int64_t i = 0; i < vocab; ++i) probs[i] *= inv_total;
    return;
  }
  total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += probs[order[i]];
  const double inv_total = 1.0 / total;
  for (int64_t i = 0; i < n; ++i) probs[order[i]] = static_cast<float>(probs[order[i]] * inv_total);
}

namespace {
DSPARK_AVX512_BEGIN
int32_t argmax_avx512(const float* x, int64_t n) {
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
}
DSPARK_AVX512_END
}  // namespace

// The first index of the largest value, NaNs skipped (both versions agree exactly).
int32_t argmax(const float* x, int64_t n) {
  if (simd::wide()) return argmax_avx512(x, n);
  // argmax_avx512 with 8 lanes.
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 best = neg_inf;
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 valid = _mm256_castsi256_ps(simd::lanes8(n - i));
    best = _mm256_max_ps(_mm256_blendv_ps(neg_inf, _mm256_maskload_ps(x + i, _mm256_castps_si256(valid)), valid), best);
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(best), _mm256_extractf128_ps(best, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const __m256 top = _mm256_set1_ps(_mm_cvtss_f32(m));
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i valid = simd::lanes8(n - i);
    const __m256 hit = _mm256_and_ps(_mm256_castsi256_ps(valid),
                                     _mm256_cmp_ps(_mm256_maskload_ps(x + i, valid), top, _CMP_EQ_OQ));
    if (const int bits = _mm256_movemask_ps(hit)) return static_cast<int32_t>(i + __builtin_ctz(bits));
  }
  return 0;  // every value is NaN
}

namespace {

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;     // SplitMix64's increment
constexpr uint64_t kSeedKey = 0x6a09e667f3bcc909ull;   // separates this noise from Rng(seed)
constexpr double kTwoPowMinus53 = 0x1.0p-53;

// Start of the SplitMix64 stream of (seed, position); token i's bits: mix64(base + (i+1) gamma).
uint64_t stream_base(uint64_t seed, int64_t position) {
  return mix64(mix64(seed ^ kSeedKey) + static_cast<uint64_t>(position) * kGamma);
}

// The odd 53-bit numerator m of u = m * 2^-53.
uint64_t numerator(uint64_t base, int64_t token) {
  return (mix64(base + static_cast<uint64_t>(token + 1) * kGamma) >> 11) | 1u;
}

// The exact Gumbel-max key log p + G, in double; the reference computes the same expression.
double gumbel_key(float p, double u) { return std::log(static_cast<double>(p)) - std::log(-std::log(u)); }

// Pruning: token i can beat the best key k only if p_i / E_i > e^k with E_i = -log u_i >=
// 1 - u_i; so tokens with p_i < e^k (1 - eps) (1 - u_i) are skipped. eps = 1e-9 covers the
// rounding of the bound and of the keys (absolute errors ~ 1e-13), so a skipped token's
// computed key is certainly below k: the result equals the unpruned scan's exactly.
constexpr double kPruneSlack = 1.0 - 1e-9;

// Running argmax of the exact keys, in token order (strictly greater wins: lowest id on ties).
struct GumbelBest {
  double key = -std::numeric_limits<double>::infinity();
  int32_t token = -1;
  double threshold = 0.0;  // e^key (1 - eps): p_i must reach threshold * (1 - u_i)

  void offer(const float* probs, uint64_t base, int64_t i) {
    const double k = gumbel_key(probs[i], static_cast<double>(numerator(base, i)) * kTwoPowMinus53);
    if (k > key) {
      key = k;
      token = static_cast<int32_t>(i);
      threshold = std::exp(k) * kPruneSlack;
    }
  }
};

DSPARK_AVX512_BEGIN
// 8 tokens per iteration in double: SplitMix64 on 64-bit lanes (vpmullq), the bound
// p >= threshold * (1 - u) as a mask, exact keys only for the lanes it leaves.
void gumbel_scan_avx512(const float* probs, int64_t n, uint64_t base, GumbelBest& best) {
  const __m512i gamma = _mm512_set1_epi64(static_cast<int64_t>(kGamma));
  const __m512i c1 = _mm512_set1_epi64(static_cast<int64_t>(0xbf58476d1ce4e5b9ull));
  const __m512i c2 = _mm512_set1_epi64(static_cast<int64_t>(0x94d049bb133111ebull));
  const __m512i one = _mm512_set1_epi64(1);
  const __m512i two53 = _mm512_set1_epi64(int64_t{1} << 53);
  const __m512d scale = _mm512_set1_pd(kTwoPowMinus53);
  // z_i = base + (i + 1) gamma for lanes i .. i + 7, advanced by 8 gamma per iteration.
  __m512i z = _mm512_add_epi64(_mm512_set1_epi64(static_cast<int64_t>(base)),
                               _mm512_mullo_epi64(_mm512_setr_epi64(1, 2, 3, 4, 5, 6, 7, 8), gamma));
  const __m512i step = _mm512_set1_epi64(static_cast<int64_t>(8 * kGamma));
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 valid = static_cast<__mmask8>(n - i >= 8 ? 0xff : (1u << (n - i)) - 1);
    const __m512d p = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(valid, probs + i));
    __m512i h = z;
    h = _mm512_mullo_epi64(_mm512_xor_si512(h, _mm512_srli_epi64(h, 30)), c1);
    h = _mm512_mullo_epi64(_mm512_xor_si512(h, _mm512_srli_epi64(h, 27)), c2);
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 31));
    const __m512i m = _mm512_or_si512(_mm512_srli_epi64(h, 11), one);
    // 1 - u = (2^53 - m) 2^-53, exact.
    const __m512d one_minus_u = _mm512_mul_pd(_mm512_cvtepi64_pd(_mm512_sub_epi64(two53, m)), scale);
    const __m512d bound = _mm512_mul_pd(_mm512_set1_pd(best.threshold), one_minus_u);
    __mmask8 live = _mm512_mask_cmp_pd_mask(valid, p, _mm512_setzero_pd(), _CMP_GT_OQ);
    live = _mm512_mask_cmp_pd_mask(live, p, bound, _CMP_GE_OQ);
    while (live) {
      const int lane = __builtin_ctz(live);
      live = static_cast<__mmask8>(live & (live - 1));
      const double before = best.threshold;
      best.offer(probs, base, i + lane);
      // A raised threshold may rule out the remaining lanes; re-test them.
      if (best.threshold != before && live) {
        live = _mm512_mask_cmp_pd_mask(live, p, _mm512_mul_pd(_mm512_set1_pd(best.threshold), one_minus_u),
                                       _CMP_GE_OQ);
      }
    }
    z = _mm512_add_epi64(z, step);
  }
}
DSPARK_AVX512_END

}  // namespace

double keyed_uniform(uint64_t seed, int64_t position, int32_t token) {
  return static_cast<double>(numerator(stream_base(seed, position), token)) * kTwoPowMinus53;
}

int32_t sample_gumbel_max(const float* probs, int64_t n, uint64_t seed, int64_t position) {
  const uint64_t base = stream_base(seed, position);
  GumbelBest best;
  if (simd::wide()) {
    gumbel_scan_avx512(probs, n, base, best);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      if (!(probs[i] > 0.0f)) continue;
      const double one_minus_u = static_cast<double>((uint64_t{1} << 53) - numerator(base, i)) * kTwoPowMinus53;
      if (static_cast<double>(probs[i]) >= best.threshold * one_minus_u) best.offer(probs, base, i);
    }
  }
  DSPARK_CHECK(best.token >= 0, "sample_gumbel_max: no token has positive probability");
  return best.token;
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
