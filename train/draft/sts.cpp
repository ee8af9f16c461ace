#include "train/draft/sts.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace dspark::train {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

void check_data(const ConfidenceData& d) {
  DSPARK_CHECK(d.num_drafts >= 1, "calibration data: num_drafts must be >= 1");
  DSPARK_CHECK(d.logits.size() == d.survival.size() && d.logits.size() % static_cast<size_t>(d.num_drafts) == 0,
               "calibration data: {} logits and {} survival labels for {} drafts per block", d.logits.size(),
               d.survival.size(), d.num_drafts);
  DSPARK_CHECK(d.repeat_agreement.empty() || static_cast<int64_t>(d.repeat_agreement.size()) == d.num_blocks(),
               "calibration data: {} repeat agreements for {} blocks", d.repeat_agreement.size(), d.num_blocks());
}

// T_j for draft j (0-based); 1 past the given temperatures (none given: uncalibrated).
double temperature_at(std::span<const float> temperatures, int64_t j) {
  return j < static_cast<int64_t>(temperatures.size()) ? temperatures[j] : 1.0;
}

// The shift of block b's draft j (0-based) under repeat_shifts {disagree, agree}.
double repeat_shift(const ConfidenceData& d, std::span<const float> repeat_shifts, int64_t b, int64_t j) {
  if (repeat_shifts.empty()) return 0.0;
  DSPARK_CHECK(repeat_shifts.size() == 2, "repeat shifts: {} values, expected 2", repeat_shifts.size());
  DSPARK_CHECK(!d.repeat_agreement.empty(), "repeat shifts need the blocks' repeat agreement");
  return repeat_shifts[j < d.repeat_agreement[b] ? 1 : 0];
}

}  // namespace

double expected_calibration_error(std::span<const double> predicted, std::span<const float> observed,
                                  int num_bins) {
  DSPARK_CHECK(predicted.size() == observed.size(), "ECE: {} predictions but {} outcomes", predicted.size(),
               observed.size());
  DSPARK_CHECK(num_bins >= 1, "ECE: num_bins must be >= 1");
  if (predicted.empty()) return 0.0;
  std::vector<double> sum_p(num_bins, 0.0), sum_s(num_bins, 0.0);
  std::vector<int64_t> count(num_bins, 0);
  for (size_t i = 0; i < predicted.size(); ++i) {
    const double p = std::clamp(predicted[i], 0.0, 1.0);
    const int b = std::min(static_cast<int>(p * num_bins), num_bins - 1);
    sum_p[b] += p;
    sum_s[b] += observed[i];
    ++count[b];
  }
  double ece = 0;
  for (int b = 0; b < num_bins; ++b) ece += std::abs(sum_p[b] - sum_s[b]);  // = n_b·|mean p − mean s|
  return ece / static_cast<double>(predicted.size());
}

std::vector<double> cumulative_survival(const ConfidenceData& d, std::span<const float> temperatures,
                                        std::span<const float> repeat_shifts) {
  check_data(d);
  const int64_t n = d.num_blocks(), k = d.num_drafts;
  std::vector<double> out(static_cast<size_t>(n * k));
  for (int64_t b = 0; b < n; ++b) {
    double a = 1.0;
    for (int64_t j = 0; j < k; ++j) {
      a *= sigmoid(d.logits[b * k + j] / temperature_at(temperatures, j) + repeat_shift(d, repeat_shifts, b, j));
      out[b * k + j] = a;
    }
  }
  return out;
}

std::vector<PositionCalibration> calibration_report(const ConfidenceData& d, std::span<const float> temperatures,
                                                    int num_bins, std::span<const float> repeat_shifts) {
  const std::vector<double> a = cumulative_survival(d, temperatures, repeat_shifts);
  const int64_t n = d.num_blocks(), k = d.num_drafts;
  std::vector<PositionCalibration> out(static_cast<size_t>(k));
  std::vector<double> pred(static_cast<size_t>(n));
  std::vector<float> obs(static_cast<size_t>(n));
  for (int64_t j = 0; j < k; ++j) {
    double sp = 0, so = 0;
    for (int64_t b = 0; b < n; ++b) {
      pred[b] = a[b * k + j];
      obs[b] = d.survival[b * k + j];
      sp += pred[b];
      so += obs[b];
    }
    out[j].ece = expected_calibration_error(pred, obs, num_bins);
    out[j].mean_predicted = n > 0 ? sp / static_cast<double>(n) : 0.0;
    out[j].mean_observed = n > 0 ? so / static_cast<double>(n) : 0.0;
  }
  return out;
}

