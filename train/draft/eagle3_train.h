// Training of an EAGLE-3 drafter against a frozen target on regenerated data, with the
// infrastructure of `dspark-train draft` (draft_train.h): the same regen records and
// batches (pure in (seed, step)), the target pass for aux hidden states and logits, AdamW on
// the drafter's parameters only, the cosine schedule, bf16 autocast, checkpoints with exact
// resume, progress lines with tokens/s and ETA, and the export of RUN/drafter at the end.
//
// Per step: the training-time test over every position of the batch (eagle3.h, --ttt-steps
// steps), the loss of eagle3_loss.h (forward KL to the target's distribution restricted to
// the draft vocabulary, step s weighted by --ttt-decay^s). The draft vocabulary (the
// --draft-vocab most frequent completion tokens of the training split) is chosen once,
// when the run starts fresh. Validation (eagle3_eval.h): tau under greedy verification of
// --eval-drafts (K = 8) drafts, drafted as the engine drafts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/model/bf16_default.h"
#include "train/step_loop.h"

namespace CLI {
class App;
}

namespace dspark::train {

struct Eagle3TrainOptions {
  // inputs / outputs
  std::filesystem::path target;     // target: Hugging Face directory or pretraining checkpoint
  std::filesystem::path data;       // regen JSONL file or directory of them
  std::filesystem::path out;        // run directory
  std::filesystem::path init_from;  // EAGLE-3 drafter (export or checkpoint) to start from (fresh optimizer)
  // drafter shape (ignored when resuming or with init_from)
  std::vector<int32_t> aux_layers;  // speculators convention; empty: default_eagle3_aux_layer_ids
  int64_t draft_vocab = 4096;       // V_d (at most the target's vocabulary)
  double init_std = 0.02;
  // training-time test
  int64_t ttt_steps = 3;
  double ttt_decay = 1.0;           // weight of step s: decay^s
  // data
  double val_fraction = 0.05;       // held-out regen records (by id hash), as for draft
  int64_t max_len = 512;            // sequence cap (tokens)
  int64_t batch = 8;                // sequences per step
  // optimisation (draft's defaults)
  int64_t steps = 2000;
  int64_t stop_after = 0;           // stop with a checkpoint after this many steps here; 0: never
  double lr = 6e-4;
  double min_lr = 6e-5;
  int64_t warmup = 50;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;
  bool bf16 = bf16_autocast_by_default();
  uint64_t seed = 42;
  int threads = 2;
  // reporting
  int64_t log_every = 10;
  int64_t eval_every = 200;         // 0: only at the end
  int64_t eval_sequences = 64;      // held-out sequences per validation
  int64_t eval_chains = 64;         // drafting chains per validation sequence
  int64_t eval_drafts = 8;          // K of the greedy verification
  int64_t save_every = 200;         // 0: only at exit
  bool export_at_end = true;        // OUT/drafter
  bool quiet = false;

  void validate() const;
};

// first_step, last_step, losses (per step run here), interrupted, tokens_per_second: see
// StepLoopResult.
struct Eagle3TrainResult : StepLoopResult {
  std::vector<std::vector<double>> accuracy;  // per step run here: [ttt steps]
  std::vector<double> val_tau_greedy;
};

Eagle3TrainResult run_eagle3_training(const Eagle3TrainOptions& options);

// `dspark-train eagle3 ...` (defined with the other drafter commands, draft_commands.cpp)
void add_eagle3_command(CLI::App& app);

}  // namespace dspark::train
