// Distillation of a draft language model (the classic draft-model baseline,
// `--speculator` a plain Hugging Face LM) into its frozen target on regenerated data, with
// the infrastructure of `dspark-train draft` and `eagle3`: the same regen records, held-out
// split and batches (pure in (seed, step)), the target pass for its logits, AdamW on the
// draft's parameters, the cosine schedule, bf16 autocast, checkpoints with exact resume,
// progress lines with tokens/s and ETA, and the export of RUN/drafter at the end.
//
// So the draft LM can be trained on the same data and budget (steps × sequences) as the
// learned drafters. It starts from a pretrained LM (--init-from, a Hugging Face directory
// with the target's tokenizer): a draft LM is a language model first.
//
// Per step: the loss of draft_lm_loss.h (forward KL to the target over the full vocabulary
// at every answer position). Validation on held-out sequences: mean KL, argmax agreement,
// and τ under greedy verification of K drafts, teacher forced: for every window of K answer
// tokens that are the target's own greedy tokens (so drafting would see the same prefix),
// 1 + the drafts in a row whose argmax is the target's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "train/model/bf16_default.h"
#include "train/step_loop.h"

namespace CLI {
class App;
}

namespace dspark::train {

struct DraftLmTrainOptions {
  std::filesystem::path target;     // target: Hugging Face directory or pretraining checkpoint
  std::filesystem::path data;       // regen JSONL file or directory of them
  std::filesystem::path out;        // run directory (resumes when it holds a checkpoint)
  std::filesystem::path init_from;  // the draft LM to start from (required unless resuming)
  double val_fraction = 0.05;       // held-out regen records (by id hash), as for draft
  int64_t max_len = 512;            // sequence cap (tokens)
  int64_t batch = 8;                // sequences per step
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
  int64_t log_every = 10;
  int64_t eval_every = 200;         // 0: only at the end
  int64_t eval_sequences = 64;      // held-out sequences per validation
  int64_t eval_drafts = 8;          // K of the greedy τ
  int64_t save_every = 200;         // 0: only at exit
  bool export_at_end = true;        // OUT/drafter
  bool quiet = false;

  void validate() const;
};

// first_step, last_step, losses (per step run here: the KL), interrupted,
// tokens_per_second: see StepLoopResult.
struct DraftLmTrainResult : StepLoopResult {
  std::vector<double> val_kl;         // per validation
  std::vector<double> val_tau_greedy; // per validation
};

DraftLmTrainResult run_draft_lm_training(const DraftLmTrainOptions& options);

// `dspark-train draft-lm ...`
void add_draft_lm_command(CLI::App& app);

}  // namespace dspark::train
