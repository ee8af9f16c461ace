// Sequential Temperature Scaling on synthetic confidences: ECE by hand (0/1 outcomes and
// survival probabilities), and a confidence head that is miscalibrated by construction (the
// true survival probability of draft j is sigmoid(z_j / T*_j)) gets its temperatures back
// within 15% and its ECE reduced, from sampled outcomes and from the probabilities alike.
#include <array>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/rng.h"
#include "train/draft/sts.h"

namespace dspark::train {
namespace {

TEST(EceTest, HandComputed) {
  const std::vector<double> p = {0.1, 0.15, 0.8, 0.85, 0.9};
  const std::vector<float> s = {0, 1, 1, 1, 0};
  // 10 bins: {0.1, 0.15} -> |0.125 − 0.5|·2/5, {0.8, 0.85} -> |0.825 − 1|·2/5, {0.9} -> 0.9/5.
  EXPECT_NEAR(expected_calibration_error(p, s, 10), 0.15 + 0.07 + 0.18, 1e-12);
  // p = 1 falls in the last bin; a perfectly calibrated pair of bins has ECE 0.
  // Built element by element: GCC 12.2 with AVX-512 (-march=native here) miscompiles the
  // braced initialiser {1.0, 1.0, 0.0, 0.0} of a std::vector<double> into four 1.0s.
  std::vector<double> q;
  std::vector<float> t;
  for (int i = 0; i < 4; ++i) {
    q.push_back(i < 2 ? 1.0 : 0.0);
    t.push_back(i < 2 ? 1 : 0);
  }
  EXPECT_NEAR(expected_calibration_error(q, t, 20), 0.0, 1e-12);
  EXPECT_NEAR(expected_calibration_error(std::vector<double>{0.5}, std::vector<float>{1}, 20), 0.5, 1e-12);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

ConfidenceData synthetic(const std::vector<double>& true_t, int64_t n, uint64_t seed) {
  ConfidenceData d;
  d.num_drafts = static_cast<int64_t>(true_t.size());
  Rng rng(seed);
  auto normal = [&]() {
    const double u1 = std::max(rng.uniform(), 1e-12), u2 = rng.uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.141592653589793 * u2);
  };
  for (int64_t b = 0; b < n; ++b) {
    float alive = 1;
    for (size_t j = 0; j < true_t.size(); ++j) {
      const double z = 1.0 + 2.0 * normal();
      d.logits.push_back(static_cast<float>(z));
      alive = alive > 0 && rng.uniform() < sigmoid(z / true_t[j]) ? 1.0f : 0.0f;
      d.survival.push_back(alive);
    }
  }
  return d;
}

TEST(StsTest, RecoversTemperaturesOfAMiscalibratedHead) {
  const std::vector<double> true_t = {2.0, 0.6, 1.6};
  const ConfidenceData d = synthetic(true_t, 60000, 17);
  const StsResult r = sequential_temperature_scaling(d);
  ASSERT_EQ(r.temperatures.size(), 3u);
  double before = 0, after = 0;
  for (size_t j = 0; j < true_t.size(); ++j) {
    EXPECT_NEAR(r.temperatures[j] / true_t[j], 1.0, 0.15) << "position " << j + 1;
    EXPECT_LT(r.after[j].ece, r.before[j].ece) << "position " << j + 1;
    EXPECT_LT(r.after[j].ece, 0.02) << "position " << j + 1;
    EXPECT_NEAR(r.after[j].mean_predicted, r.after[j].mean_observed, 0.02);
    before += r.before[j].ece;
    after += r.after[j].ece;
  }
  EXPECT_LT(after, 0.3 * before);
}

TEST(EceTest, SurvivalProbabilitiesCountAsExpectedOutcomes) {
  // One bin holding predictions 0.2 and 0.4 against probabilities 0.5 and 0.7: |0.3 − 0.6|.
  EXPECT_NEAR(expected_calibration_error(std::vector<double>{0.2, 0.4}, std::vector<float>{0.5f, 0.7f}, 1), 0.3,
              1e-6);
  // Probabilities equal to the predictions: calibrated, whatever the bins.
  EXPECT_NEAR(expected_calibration_error(std::vector<double>{0.25, 0.75}, std::vector<float>{0.25f, 0.75f}, 20), 0.0,
              1e-7);
}

TEST(StsTest, RecoversTemperaturesFromSurvivalProbabilities) {
  // Sampled verification's labels: s_j = ∏_{i≤j} α_i, here the true sigmoid(z_i / T*_i).
  const std::vector<double> true_t = {1.8, 0.7, 1.3};
  ConfidenceData d = synthetic(true_t, 20000, 23);
  for (int64_t b = 0; b < d.num_blocks(); ++b) {
    double s = 1;
    for (size_t j = 0; j < true_t.size(); ++j) {
      s *= sigmoid(d.logits[b * 3 + j] / true_t[j]);
      d.survival[b * 3 + j] = static_cast<float>(s);
    }
  }
  const StsResult r = sequential_temperature_scaling(d);
  for (size_t j = 0; j < true_t.size(); ++j) {
    EXPECT_NEAR(r.temperatures[j] / true_t[j], 1.0, 0.1) << "position " << j + 1;
    EXPECT_LT(r.after[j].ece, 0.01) << "position " << j + 1;
    EXPECT_GT(r.before[j].ece, 0.02) << "position " << j + 1;
  }
}

TEST(StsTest, CalibratedHeadKeepsTemperatureNearOne) {
  const ConfidenceData d = synthetic({1.0, 1.0}, 40000, 3);
  const StsResult r = sequential_temperature_scaling(d);
  for (float t : r.temperatures) EXPECT_NEAR(t, 1.0, 0.15);
  EXPECT_LE(r.after[0].ece, r.before[0].ece);  // T = 1 is on the grid
}

TEST(StsTest, UninformedPositionKeepsTemperatureOne) {
  // Draft 2 is never accepted and its confidence is already ~0, so draft 3's temperature
  // cannot change a_3 measurably: the tie rule keeps it at 1.
  ConfidenceData d = synthetic({1.0, 1.0, 1.0}, 5000, 8);
  for (int64_t b = 0; b < d.num_blocks(); ++b) {
    d.logits[b * 3 + 1] = -30.0f;
    d.survival[b * 3 + 1] = 0;
    d.survival[b * 3 + 2] = 0;
  }
  const StsResult r = sequential_temperature_scaling(d);
  EXPECT_EQ(r.temperatures[2], 1.0f);
  EXPECT_LT(r.after[2].ece, 1e-4);
}

TEST(StsTest, CumulativeSurvivalUsesTemperatures) {
  ConfidenceData d;
  d.num_drafts = 2;
  d.logits = {2.0f, -1.0f};
  d.survival = {1, 0};
  const std::vector<float> t = {2.0f, 0.5f};
  const auto a = cumulative_survival(d, t);
  EXPECT_NEAR(a[0], sigmoid(1.0), 1e-12);
  EXPECT_NEAR(a[1], sigmoid(1.0) * sigmoid(-2.0), 1e-12);
  EXPECT_THROW(sequential_temperature_scaling(ConfidenceData{}), Error);
}

// Blocks whose survival follows sigmoid(z_j / T_j + shift) with a larger shift for the drafts
// that agree with the repeat continuation (the first m of each block, m random).
ConfidenceData with_repeat_agreement(const std::vector<float>& temperatures, double disagree, double agree, int64_t n,
                                     uint64_t seed) {
  ConfidenceData d;
  d.num_drafts = static_cast<int64_t>(temperatures.size());
  Rng rng(seed);
  for (int64_t b = 0; b < n; ++b) {
    const auto m = static_cast<int32_t>(rng.next_u64() % (temperatures.size() + 1)) * (rng.uniform() < 0.4 ? 1 : 0);
    d.repeat_agreement.push_back(m);
    float alive = 1;
    for (size_t j = 0; j < temperatures.size(); ++j) {
      const double z = 4.0 * rng.uniform() - 1.0;
      d.logits.push_back(static_cast<float>(z));
      const double shift = static_cast<int32_t>(j) < m ? agree : disagree;
      alive = alive > 0 && rng.uniform() < sigmoid(z / temperatures[j] + shift) ? 1.0f : 0.0f;
      d.survival.push_back(alive);
    }
  }
  return d;
}

TEST(RepeatShiftsTest, RecoversTheShiftsOfBothGroups) {
  const std::vector<float> t = {1.0f, 0.8f, 1.2f, 0.9f};
  const ConfidenceData d = with_repeat_agreement(t, -0.7, 2.5, 40000, 5);
  const std::array<float, 2> shifts = fit_repeat_shifts(d, t);
  EXPECT_NEAR(shifts[0], -0.7, 0.05);
  EXPECT_NEAR(shifts[1], 2.5, 0.15);
  // With the shifts the predictions are calibrated at every position; without, they are not.
  const auto with = calibration_report(d, t, kDefaultEceBins, shifts);
  const auto without = calibration_report(d, t);
  for (size_t j = 0; j < t.size(); ++j) {
    EXPECT_NEAR(with[j].mean_predicted, with[j].mean_observed, 0.01) << j;
    EXPECT_LT(with[j].ece, without[j].ece) << j;
  }
}

TEST(RepeatShiftsTest, StayFiniteWhenAGroupAlwaysSurvivesAndZeroWhenEmpty) {
  ConfidenceData d;
  d.num_drafts = 2;
  // Two blocks whose agreeing drafts all survive; no block has a disagreeing reached draft
  // other than the second block's last.
  d.logits = {0.0f, 0.0f, 0.0f, 0.0f};
  d.survival = {1, 1, 1, 0};
  d.repeat_agreement = {2, 1};
  const std::array<float, 2> shifts = fit_repeat_shifts(d, {});
  EXPECT_TRUE(std::isfinite(shifts[1]));
  EXPECT_GT(shifts[1], 3.0f);
  EXPECT_LT(shifts[0], -2.5f);
  d.repeat_agreement = {0, 0};
  d.survival = {0, 0, 0, 0};  // only first drafts are reached, none agrees
  EXPECT_EQ(fit_repeat_shifts(d, {})[1], 0.0f);
}

TEST(RepeatShiftsTest, CumulativeSurvivalAppliesTheShiftOfEachDraft) {
  ConfidenceData d;
  d.num_drafts = 2;
  d.logits = {2.0f, -1.0f};
  d.survival = {1, 0};
  d.repeat_agreement = {1};
  const std::vector<float> t = {2.0f, 0.5f};
  const std::vector<float> shifts = {-0.5f, 1.5f};
  const auto a = cumulative_survival(d, t, shifts);
  EXPECT_NEAR(a[0], sigmoid(1.0 + 1.5), 1e-12);
  EXPECT_NEAR(a[1], sigmoid(1.0 + 1.5) * sigmoid(-2.0 - 0.5), 1e-12);
  d.repeat_agreement = {};
  EXPECT_THROW(cumulative_survival(d, t, shifts), Error);  // shifts without the agreement
  d.repeat_agreement = {1, 2};
  EXPECT_THROW(cumulative_survival(d, t), Error);  // one agreement per block
}

TEST(RepeatShiftsTest, FittedInTurnWithTemperatures) {
  const std::vector<float> t = {0.6f, 1.5f, 0.8f};
  const ConfidenceData d = with_repeat_agreement(t, -0.6, 2.0, 40000, 9);
  const RepeatCalibration rc = fit_temperatures_and_repeat_shifts(d);
  EXPECT_NEAR(rc.shifts[0], -0.6, 0.15);
  EXPECT_NEAR(rc.shifts[1], 2.0, 0.3);
  for (size_t j = 0; j < t.size(); ++j) {
    EXPECT_NEAR(rc.sts.temperatures[j], t[j], 0.15 * t[j]) << j;
    EXPECT_LT(rc.sts.after[j].ece, 0.01) << j;
  }
}

}  // namespace
}  // namespace dspark::train
