// Pretraining of a CausalLm on prepared token shards (next-token cross-entropy).
//
// A run lives in one output directory: train.log (every line printed), metrics.jsonl (one
// JSON object per progress/eval line), checkpoint/ (see checkpoint.h) and, when the run
// reaches its last step, hf/ (the exported Hugging Face model). Starting a run in a
// directory that holds a checkpoint resumes it exactly: batches are a pure function of
// (seed, step), the optimizer state is restored bit for bit, so a resumed run reproduces
// the losses of an uninterrupted one. SIGINT/SIGTERM stop after the current step with a
// checkpoint.
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

struct PretrainOptions {
  // data
  std::filesystem::path data;                       // shard directory (meta.json)
  std::string mix = "gsm8k=0.3,code=0.5,prose=0.2"; // per-source sampling weights
  std::filesystem::path out;                        // run directory
  std::filesystem::path init_from;                  // HF directory to start from (fresh optimizer)
  // model shape (ignored when resuming or with init_from)
  int64_t hidden = 512;
  int64_t layers = 8;
  int64_t heads = 8;
  int64_t kv_heads = 4;
  int64_t ffn = 1536;
  bool tie_embeddings = true;
  int64_t max_seq = 2048;        // max_position_embeddings written to config.json
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  double init_std = 0.02;
  // batch
  int64_t batch = 16;            // sequences per micro-batch
  int64_t seq_len = 256;         // tokens per sequence
  int64_t grad_accum = 1;        // micro-batches per optimizer step
  // optimisation
  int64_t steps = 20000;         // total optimizer steps (the schedule's length)
  int64_t stop_after = 0;        // stop (with a checkpoint) after this many steps in this invocation; 0: never
  double lr = 1e-3;              // peak learning rate
  double min_lr = 1e-4;          // end of the cosine
  int64_t warmup = 500;          // linear warm-up steps
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;        // global L2 norm; 0 disables
  bool bf16 = bf16_autocast_by_default();              // CPU autocast to bf16 for the matmuls
  uint64_t seed = 1234;          // weights init and batch sampling
  int threads = 2;               // at::set_num_threads
  // reporting
  int64_t log_every = 10;        // progress line period (steps)
  int64_t eval_every = 500;      // validation period (steps); 0: only at the end
  int64_t eval_windows = 32;     // validation windows per source
  int64_t save_every = 500;      // checkpoint period (steps); 0: only at exit
  bool export_at_end = true;     // write OUT/hf when the last step is done
  bool quiet = false;            // no stdout (the log file is still written)

  void validate() const;  // throws naming the offending option
};

// first_step, last_step, losses (per step run here), interrupted, tokens_per_second: see
// StepLoopResult.
struct PretrainResult : StepLoopResult {
  std::vector<double> val_losses;  // mean validation loss of each eval run here
};

PretrainResult run_pretrain(const PretrainOptions& options);

// `dspark-train pretrain ...`
void add_pretrain_command(CLI::App& app);

}  // namespace dspark::train
