// `dspark-train calibrate`: Sequential Temperature Scaling (sts.h) of a DSpark drafter's
// confidence head on held-out regen data, written into the drafter's config; the engine
// applies c_j = sigmoid(z_j / T_j).
//
// Held-out data: the regen records whose id hash falls below val_fraction — the same split
// `dspark-train draft` keeps out of training when given the same fraction; it spans every
// training source, and the greedy and temperature-1 answers alike. Two fits
// (draft_eval.h): for greedy requests (confidence_temperatures) on greedy verification
// outcomes computed as the engine drafts; for sampling requests
// (confidence_temperatures_sampled) on the survival probabilities of sampled verification
// at temperature 1, teacher forced. The temperatures go into DIR/config.json of the drafter
// given (an export, a checkpoint directory, or a run directory: then both RUN/checkpoint
// and RUN/drafter when present), and a report with per-position ECE before/after of both
// fits into DIR/calibration.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "train/draft/sts.h"

namespace CLI {
class App;
}

namespace dspark::train {

struct CalibrateOptions {
  std::filesystem::path target;   // the drafter's target
  std::filesystem::path drafter;  // export, checkpoint or run directory
  std::filesystem::path data;     // regen JSONL file or directory
  double val_fraction = 0.05;     // held-out split (match the training run)
  int64_t max_len = 512;
  int64_t max_sequences = 0;      // 0: every held-out sequence
  int64_t anchors = 64;           // blocks per sequence
  StsOptions sts;                 // bins (20), grid
  bool bf16 = true;
  int threads = 2;
  bool write = true;              // false: report only
  bool quiet = false;
};

struct CalibrateResult {
  StsResult sts;                  // greedy verification
  StsResult sts_sampled;          // sampled verification at temperature 1
  int64_t num_blocks = 0;         // greedy-determinable blocks
  int64_t num_sampled_blocks = 0;
  std::vector<std::filesystem::path> written;  // config files updated
};

CalibrateResult run_calibration(const CalibrateOptions& options);

// `dspark-train calibrate ...`
void add_calibrate_command(CLI::App& app);

}  // namespace dspark::train
