// Scalar reference of the logits -> probabilities transform: full sorts, double precision.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/check.h"
#include "kernels/sampling.h"

namespace dspark::reference {

// Every kept token's key log p + G, in double, no pruning; lowest id on ties.
int32_t sample_gumbel_max(const float* probs, int64_t n, uint64_t seed, int64_t position) {
  double best_key = -std::numeric_limits<double>::infinity();
  int32_t best = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!(probs[i] > 0.0f)) continue;
    const double u = keyed_uniform(seed, position, static_cast<int32_t>(i));
    const double gumbel = -std::log(-std::log(u));
    const double key = std::log(static_cast<double>(probs[i])) + gumbel;
    if (key > best_key) {
      best_key = key;
      best = static_cast<int32_t>(i);
    }
  }
  DSPARK_CHECK(best >= 0, "sample_gumbel_max: no token has positive probability");
  return best;
}

void to_probs(const float* logits, float* probs, int64_t vocab_size, const SamplingParams& params,
              std::span<const int32_t> history, int64_t num_prompt_tokens) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  std::vector<double> w(static_cast<size_t>(vocab_size));
  for (int64_t i = 0; i < vocab_size; ++i) w[i] = std::isnan(logits[i]) ? neg_inf : logits[i];
  std::vector<bool> seen(static_cast<size_t>(vocab_size), false);
  for (const int32_t token : history) seen[static_cast<size_t>(token)] = true;
  for (int64_t i = 0; i < vocab_size; ++i) {
    if (!seen[i] || params.repetition_penalty == 1.0f) continue;
    // The penalty is applied in f32 as the engine does; only the later steps use double.
    const float l = static_cast<float>(w[i]);
    w[i] = l > 0.0f ? l / params.repetition_penalty : l * params.repetition_penalty;
  }
  std::vector<int64_t> count(static_cast<size_t>(vocab_size), 0);
  for (size_t k = static_cast<size_t>(num_prompt_tokens); k < history.size(); ++k) ++count[history[k]];
  for (int64_t i = 0; i < vocab_size; ++i) {
    if (count[i] == 0) continue;
    float l = static_cast<float>(w[i]);
    l -= params.frequency_penalty * static_cast<float>(count[i]);
    l -= params.presence_penalty;
    w[i] = l;
  }
  // The bias is added in f32, as the engine does.
  for (const auto& [token, bias] : params.logit_bias) w[token] = static_cast<float>(w[token]) + bias;
  std::fill(probs, probs + vocab_size, 0.0f);
  if (params.temperature <= 0.0f) {
    int64_t best = 0;
    for (int64_t i = 1; i < vocab_size; ++i)
      if (w[i] > w[best]) best = i;
    probs[best] = 1.0f;
    return;
  }
  std::vector<int64_t> order(static_cast<size_t>(vocab_size));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return w[a] > w[b] || (w[a] == w[b] && a < b); });
  int64_t n = vocab_size;
  if (params.top_k > 0 && params.top_k < vocab_size) n = params.top_k;
  std::vector<double> p(static_cast<size_t>(vocab_size), 0.0);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    p[order[i]] = std::exp((w[order[i]] - w[order[0]]) / params.temperature);
    total += p[order[i]];
  }
  // Sorted by logit is sorted by probability: the top-p prefix is a prefix of `order`.
  if (params.top_p < 1.0f) {
    double mass = 0.0;
    int64_t cut = 0;
    while (cut < n && mass < params.top_p * total) mass += p[order[cut++]];
    n = std::max<int64_t>(cut, 1);
  }
  double kept_total = 0.0;
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (p[order[i]] < params.min_p * p[order[0]]) continue;
    order[kept++] = order[i];
    kept_total += p[order[i]];
  }
  for (int64_t i = 0; i < kept; ++i) probs[order[i]] = static_cast<float>(p[order[i]] / kept_total);
}

}  // namespace dspark::reference