StsResult sequential_temperature_scaling(const ConfidenceData& d, const StsOptions& o,
                                         std::span<const float> repeat_shifts) {
  check_data(d);
  DSPARK_CHECK(o.grid_points >= 3 && o.grid_points % 2 == 1, "STS: grid_points must be odd and >= 3, got {}",
               o.grid_points);
  DSPARK_CHECK(o.min_temperature > 0 && o.min_temperature < 1, "STS: min_temperature must be in (0, 1), got {}",
               o.min_temperature);
  const int64_t n = d.num_blocks(), k = d.num_drafts;
  DSPARK_CHECK(n > 0, "STS: no calibration blocks");
  std::vector<double> grid(static_cast<size_t>(o.grid_points));
  const int half = o.grid_points / 2;
  const double step = -std::log(o.min_temperature) / half;
  for (int i = 0; i < o.grid_points; ++i) grid[i] = std::exp(static_cast<double>(i - half) * step);
  grid[half] = 1.0;

  StsResult result;
  result.before = calibration_report(d, {}, o.num_bins);
  std::vector<double> prefix(static_cast<size_t>(n), 1.0);  // a_{j−1} with the chosen temperatures
  std::vector<double> pred(static_cast<size_t>(n));
  std::vector<float> obs(static_cast<size_t>(n));
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t b = 0; b < n; ++b) obs[b] = d.survival[b * k + j];
    std::vector<double> ece(static_cast<size_t>(o.grid_points));
    double min_ece = 0;
    for (int i = 0; i < o.grid_points; ++i) {
      for (int64_t b = 0; b < n; ++b) {
        pred[b] = prefix[b] * sigmoid(d.logits[b * k + j] / grid[i] + repeat_shift(d, repeat_shifts, b, j));
      }
      ece[i] = expected_calibration_error(pred, obs, o.num_bins);
      min_ece = i == 0 ? ece[i] : std::min(min_ece, ece[i]);
    }
    double best_t = 0;
    for (int i = 0; i < o.grid_points; ++i) {
      if (ece[i] > min_ece + o.tie_tolerance) continue;
      if (best_t == 0 || std::abs(std::log(grid[i])) < std::abs(std::log(best_t))) best_t = grid[i];
    }
    result.temperatures.push_back(static_cast<float>(best_t));
    for (int64_t b = 0; b < n; ++b) {
      prefix[b] *= sigmoid(d.logits[b * k + j] / static_cast<double>(result.temperatures.back()) +
                           repeat_shift(d, repeat_shifts, b, j));
    }
  }
  result.after = calibration_report(d, result.temperatures, o.num_bins, repeat_shifts);
  return result;
}

std::array<float, 2> fit_repeat_shifts(const ConfidenceData& d, std::span<const float> temperatures) {
  check_data(d);
  const int64_t n = d.num_blocks(), k = d.num_drafts;
  DSPARK_CHECK(!d.repeat_agreement.empty(), "repeat shifts: the calibration data has no repeat agreement");
  // N(0, 100): keeps δ finite for a group that always (or never) survives; beside the
  // thousands of reached drafts of a real fit its pull is negligible.
  constexpr double kPriorPrecision = 0.01;
  std::array<float, 2> shifts{0.0f, 0.0f};
  for (int group = 0; group < 2; ++group) {
    double delta = 0;
    bool any = false;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double gradient = -kPriorPrecision * delta, curvature = kPriorPrecision;
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t j = 0; j < k; ++j) {
          if (j > 0 && d.survival[b * k + j - 1] < 0.5f) break;  // not reached
          if ((j < d.repeat_agreement[b] ? 1 : 0) != group) continue;
          const double p = sigmoid(d.logits[b * k + j] / temperature_at(temperatures, j) + delta);
          gradient += d.survival[b * k + j] - p;
          curvature += p * (1.0 - p);
          any = true;
        }
      }
      const double step = std::clamp(gradient / curvature, -2.0, 2.0);  // no overshoot on near-separable data
      delta += step;
      if (std::abs(step) < 1e-7) break;
    }
    shifts[group] = any ? static_cast<float>(delta) : 0.0f;
  }
  return shifts;
}

RepeatCalibration fit_temperatures_and_repeat_shifts(const ConfidenceData& d, const StsOptions& o, int rounds) {
  DSPARK_CHECK(rounds >= 1, "repeat calibration: rounds must be >= 1, got {}", rounds);
  RepeatCalibration out;
  out.sts = sequential_temperature_scaling(d, o);
  for (int round = 0; round < rounds; ++round) {
    out.shifts = fit_repeat_shifts(d, out.sts.temperatures);
    out.sts = sequential_temperature_scaling(d, o, out.shifts);
  }
  return out;
}

}  // namespace dspark::train
