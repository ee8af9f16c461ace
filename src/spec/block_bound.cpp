#include "spec/block_bound.h"

#include <cmath>
#include <map>
#include <numeric>

#include "core/check.h"

namespace dspark {
namespace {

// TV(p, (sum - p) / (n - 1)): p against the mean of the other n - 1 rows whose sum
// (p included) is `sum`.
double leave_one_out_tv(const float* p, const std::vector<double>& sum, int64_t n) {
  double tv = 0.0;
  for (size_t v = 0; v < sum.size(); ++v) tv += std::fabs(p[v] - (sum[v] - p[v]) / static_cast<double>(n - 1));
  return 0.5 * tv;
}

double one_plus_sum(const std::vector<double>& v) { return 1.0 + std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

double BlockBound::marginal_tau() const { return one_plus_sum(marginal_survival); }
double BlockBound::first_order_tau() const { return one_plus_sum(first_order_survival); }

BlockBound block_drafter_bound(const ContinuationSamples& c) {
  const int64_t S = c.num_samples, K = c.block, V = c.vocab;
  DSPARK_CHECK(S >= 2 && K >= 1 && V >= 1, "block_drafter_bound: {} samples of {} positions over {} tokens", S, K, V);
  DSPARK_CHECK(static_cast<int64_t>(c.probs.size()) == S * K * V && static_cast<int64_t>(c.tokens.size()) == S * K,
               "block_drafter_bound: {} probabilities and {} tokens for [{}, {}, {}]", c.probs.size(), c.tokens.size(),
               S, K, V);
  auto row = [&](int64_t s, int64_t j) { return c.probs.data() + (s * K + j) * V; };  // [V]
  std::vector<double> marginal_alive(S, 1.0), first_order_alive(S, 1.0);  // survival so far, per sample
  BlockBound bound;
  std::vector<double> sum(V);
  for (int64_t j = 0; j < K; ++j) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t s = 0; s < S; ++s)
      for (int64_t v = 0; v < V; ++v) sum[v] += row(s, j)[v];
    std::vector<double> marginal_tv(S);
    for (int64_t s = 0; s < S; ++s) marginal_tv[s] = leave_one_out_tv(row(s, j), sum, S);
    // First order. At j = 0 the previous token is the anchor, the same for all: the
    // marginal. At j = 1 the shared prefix and the first draft are all p depends on: exact.
    // Later, the mean over the other samples that drew the same previous draft.
    std::vector<double> first_order_tv = marginal_tv;
    if (j == 1) std::fill(first_order_tv.begin(), first_order_tv.end(), 0.0);
    if (j > 1) {
      std::map<int32_t, std::vector<int64_t>> by_previous;
      for (int64_t s = 0; s < S; ++s) by_previous[c.tokens[s * K + j - 1]].push_back(s);
      std::vector<double> group_sum(V);
      for (const auto& [token, members] : by_previous) {
        if (members.size() < 2) continue;  // nobody else drew it: the marginal
        std::fill(group_sum.begin(), group_sum.end(), 0.0);
        for (int64_t s : members)
          for (int64_t v = 0; v < V; ++v) group_sum[v] += row(s, j)[v];
        for (int64_t s : members)
          first_order_tv[s] = leave_one_out_tv(row(s, j), group_sum, static_cast<int64_t>(members.size()));
      }
    }
    double marginal = 0.0, first_order = 0.0;
    for (int64_t s = 0; s < S; ++s) {
      marginal_alive[s] *= 1.0 - marginal_tv[s];
      first_order_alive[s] *= 1.0 - first_order_tv[s];
      marginal += marginal_alive[s];
      first_order += first_order_alive[s];
    }
    bound.marginal_survival.push_back(marginal / static_cast<double>(S));
    bound.first_order_survival.push_back(first_order / static_cast<double>(S));
  }
  return bound;
}

}  // namespace dspark
