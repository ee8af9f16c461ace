#include "train/draft/draft_commands.h"

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/check.h"
#include "core/dtype.h"
#include "train/draft/calibrate.h"
#include "train/draft/draft_lm_train.h"
#include "train/draft/draft_train.h"
#include "train/draft/drafter_io.h"
#include "train/draft/drafter_vocab.h"
#include "train/draft/eagle3_io.h"
#include "train/draft/eagle3_train.h"
#include "train/draft/regen.h"

namespace dspark::train {

namespace fs = std::filesystem;

void add_draft_command(CLI::App& app) {
  auto o = std::make_shared<DraftTrainOptions>();
  auto* cmd = app.add_subcommand("draft", "Train a DSpark or DFlash drafter against a frozen target on regen data");
  cmd->add_option("--target", o->target, "Target: Hugging Face directory or pretraining checkpoint")->required();
  cmd->add_option("--data", o->data, "Regen JSONL file or directory")->required();
  cmd->add_option("--out", o->out, "Run directory (resumes when it holds a checkpoint)")->required();
  cmd->add_option("--init-from", o->init_from, "Start from this drafter (export or checkpoint; fresh optimizer)");
  cmd->add_option("--grow-layers", o->grow_layers,
                  "With --init-from: append inert decoder layers up to this many (0: the source's)")
      ->capture_default_str();
  cmd->add_option("--grow-markov-rank", o->grow_markov_rank,
                  "With --init-from: widen the Markov head to this rank, inert at first (0: the source's)")
      ->capture_default_str();
  cmd->add_option("--grow-markov-context-size", o->grow_markov_context_size,
                  "With --init-from: make the Markov head contextual with an MLP this wide (or widen it), inert at "
                  "first (0: the source's)")
      ->capture_default_str();
  cmd->add_option("--grow-aux-layers", o->grow_aux_layers,
                  "With --init-from: these aux_hidden_state_layer_ids, the source's followed by more; fc's columns "
                  "for the new ones start at zero");
  cmd->add_option("--layer-lr-scale-from", o->layer_lr_scale_from,
                  "Decoder layers from this index on learn at lr x --layer-lr-scale (-1: none)")
      ->capture_default_str();
  cmd->add_option("--layer-lr-scale", o->layer_lr_scale, "Learning-rate factor for --layer-lr-scale-from's layers")
      ->capture_default_str();
  cmd->add_option("--kind", o->kind, "dspark or dflash")->capture_default_str();
  cmd->add_option("--block-size", o->block_size, "Block size gamma")->capture_default_str();
  cmd->add_option("--layers", o->layers, "Draft decoder layers")->capture_default_str();
  cmd->add_option("--aux-layers", o->aux_layers,
                  "aux_hidden_state_layer_ids, speculators convention (id k = output of decoder layer k-1)");
  cmd->add_option("--num-aux-layers", o->num_aux_layers, "Aux layers of the default choice")->capture_default_str();
  cmd->add_option("--mask-token-id", o->mask_token_id, "Mask token id (-1: the tokenizer's <|mask|>)")
      ->capture_default_str();
  cmd->add_option("--markov-rank", o->markov_rank, "Markov head rank (DSpark; 0 disables)")->capture_default_str();
  cmd->add_option("--markov-context-size", o->markov_context_size,
                  "Contextual Markov head: its MLP width over [h_j ; W1[x_{j-1}]] (DSpark; 0: the vanilla head)")
      ->capture_default_str();
  cmd->add_option("--confidence-head", o->confidence_head, "Train the confidence head (DSpark)")->capture_default_str();
  cmd->add_option("--val-fraction", o->val_fraction, "Held-out regen records (id hash)")->capture_default_str();
  cmd->add_option("--max-len", o->max_len, "Sequence cap in tokens")->capture_default_str();
  cmd->add_option("--batch", o->batch, "Sequences per step")->capture_default_str();
  cmd->add_option("--anchors", o->anchors, "Anchor blocks per sequence")->capture_default_str();
  cmd->add_option("--ce-weight", o->ce_weight, "CE weight (-1: 0.1 DSpark, 1 DFlash)")->capture_default_str();
  cmd->add_option("--tv-weight", o->tv_weight, "TV weight (-1: 0.9 DSpark, 0 DFlash)")->capture_default_str();
  cmd->add_option("--confidence-weight", o->confidence_weight, "BCE weight (-1: 1 DSpark)")->capture_default_str();
  cmd->add_option("--kl-weight", o->kl_weight, "Forward KL(p || q) weight (0: off)")->capture_default_str();
  cmd->add_option("--decay", o->decay, "Position weight exp(-(j-1)/decay)")->capture_default_str();
  cmd->add_option("--steps", o->steps, "Optimizer steps")->capture_default_str();
  cmd->add_option("--stop-after", o->stop_after, "Stop after this many steps here (0: never)")->capture_default_str();
  cmd->add_option("--lr", o->lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr", o->min_lr, "Final learning rate")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Warm-up steps")->capture_default_str();
  cmd->add_option("--weight-decay", o->weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--grad-clip", o->grad_clip, "Gradient norm clip (0: off)")->capture_default_str();
  cmd->add_option("--bf16", o->bf16, "bf16 autocast (default: on where the CPU has AVX512_BF16)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Init and batch seed")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads")->capture_default_str();
  cmd->add_option("--log-every", o->log_every, "Progress period (steps)")->capture_default_str();
  cmd->add_option("--eval-every", o->eval_every, "Validation period (steps; 0: at the end)")->capture_default_str();
  cmd->add_option("--eval-sequences", o->eval_sequences, "Held-out sequences per validation")->capture_default_str();
  cmd->add_option("--eval-anchors", o->eval_anchors, "Blocks per validation sequence")->capture_default_str();
  cmd->add_option("--save-every", o->save_every, "Checkpoint period (steps; 0: at exit)")->capture_default_str();
  cmd->add_option("--export", o->export_at_end, "Export OUT/drafter at the last step")->capture_default_str();
  cmd->callback([o] { run_draft_training(*o); });
}

void add_eagle3_command(CLI::App& app) {
  auto o = std::make_shared<Eagle3TrainOptions>();
  auto* cmd = app.add_subcommand("eagle3", "Train an EAGLE-3 drafter against a frozen target on regen data");
  cmd->add_option("--target", o->target, "Target: Hugging Face directory or pretraining checkpoint")->required();
  cmd->add_option("--data", o->data, "Regen JSONL file or directory")->required();
  cmd->add_option("--out", o->out, "Run directory (resumes when it holds a checkpoint)")->required();
  cmd->add_option("--init-from", o->init_from, "Start from this EAGLE-3 drafter (export or checkpoint; fresh optimizer)");
  cmd->add_option("--aux-layers", o->aux_layers,
                  "eagle_aux_hidden_state_layer_ids, speculators convention (id k = output of decoder layer k-1)");
  cmd->add_option("--draft-vocab", o->draft_vocab, "Draft vocabulary size (most frequent training tokens)")
      ->capture_default_str();
  cmd->add_option("--init-std", o->init_std, "Init std of the matrices")->capture_default_str();
  cmd->add_option("--ttt-steps", o->ttt_steps, "Training-time test steps")->capture_default_str();
  cmd->add_option("--ttt-decay", o->ttt_decay, "Loss weight of step s: decay^s")->capture_default_str();
  cmd->add_option("--val-fraction", o->val_fraction, "Held-out regen records (id hash)")->capture_default_str();
  cmd->add_option("--max-len", o->max_len, "Sequence cap in tokens")->capture_default_str();
  cmd->add_option("--batch", o->batch, "Sequences per step")->capture_default_str();
  cmd->add_option("--steps", o->steps, "Optimizer steps")->capture_default_str();
  cmd->add_option("--stop-after", o->stop_after, "Stop after this many steps here (0: never)")->capture_default_str();
  cmd->add_option("--lr", o->lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr", o->min_lr, "Final learning rate")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Warm-up steps")->capture_default_str();
  cmd->add_option("--weight-decay", o->weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--grad-clip", o->grad_clip, "Gradient norm clip (0: off)")->capture_default_str();
  cmd->add_option("--bf16", o->bf16, "bf16 autocast (default: on where the CPU has AVX512_BF16)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Init and batch seed")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads")->capture_default_str();
  cmd->add_option("--log-every", o->log_every, "Progress period (steps)")->capture_default_str();
  cmd->add_option("--eval-every", o->eval_every, "Validation period (steps; 0: at the end)")->capture_default_str();
  cmd->add_option("--eval-sequences", o->eval_sequences, "Held-out sequences per validation")->capture_default_str();
  cmd->add_option("--eval-chains", o->eval_chains, "Drafting chains per validation sequence")->capture_default_str();
  cmd->add_option("--eval-drafts", o->eval_drafts, "Drafts per chain (K) of the greedy verification")
      ->capture_default_str();
  cmd->add_option("--save-every", o->save_every, "Checkpoint period (steps; 0: at exit)")->capture_default_str();
  cmd->add_option("--export", o->export_at_end, "Export OUT/drafter at the last step")->capture_default_str();
  cmd->callback([o] { run_eagle3_training(*o); });
}

void add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand("calibrate",
                                 "Sequential Temperature Scaling of a DSpark confidence head on held-out regen data");
  cmd->add_option("--target", o->target, "The drafter's target")->required();
  cmd->add_option("--drafter", o->drafter, "Drafter: export, checkpoint or run directory")->required();
  cmd->add_option("--data", o->data, "Regen JSONL file or directory")->required();
  cmd->add_option("--greedy-data", o->greedy_data, "Greedy answers for the greedy fit (default: --data)");
  cmd->add_option("--sampled-data", o->sampled_data, "Sampled answers for the sampled fit (default: --data)");
  cmd->add_option("--val-fraction", o->val_fraction, "Held-out split (as in training)")->capture_default_str();
  cmd->add_option("--max-len", o->max_len, "Sequence cap in tokens")->capture_default_str();
  cmd->add_option("--max-sequences", o->max_sequences, "Held-out sequences (0: all)")->capture_default_str();
  cmd->add_option("--anchors", o->anchors, "Blocks per sequence")->capture_default_str();
  cmd->add_option("--bins", o->sts.num_bins, "ECE bins (equal width)")->capture_default_str();
  cmd->add_option("--grid", o->sts.grid_points, "Temperature grid points (odd, log-spaced)")->capture_default_str();
  cmd->add_option("--min-temperature", o->sts.min_temperature, "Grid from this to its inverse")->capture_default_str();
  cmd->add_option("--tie-tolerance", o->sts.tie_tolerance, "ECE differences treated as ties (prefer T near 1)")
      ->capture_default_str();
  cmd->add_option("--bf16", o->bf16, "bf16 autocast (default: on where the CPU has AVX512_BF16)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads")->capture_default_str();
  cmd->add_option("--write", o->write, "Write the temperatures into the config")->capture_default_str();
  cmd->callback([o] { run_calibration(*o); });
}

void add_draft_vocab_command(CLI::App& app) {
  auto o = std::make_shared<DraftVocabOptions>();
  auto* cmd = app.add_subcommand(
      "draft-vocab", "Reduce a DSpark / DFlash drafter to the draft vocabulary its training answers use most");
  cmd->add_option("--drafter", o->drafter, "Exported drafter with the whole vocabulary")->required();
  cmd->add_option("--target", o->target, "Its target (Hugging Face directory)")->required();
  cmd->add_option("--data", o->data, "Regen JSONL file or directory whose answers are counted")->required();
  cmd->add_option("--size", o->size, "Draft vocabulary size V_d")->required();
  cmd->add_flag("--greedy", o->greedy,
                "Add it as a greedy requests' vocabulary; sampled requests keep the whole one");
  cmd->add_option("--out", o->out, "Directory for the reduced drafter")->required();
  cmd->add_option("--val-fraction", o->val_fraction, "Held-out regen records, not counted (as in training)")
      ->capture_default_str();
  cmd->add_option("--max-len", o->max_len, "Sequence cap in tokens (as in training)")->capture_default_str();
  cmd->callback([o] { run_draft_vocab(*o); });
}

void add_drafter_commands(CLI::App& app) {
  add_regen_command(app);
  add_draft_command(app);
  add_eagle3_command(app);
  add_draft_lm_command(app);
  add_calibrate_command(app);
  add_draft_vocab_command(app);
}

ExportExtension drafter_export_extension() {
  struct Args {
    std::string dtype = "bf16";
    std::string verifier;
  };
  auto args = std::make_shared<Args>();
  ExportExtension ext;
  ext.add_options = [args](CLI::App* cmd) {
    cmd->add_option("--dtype", args->dtype, "Drafters: tensor dtype bf16 or f32")->capture_default_str();
    cmd->add_option("--verifier", args->verifier, "Drafters: verifier name_or_path to record (default: the target)");
  };
  ext.handle = [args](const fs::path& checkpoint, const fs::path& out) {
    // EAGLE-3 first: its config is a speculators config too, which is_drafter_checkpoint accepts.
    const bool eagle3 = is_eagle3_checkpoint(checkpoint);
    if (!eagle3 && !is_drafter_checkpoint(checkpoint)) return false;
    DrafterExportOptions o;
    o.dtype = parse_dtype(args->dtype);
    DSPARK_CHECK(o.dtype == DType::kBF16 || o.dtype == DType::kF32, "export: --dtype must be bf16 or f32, got {}",
                 args->dtype);
    o.verifier_name_or_path = args->verifier;
    if (eagle3)
      export_eagle3(checkpoint, out, o);
    else
      export_drafter(checkpoint, out, o);
    return true;
  };
  return ext;
}

}  // namespace dspark::train
