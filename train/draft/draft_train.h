// Training of a DSpark or DFlash drafter against a frozen target on regenerated data.
//
// Per step: a batch of regen sequences (draft_batch.h, pure in (seed, step)); the target
// (no grad, bf16 autocast) gives the aux-layer hidden states and p at every position; the
// drafter drafts `anchors` blocks per sequence in one masked forward; loss of draft_loss.h
// (DSpark: 0.1·CE + 0.9·TV + 1.0·BCE; DFlash: CE only), AdamW on the drafter's parameters
// only (the shared embedding / LM head are not parameters), cosine schedule, clipping.
//
// A run lives in OUT: train.log, metrics.jsonl, checkpoint/ (drafter_io.h; exact resume as
// for pretraining: start again in the same OUT), and at the last step drafter/ (the
// speculators-layout export, bf16). Validation (draft_eval.h) on the held-out regen
// sequences prints tau (greedy and expected) and per-position acceptance.
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

struct DraftTrainOptions {
  // inputs / outputs
  std::filesystem::path target;     // target: Hugging Face directory or pretraining checkpoint
  std::filesystem::path data;       // regen JSONL file or directory of them
  std::filesystem::path out;        // run directory
  std::filesystem::path init_from;  // drafter export or checkpoint to start from (fresh optimizer)
  // with init_from: grow it to this many layers / this Markov rank (drafter_grow.h); 0 keeps its own
  int64_t grow_layers = 0;
  int64_t grow_markov_rank = 0;
  int64_t grow_markov_context_size = 0;  // > 0: a contextual Markov head this wide (drafter_grow.h)
  std::vector<int32_t> grow_aux_layers;  // non-empty: the source's aux ids followed by more
  // drafter shape (ignored when resuming or with init_from)
  std::string kind = "dspark";      // dspark | dflash
  int32_t block_size = 8;           // γ
  int64_t layers = 1;               // draft decoder layers
  std::vector<int32_t> aux_layers;  // aux_hidden_state_layer_ids (speculators convention); empty: default
  int64_t num_aux_layers = 3;       // for the default choice
  int32_t mask_token_id = -1;       // -1: the target tokenizer's <|mask|> (or its run's mask_id)
  int64_t markov_rank = 64;         // DSpark Markov head rank (0 disables)
  int64_t markov_context_size = 0;  // contextual Markov head MLP width (0: vanilla head)
  bool confidence_head = true;      // DSpark confidence head
  double init_std = 0.02;
  // data
  double val_fraction = 0.05;       // held-out regen records (by id hash)
  int64_t max_len = 512;            // sequence cap (tokens)
  int64_t batch = 8;                // sequences per step
  int64_t anchors = 32;             // blocks per sequence
  // loss (negative: the kind's default; DSpark 0.1 / 0.9 / 1.0, DFlash 1 / 0 / 0)
  double ce_weight = -1;
  double tv_weight = -1;
  double confidence_weight = -1;
  double kl_weight = 0;             // forward KL to the target's distribution (0: off, the paper's loss)
  double decay = 4.0;               // position weight exp(−(j−1)/decay)
  // optimisation
  int64_t steps = 2000;
  int64_t stop_after = 0;           // stop with a checkpoint after this many steps here; 0: never
  double lr = 6e-4;
  double min_lr = 6e-5;
  int64_t warmup = 50;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;
  // Decoder layers from this index on learn at lr × layer_lr_scale (-1: none), e.g. layers
  // just grown, whose zero output projections a warm start's small rate barely moves.
  int64_t layer_lr_scale_from = -1;
  double layer_lr_scale = 1.0;
  bool bf16 = bf16_autocast_by_default();
  uint64_t seed = 42;
  int threads = 2;
  // reporting
  int64_t log_every = 10;
  int64_t eval_every = 200;         // 0: only at the end
  int64_t eval_sequences = 64;      // held-out sequences per validation
  int64_t eval_anchors = 64;        // blocks per validation sequence
  int64_t save_every = 200;         // 0: only at exit
  bool export_at_end = true;        // OUT/drafter
  bool quiet = false;

  void validate() const;
  // Any of the grow_* options set (they apply to init_from).
  bool grows() const {
    return grow_layers > 0 || grow_markov_rank > 0 || grow_markov_context_size > 0 || !grow_aux_layers.empty();
  }
};

// first_step, last_step, losses (per step run here), interrupted, tokens_per_second: see
// StepLoopResult.
struct DraftTrainResult : StepLoopResult {
  std::vector<double> val_tau_greedy;
  std::vector<double> val_tau_expected;
};

DraftTrainResult run_draft_training(const DraftTrainOptions& options);

// `dspark-train draft ...`
void add_draft_command(CLI::App& app);

}  // namespace dspark::train
