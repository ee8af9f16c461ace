// `dspark-train calibrate`: Sequential Temperature Scaling (sts.h) of a DSpark drafter's
// confidence head on held-out regen data, written into the drafter's config; the engine
// applies c_j = sigmoid(z_j / T_j).
//
// Held-out data: the regen records whose id hash falls below val_fraction — the same split
// `dspark-train draft` keeps out of training when given the same fraction; it spans every
// training source. Two fits (draft_eval.h), each on the answers of its kind, since a greedy
// request follows the target's greedy path and a sampling one a sampled path, along which
// drafts survive far less often: for greedy requests (confidence_temperatures), greedy
// verification outcomes computed as the engine drafts, on the greedy answers; for sampling
// requests (confidence_temperatures_sampled), the survival probabilities of sampled
// verification at temperature 1, teacher forced, on the sampled answers. A record's kind
// is its "temperature" field; records without one (older files) serve both fits, and
// --greedy-data / --sampled-data name the files of each kind instead. The greedy fit also
// has repeat shifts, fitted in turn with its temperatures (sts.h). All of it goes into
// DIR/config.json of the drafter given (an export, a checkpoint directory, or a run
// directory: then both RUN/checkpoint and RUN/drafter when present), and a report with
// per-position ECE before/after of both fits into DIR/calibration.json.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "train/draft/sts.h"
#include "train/model/bf16_default.h"

namespace CLI {
class App;
}

namespace dspark::train {

struct CalibrateOptions {
  std::filesystem::path target;   // the drafter's target
  std::filesystem::path drafter;  // export, checkpoint or run directory
  std::filesystem::path data;     // regen JSONL file or directory
  std::filesystem::path greedy_data;   // the greedy fit's records instead (empty: data)
  std::filesystem::path sampled_data;  // the sampled fit's records instead (empty: data)
  double val_fraction = 0.05;     // held-out split (match the training run)
  int64_t max_len = 512;
  int64_t max_sequences = 0;      // held-out sequences, evenly spaced over the split (0: all)
  int64_t anchors = 64;           // blocks per sequence
  StsOptions sts;                 // bins (20), grid
  bool bf16 = bf16_autocast_by_default();
  int threads = 2;
  bool write = true;              // false: report only
  bool quiet = false;
};

struct CalibrateResult {
  StsResult sts;                  // greedy verification, STS alone (reported beside with_repeat_shifts)
  StsResult sts_sampled;          // sampled verification at temperature 1
  RepeatCalibration with_repeat_shifts;  // greedy verification, temperatures fitted with repeat shifts (written)
  int64_t num_blocks = 0;         // greedy-determinable blocks
  int64_t num_sampled_blocks = 0;
  int64_t num_greedy_sequences = 0;   // held-out sequences of each fit
  int64_t num_sampled_sequences = 0;
  std::vector<std::filesystem::path> written;  // config files updated
};

CalibrateResult run_calibration(const CalibrateOptions& options);

// `dspark-train calibrate ...`
void add_calibrate_command(CLI::App& app);

}  // namespace dspark::train
