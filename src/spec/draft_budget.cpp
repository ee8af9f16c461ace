#include "spec/draft_budget.h"

#include <algorithm>

#include "core/check.h"

namespace dspark {

DraftBudget::DraftBudget(int32_t num_speculative_tokens, int64_t max_running, std::shared_ptr<const StepCostTable> cost,
                         DrafterCostShape shape)
    : cost_(std::move(cost)),
      shape_(shape),
      drafter_cost_(max_running),
      expected_survival_(num_speculative_tokens, 0.0),
      predicted_survival_(num_speculative_tokens, 0.0),
      predicted_rounds_(num_speculative_tokens, 0),
      survival_(max_running, std::vector<double>(num_speculative_tokens)) {
  DSPARK_CHECK(cost_ != nullptr, "the adaptive speculation schedule needs a step-cost profile (SPS table)");
  views_.reserve(max_running);
  chosen_.reserve(max_running);
}

double DraftBudget::acceptance_estimate(size_t position, const SpecDecodeMetrics& measured) {
  // The pass rate measured at this position (accepted once every earlier draft was; not
  // accepted / drafted, which is already the survival through it and would compound in
  // the product).
  constexpr int64_t kMinObservations = 32;
  const auto& reached = measured.reached_per_position;
  const bool enough = position < reached.size() && reached[position] >= kMinObservations;
  return enough ? measured.position_pass_rate(static_cast<int32_t>(position)) : 1.0;
}

DraftPlan DraftBudget::drafts_to_make(int64_t num_decoding, const SpecDecodeMetrics& measured) {
  const int32_t k = static_cast<int32_t>(expected_survival_.size());
  const DrafterTime drafter = drafter_time(num_decoding);
  // Where the drafter's confidences decide what is verified, their recent mean is what
  // drafting is worth; elsewhere (no head, or positions it has not drafted yet) the
  // measured pass rates, optimistic where unmeasured, as the admission prices them.
  constexpr int64_t kMinPredictedRounds = 8;
  double a = 1.0;
  for (size_t i = 0; i < expected_survival_.size(); ++i) {
    if (predicted_rounds_[i] >= kMinPredictedRounds) a = std::min(a, predicted_survival_[i]);
    else a *= acceptance_estimate(i, measured);
    expected_survival_[i] = a;
  }
  // What would pay with a free drafter decides whether to measure the drafter again: bound
  // by its measured time, one slow measurement that made even the best case look unpaid
  // would never be measured again, and the drafter would stay off for good.
  const int32_t free_bound = PrefixScheduler::max_useful_drafts(num_decoding, k, *cost_);
  const int32_t useful = PrefixScheduler::expected_useful_drafts(num_decoding, free_bound, expected_survival_, *cost_);
  const int32_t bound = PrefixScheduler::max_useful_drafts(num_decoding, k, *cost_, drafter);
  const int32_t planned =
      PrefixScheduler::expected_useful_drafts(num_decoding, bound, expected_survival_, *cost_, drafter);
  DraftPlan plan{planned, planned};
  // With confidences each round's own decide how many of its drafts are verified, and a
  // mean plan undervalues the later drafts that confident rounds verify: the mean decides
  // whether drafting pays, then a block drafter drafts all that could pay for greedy
  // requests (DraftPlan), and every request at least one past the plan: the first draft the
  // admission cuts is what the online calibration learns from (spec/confidence_calibrator.h),
  // and so is the mean here, so a position never drafted would never come back.
  const bool predicted = predicted_rounds_[0] >= kMinPredictedRounds;
  const bool block = shape_ == DrafterCostShape::kPerStep;
  if (predicted && planned > 0) {
    const int32_t first_cut = std::min(bound, planned + 1);
    plan = {block ? bound : first_cut, first_cut};
  }
  constexpr int64_t kRemeasureEvery = 64;
  if (planned == 0 && useful > 0 && ++steps_without_drafting_ >= kRemeasureEvery) {
    const int32_t n = predicted && block ? free_bound : useful;
    plan = {n, n};
  }
  if (plan.greedy > 0) steps_without_drafting_ = 0;
  return plan;
}

void DraftBudget::record_predicted(std::span<const double> survival) {
  // A mean of every round until kWindow of them, then a moving mean of about the last
  // kWindow: the drafter's confidence moves with the text (and its online correction).
  constexpr int64_t kWindow = 64;
  for (size_t i = 0; i < survival.size() && i < predicted_survival_.size(); ++i) {
    int64_t& n = predicted_rounds_[i];
    n = std::min(n + 1, kWindow);
    predicted_survival_[i] += (survival[i] - predicted_survival_[i]) / static_cast<double>(n);
  }
}

void DraftBudget::record_drafting(int64_t num_drafting, int32_t max_drafts, double seconds) {
  if (num_drafting <= 0 || max_drafts <= 0) return;
  const double passes = shape_ == DrafterCostShape::kPerDraft ? static_cast<double>(max_drafts) : 1.0;
  drafter_cost_.record(num_drafting, seconds / passes);
}

void DraftBudget::record_target_step(int64_t num_tokens, double seconds) {
  step_time_ratio_.record(num_tokens, seconds, *cost_);
}

DrafterTime DraftBudget::drafter_time(int64_t num_drafting) const {
  const double seconds = drafter_cost_.seconds(num_drafting) / step_time_ratio_.ratio();
  return shape_ == DrafterCostShape::kPerDraft ? DrafterTime::per_draft_seconds(seconds) : DrafterTime(seconds);
}

double DraftBudget::choose_lengths(std::span<const Candidate> candidates, int64_t num_decoding,
                                   const SpecDecodeMetrics& measured, std::span<int32_t> lengths) {
  DSPARK_CHECK(lengths.size() == candidates.size() && static_cast<int64_t>(candidates.size()) <= num_decoding &&
                   candidates.size() <= survival_.size(),
               "choose_lengths: {} candidates, {} lengths, {} decoding", candidates.size(), lengths.size(), num_decoding);
  if (num_decoding == 0) return 0.0;
  views_.clear();
  for (size_t r = 0; r < candidates.size(); ++r) {
    const Candidate& c = candidates[r];
    std::vector<double>& a = survival_[r];
    double s = 1.0;
    for (int32_t i = 0; i < c.num_drafts; ++i) {
      const double p = c.confidence ? static_cast<double>(c.confidence[i]) : acceptance_estimate(i, measured);
      s *= std::clamp(p, 0.0, 1.0);
      a[i] = s;
    }
    views_.emplace_back(a.data(), c.num_drafts);
    if (c.confidence) record_predicted(views_.back());
  }
  // Requests without drafts still verify their anchor: they count in R with no candidates.
  for (int64_t i = static_cast<int64_t>(candidates.size()); i < num_decoding; ++i) views_.emplace_back();
  chosen_.assign(views_.size(), 0);
  // The drafter has run for the requests that drafted: its time is the step's overhead.
  int32_t max_drafts = 0;
  for (const Candidate& c : candidates) max_drafts = std::max(max_drafts, c.num_drafts);
  const double overhead = drafter_time(static_cast<int64_t>(candidates.size())).at(max_drafts);
  const double predicted = prefix_scheduler_.choose(views_, *cost_, chosen_, overhead);
  std::copy_n(chosen_.begin(), lengths.size(), lengths.begin());
  return predicted;
}

}  // namespace dspark
