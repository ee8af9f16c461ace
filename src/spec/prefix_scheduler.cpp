#include "spec/prefix_scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

StepCostTable::StepCostTable(std::vector<double> steps_per_second) : sps_(std::move(steps_per_second)) {
  DSPARK_CHECK(!sps_.empty(), "a step-cost table needs at least one entry");
  for (size_t b = 0; b < sps_.size(); ++b) DSPARK_CHECK(sps_[b] > 0, "SPS({}) must be positive, got {}", b + 1, sps_[b]);
  for (size_t b = sps_.size() - 1; b > 0; --b) sps_[b - 1] = std::max(sps_[b - 1], sps_[b]);
}

double StepCostTable::sps(int64_t num_tokens) const {
  DSPARK_CHECK(num_tokens >= 1, "SPS is defined for batches of at least one token, got {}", num_tokens);
  const int64_t n = max_tokens();
  if (num_tokens <= n) return sps_[num_tokens - 1];
  // Past the table: time per step grows linearly at the last entry's time per token.
  const double seconds_per_token = 1.0 / (sps_[n - 1] * static_cast<double>(n));
  return 1.0 / (seconds_per_token * static_cast<double>(num_tokens));
}

namespace {

// Φ: tokens per second of a step that verifies batch tokens and is expected to accept τ,
// when the step also spends overhead seconds outside the target forward.
double step_rate(double tau, int64_t batch, const StepCostTable& cost, double overhead) {
  return tau / (1.0 / cost.sps(batch) + overhead);
}

}  // namespace

PrefixScheduler::PrefixScheduler(PrefixSchedulerOptions options) : options_(options) {}

double PrefixScheduler::choose(std::span<const std::span<const double>> survival, const StepCostTable& cost,
                               std::span<int32_t> lengths, double overhead_seconds) {
  DSPARK_CHECK(lengths.size() == survival.size(), "lengths has {} entries for {} requests", lengths.size(),
               survival.size());
  DSPARK_CHECK(overhead_seconds >= 0, "the step's overhead must be >= 0, got {}", overhead_seconds);
  const int64_t num_requests = static_cast<int64_t>(survival.size());
  std::fill(lengths.begin(), lengths.end(), 0);
  if (num_requests == 0) return 0;
  candidates_.clear();
  for (int32_t r = 0; r < num_requests; ++r) {
    for (size_t i = 0; i < survival[r].size(); ++i) {
      candidates_.push_back({survival[r][i], r, static_cast<int32_t>(i + 1)});
    }
  }
  // Highest survival first; ties: earlier position first (a prefix before its extension),
  // then lower request index, so the order is total and reproducible. Survival is
  // non-increasing along a request's drafts, so every position follows its predecessor.
  std::stable_sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
    if (a.survival != b.survival) return a.survival > b.survival;
    if (a.position != b.position) return a.position < b.position;
    return a.request < b.request;
  });

  int64_t batch = num_requests;
  double tau = static_cast<double>(num_requests);
  double best_phi = step_rate(tau, batch, cost, overhead_seconds);
  double best_tau = tau;
  // With search_past_drop, the plan at the best Φ seen is kept (rolled back to below).
  int64_t admitted = 0, best_admitted = 0;
  for (const Candidate& c : candidates_) {
    if (c.position != lengths[c.request] + 1 && !options_.search_past_drop) break;  // predecessor missing
    ++batch;
    tau += c.survival;
    const double phi = step_rate(tau, batch, cost, overhead_seconds);
    if (phi >= best_phi) {
      best_phi = phi;
      best_tau = tau;
      ++admitted;
      best_admitted = admitted;
      lengths[c.request] = c.position;
    } else if (options_.search_past_drop) {
      ++admitted;  // keep looking; commit later candidates only if Φ recovers above the best
      lengths[c.request] = c.position;
    } else {
      break;  // the early stop
    }
  }
  if (options_.search_past_drop && admitted != best_admitted) {
    // Roll back to the plan with the best Φ: the first best_admitted candidates.
    std::fill(lengths.begin(), lengths.end(), 0);
    for (int64_t k = 0; k < best_admitted; ++k) {
      const Candidate& c = candidates_[k];
      lengths[c.request] = std::max(lengths[c.request], c.position);
    }
  }
  return best_tau - static_cast<double>(num_requests);
}

int32_t PrefixScheduler::max_useful_drafts(int64_t num_requests, int32_t max_drafts, const StepCostTable& cost,
                                           DrafterTime drafter) {
  if (num_requests <= 0) return 0;
  DSPARK_CHECK(drafter.fixed >= 0 && drafter.per_draft >= 0, "the drafter's time must be >= 0, got {} + {}/draft",
               drafter.fixed, drafter.per_draft);
  const double baseline = step_rate(static_cast<double>(num_requests), num_requests, cost, drafter.fixed);
  int32_t useful = 0;
  for (int32_t n = 1; n <= max_drafts; ++n) {
    // Best case: every extra verified token is accepted.
    const double phi = step_rate(static_cast<double>(num_requests + n), num_requests + n, cost, drafter.at(n));
    if (phi >= baseline) useful = n;
  }
  return useful;
}

int32_t PrefixScheduler::expected_useful_drafts(int64_t num_requests, int32_t max_drafts,
                                                std::span<const double> expected_survival,
                                                const StepCostTable& cost, DrafterTime drafter) {
  if (num_requests <= 0) return 0;
  DSPARK_CHECK(static_cast<int64_t>(expected_survival.size()) >= max_drafts,
               "expected survival has {} positions for {} drafts", expected_survival.size(), max_drafts);
  DSPARK_CHECK(drafter.fixed >= 0 && drafter.per_draft >= 0, "the drafter's time must be >= 0, got {} + {}/draft",
               drafter.fixed, drafter.per_draft);
  const double plain_phi = static_cast<double>(num_requests) * cost.sps(num_requests);
  int32_t useful = 0;
  double useful_phi = 0;
  // For each n, choose() on num_requests identical requests with n drafts each and the
  // drafter's time for n as the step's overhead: candidates in survival order are every
  // request's position 1, then every position 2, ...; admitted one at a time until Φ
  // drops. With a per-draft time, a plan that stops below n is dominated by the plan for
  // fewer drafts, which costs less to draft; with a fixed time the overhead is the same for
  // every n, so the one admission for max_drafts holds every shorter plan and is run alone.
  const bool fixed_time = drafter.per_draft == 0;
  for (int32_t n = fixed_time ? max_drafts : 1; n <= max_drafts; ++n) {
    const double overhead = drafter.at(n);
    int64_t batch = num_requests;
    double tau = static_cast<double>(num_requests);
    double best_phi = step_rate(tau, batch, cost, overhead);
    int32_t reached = 0;
    for (int32_t level = 1; level <= n && reached == level - 1; ++level) {
      const double s = expected_survival[static_cast<size_t>(level - 1)];
      for (int64_t r = 0; r < num_requests; ++r) {
        const double phi = step_rate(tau + s, batch + 1, cost, overhead);
        if (phi < best_phi) break;
        ++batch;
        tau += s;
        best_phi = phi;
        reached = level;
      }
      if (batch < num_requests * (level + 1)) break;  // the admission stopped inside this level
    }
    if ((reached == n || fixed_time) && best_phi >= useful_phi) {
      useful = reached;
      useful_phi = best_phi;
    }
  }
  // Drafting must beat plain decoding, which pays no drafter.
  return useful_phi >= plain_phi ? useful : 0;
}

}  // namespace dspark
