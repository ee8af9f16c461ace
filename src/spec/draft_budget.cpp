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
      recent_(kRecentRounds * num_speculative_tokens, 0.0),
      recent_drafts_(kRecentRounds, 0),
      replay_tau_(num_speculative_tokens + 1, 0.0),
      replay_seconds_(num_speculative_tokens + 1, 0.0),
      replay_prefix_(num_speculative_tokens + 1, 0.0),
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

int32_t DraftBudget::drafts_to_make(int64_t num_decoding, const SpecDecodeMetrics& measured) {
  const int32_t k = static_cast<int32_t>(expected_survival_.size());
  const DrafterTime drafter = drafter_time(num_decoding);
  double a = 1.0;
  for (size_t i = 0; i < expected_survival_.size(); ++i) {
    a *= acceptance_estimate(i, measured);
    expected_survival_[i] = a;
  }
  // What would pay with a free drafter decides whether to measure the drafter again: bound
  // by its measured time, one slow measurement that made even the best case look unpaid
  // would never be measured again, and the drafter would stay off for good.
  const int32_t free_bound = PrefixScheduler::max_useful_drafts(num_decoding, k, *cost_);
  const int32_t useful = PrefixScheduler::expected_useful_drafts(num_decoding, free_bound, expected_survival_, *cost_);
  int32_t budget = PrefixScheduler::max_useful_drafts(num_decoding, k, *cost_, drafter);
  // Where confidences decide what is verified, the recent rounds say what drafting is worth.
  const bool replayed = num_recent_ >= kMinRecentRounds;
  budget = replayed ? replayed_plan(num_decoding, budget, drafter)
                    : PrefixScheduler::expected_useful_drafts(num_decoding, budget, expected_survival_, *cost_, drafter);
  constexpr int64_t kRemeasureEvery = 64;
  if (budget == 0 && useful > 0 && ++steps_without_drafting_ >= kRemeasureEvery) budget = replayed ? free_bound : useful;
  if (budget > 0) steps_without_drafting_ = 0;
  return budget;
}

void DraftBudget::record_round(std::span<const double> survival) {
  const size_t k = expected_survival_.size();
  const auto slot = static_cast<size_t>(num_recent_ % kRecentRounds);
  const size_t n = std::min(survival.size(), k);
  std::copy_n(survival.begin(), n, recent_.begin() + static_cast<std::ptrdiff_t>(slot * k));
  recent_drafts_[slot] = static_cast<int32_t>(n);
  ++num_recent_;
}

int32_t DraftBudget::replayed_plan(int64_t num_decoding, int32_t bound, const DrafterTime& drafter) {
  // The admission on each kept round (as num_decoding requests alike), with every draft
  // that could pay; a cap of n drafts then keeps each request's first min(L, n) of the L it
  // took (the admission takes a request's drafts in order). Tokens and seconds summed over
  // the rounds give each cap's rate: each round counts with its own confidence, not their
  // mean. The plan is the smallest cap within 1% of the best rate (a later draft that adds
  // less costs a sampled request about as much to make: 25 µs of a 1-2 ms round), plus the
  // first draft past it: the first draft the admission cuts is what online calibration
  // learns from (spec/confidence_calibrator.h), and what these rounds would show, so a
  // position never drafted would never come back.
  if (num_decoding <= 0 || bound <= 0) return 0;
  const size_t k = expected_survival_.size();
  const size_t rounds = static_cast<size_t>(std::min<int64_t>(num_recent_, kRecentRounds));
  const auto r = static_cast<double>(num_decoding);
  std::fill(replay_tau_.begin(), replay_tau_.end(), 0.0);
  std::fill(replay_seconds_.begin(), replay_seconds_.end(), 0.0);
  for (size_t q = 0; q < rounds; ++q) {
    const int32_t drafts = std::min(recent_drafts_[q], bound);
    const double* a = recent_.data() + q * k;
    views_.assign(static_cast<size_t>(num_decoding), std::span<const double>(a, drafts));
    chosen_.assign(views_.size(), 0);
    prefix_scheduler_.choose(views_, *cost_, chosen_, drafter.at(bound));
    replay_prefix_[0] = 0.0;  // [i]: a_1 + .. + a_i, the tokens a request verifying i drafts expects
    for (int32_t i = 0; i < drafts; ++i) replay_prefix_[i + 1] = replay_prefix_[i] + a[i];
    for (int32_t n = 1; n <= bound; ++n) {
      double tau = r;
      int64_t batch = num_decoding;
      for (const int32_t length : chosen_) {  // alike copies may stop a draft apart at a cut
        const int32_t kept = std::min(n, length);
        tau += replay_prefix_[kept];
        batch += kept;
      }
      replay_tau_[n] += tau;
      replay_seconds_[n] += 1.0 / cost_->sps(batch) + drafter.at(n);
    }
  }
  double best_rate = 0.0;
  for (int32_t n = 1; n <= bound; ++n) best_rate = std::max(best_rate, replay_tau_[n] / replay_seconds_[n]);
  if (best_rate < r * cost_->sps(num_decoding)) return 0;  // plain decoding does better
  int32_t n = 1;
  while (replay_tau_[n] / replay_seconds_[n] < 0.99 * best_rate) ++n;
  return std::min(bound, n + 1);
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
    if (c.confidence) record_round(views_.back());
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
