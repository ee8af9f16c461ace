#include "engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace dspark {
namespace {

float log_of(float p) { return p > 0.0f ? static_cast<float>(std::log(static_cast<double>(p))) : -std::numeric_limits<float>::infinity(); }

}  // namespace

TokenLogprob token_logprob(const float* probs, int64_t vocab, int32_t token, int32_t top_n) {
  DSPARK_CHECK(token >= 0 && token < vocab, "token_logprob: token {} outside [0, {})", token, vocab);
  DSPARK_CHECK(top_n >= 0 && top_n <= vocab, "token_logprob: top_n {} outside [0, {}]", top_n, vocab);
  TokenLogprob out;
  out.token = token;
  out.logprob = log_of(probs[token]);
  // One pass counting the tokens more likely (the rank) and keeping the n best in order
  // (n <= 20, so insertion is cheaper than a sort of the vocabulary). An equal probability
  // goes after the ones already kept: lower id first.
  std::vector<std::pair<int32_t, float>>& top = out.top;  // (token, probability) until the end
  top.reserve(static_cast<size_t>(top_n) + 1);
  const float chosen = probs[token];
  int32_t more_likely = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    const float p = probs[i];
    more_likely += p > chosen ? 1 : 0;
    if (top_n == 0 || (static_cast<int32_t>(top.size()) == top_n && !(p > top.back().second))) continue;
    auto at = std::upper_bound(top.begin(), top.end(), p,
                               [](float value, const std::pair<int32_t, float>& kept) { return value > kept.second; });
    top.insert(at, {static_cast<int32_t>(i), p});
    if (static_cast<int32_t>(top.size()) > top_n) top.pop_back();
  }
  for (auto& [id, value] : top) value = log_of(value);
  out.rank = more_likely + 1;
  return out;
}

}  // namespace dspark
