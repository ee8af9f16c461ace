// Sequential Temperature Scaling (STS) of the DSpark confidence head (DESIGN §4).
//
// Data: per drafted block, the confidence logits z_1..z_D (before any temperature) and the
// survival s_j: under greedy verification the outcome, 1 when drafts 1..j were all accepted
// and 0 otherwise; under sampled verification its probability ∏_{i≤j} α_i (α_i the chance
// that draft i is accepted once drafts 1..i−1 were), in [0, 1]. Either way s is
// non-increasing along a block. The head's prediction of s_j is the cumulative product
// a_j = ∏_{i≤j} sigmoid(z_i / T_i).
//
// ECE (expected calibration error) of predictions against outcomes or their probabilities
// (a bin's mean s is then the expected fraction that survives): equal-width bins on
// [0, 1] (a prediction p goes to bin min(floor(p·bins), bins−1); kDefaultEceBins = 20, as
// the reference's reliability metrics use), ECE = Σ_b (n_b / n) · |mean p_b − mean s_b|.
//
// STS: for j = 1..D in order, T_j is the point of a 1-D log-spaced grid (odd size, so
// T = 1 is on it) minimising the ECE of a_j with T_1..T_{j−1} fixed at their chosen values;
// ECEs within tie_tolerance of the minimum count as equal and the T closest to 1 (in log)
// among them wins, so a position the data cannot inform (a_j already ~0, no survivals)
// keeps T ≈ 1 instead of a grid end. Temperature scaling is monotone, so the
// ranking of blocks by c_j is untouched. The engine applies c_j = sigmoid(z_j / T_j).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace dspark::train {

inline constexpr int kDefaultEceBins = 20;

struct ConfidenceData {
  int64_t num_drafts = 0;         // D
  std::vector<float> logits;      // [n, D] z_j
  std::vector<float> survival;    // [n, D] s_j in [0, 1]
  // [n] drafts 1..m of the block equal the continuation its context predicts by repeating
  // itself (spec/tail_match.h), for the repeat shifts; empty when not known.
  std::vector<int32_t> repeat_agreement;

  int64_t num_blocks() const { return num_drafts > 0 ? static_cast<int64_t>(logits.size()) / num_drafts : 0; }
};

double expected_calibration_error(std::span<const double> predicted, std::span<const float> observed,
                                  int num_bins = kDefaultEceBins);

// a_j for every block: [n, D]. With repeat_shifts {disagree, agree} (DrafterConfig::
// confidence_repeat_shifts; needs data.repeat_agreement) the conditional terms are
// sigmoid(z_j / T_j + shift).
std::vector<double> cumulative_survival(const ConfidenceData& data, std::span<const float> temperatures,
                                        std::span<const float> repeat_shifts = {});

struct PositionCalibration {
  double ece = 0;             // of a_j against s_j
  double mean_predicted = 0;  // mean a_j
  double mean_observed = 0;   // mean s_j
};
// Per position j = 1..D under the given temperatures (empty = all 1).
std::vector<PositionCalibration> calibration_report(const ConfidenceData& data, std::span<const float> temperatures,
                                                    int num_bins = kDefaultEceBins,
                                                    std::span<const float> repeat_shifts = {});

struct StsOptions {
  int num_bins = kDefaultEceBins;
  double min_temperature = 0.05;  // grid ends; the grid is symmetric in log around 1
  int grid_points = 401;          // odd
  double tie_tolerance = 1e-4;    // ECE differences below this are ties (prefer T near 1)
};

struct StsResult {
  std::vector<float> temperatures;          // [D]
  std::vector<PositionCalibration> before;  // T = 1
  std::vector<PositionCalibration> after;   // the chosen temperatures
};

// With repeat_shifts, the temperatures are fitted under those shifts (before: neither).
StsResult sequential_temperature_scaling(const ConfidenceData& data, const StsOptions& options = {},
                                         std::span<const float> repeat_shifts = {});

// Repeat shifts fitted after STS, on outcomes (greedy verification: survival 0 or 1) with
// data.repeat_agreement: for the drafts that disagree and those that agree, the δ that
// maximises the likelihood of every reached draft's outcome (drafts 1..j−1 survived) under
// c_j = sigmoid(z_j / T_j + δ), with a weak N(0, 100) prior that keeps δ finite when a group
// always (or never) survives. {disagree, agree}; a group with no reached draft gets 0.
std::array<float, 2> fit_repeat_shifts(const ConfidenceData& data, std::span<const float> temperatures);

// Temperatures and repeat shifts fitted in turn, from STS alone: shifts given the
// temperatures, then STS under those shifts, `rounds` times. sts.after applies both.
struct RepeatCalibration {
  StsResult sts;
  std::array<float, 2> shifts{};  // {disagree, agree}
};
RepeatCalibration fit_temperatures_and_repeat_shifts(const ConfidenceData& data, const StsOptions& options = {},
                                                     int rounds = 3);

}  // namespace dspark::train
