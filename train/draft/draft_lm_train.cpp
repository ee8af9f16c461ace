// The draft-LM distillation loop: batch -> target pass -> draft pass -> KL -> AdamW, with
// progress lines, validation, checkpoints and the final export.
#include "train/draft/draft_lm_train.h"

#include <cmath>
#include <fstream>
#include <memory>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "train/checkpoint.h"
#include "train/draft/draft_batch.h"
#include "train/draft/draft_lm_loss.h"
#include "train/draft/draft_step.h"
#include "train/draft/regen_split.h"
#include "train/export.h"
#include "train/model/autocast.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"
#include "train/pretrain/adamw.h"
#include "train/pretrain/run_log.h"
#include "train/step_loop.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json options_json(const DraftLmTrainOptions& o) {
  return json{{"target", o.target.string()}, {"data", o.data.string()}, {"init_from", o.init_from.string()},
              {"val_fraction", o.val_fraction}, {"max_len", o.max_len}, {"batch", o.batch}, {"steps", o.steps},
              {"lr", o.lr}, {"min_lr", o.min_lr}, {"warmup", o.warmup}, {"weight_decay", o.weight_decay},
              {"beta1", o.beta1}, {"beta2", o.beta2}, {"grad_clip", o.grad_clip}, {"bf16", o.bf16}};
}

// Greedy τ of K teacher-forced drafts over one batch (draft_lm_train.h): sums over the
// windows whose K answer tokens are the target's greedy ones.
struct GreedyChains {
  double tau_sum = 0;
  int64_t chains = 0;
};

GreedyChains greedy_chains(const DraftTensors& t, const torch::Tensor& draft_logits, const torch::Tensor& target_logits,
                           int64_t drafts) {
  const int64_t b = t.ids.size(0), rows = t.ids.size(1) - 1;
  GreedyChains out;
  if (rows < drafts) return out;
  auto target_greedy = target_logits.narrow(1, 0, rows).argmax(-1).contiguous();  // [B, T−1]
  auto draft_greedy = draft_logits.narrow(1, 0, rows).argmax(-1).contiguous();
  auto next = t.ids.narrow(1, 1, rows).contiguous();
  auto supervised = draft_lm_row_mask(t.loss_mask).contiguous();
  auto anchor_is_answer = t.loss_mask.narrow(1, 0, rows).contiguous();
  const int64_t* tg = target_greedy.data_ptr<int64_t>();
  const int64_t* dg = draft_greedy.data_ptr<int64_t>();
  const int64_t* nx = next.data_ptr<int64_t>();
  const bool* sup = supervised.data_ptr<bool>();
  const bool* ans = anchor_is_answer.data_ptr<bool>();
  for (int64_t r = 0; r < b; ++r) {
    const int64_t base = r * rows;
    for (int64_t a = 0; a + drafts <= rows; ++a) {
      if (!ans[base + a]) continue;
      bool greedy_window = true;
      for (int64_t j = 0; j < drafts && greedy_window; ++j)
        greedy_window = sup[base + a + j] && nx[base + a + j] == tg[base + a + j];
      if (!greedy_window) continue;
      int64_t accepted = 0;
      while (accepted < drafts && dg[base + a + accepted] == tg[base + a + accepted]) ++accepted;
      out.tau_sum += 1.0 + static_cast<double>(accepted);
      ++out.chains;
    }
  }
  return out;
}

// The run: target, draft LM, data, optimizer, and the hooks of the shared step loop.
class DraftLmTrainer final : public StepLoopHooks {
 public:
  explicit DraftLmTrainer(const DraftLmTrainOptions& o);
  DraftLmTrainResult run();

  double train_step(int64_t step, int64_t& tokens) override;
  void log_progress(const ProgressReport& report) override;
  void evaluate(const RunPosition& at) override;
  void save(const RunPosition& at) override;
  void export_model() override;

 private:
  void load_data();
  void make_or_load_draft();
  void log_setup() const;

  const DraftLmTrainOptions& o_;
  mutable RunLog log_;
  std::shared_ptr<CausalLmImpl> target_;
  int64_t num_records_ = 0;
  std::vector<DraftSequence> train_seqs_, val_seqs_;
  int32_t pad_ = 0;
  std::unique_ptr<DraftBatchSampler> sampler_;
  fs::path checkpoint_;
  fs::path tokenizer_dir_;  // copied into the export
  int64_t export_pad_id_ = -1;  // the draft's own pad id (its generation_config.json), for the export
  std::shared_ptr<CausalLmImpl> draft_;
  std::unique_ptr<AdamW> optimizer_;
  RunPosition position_;
  double interval_kl_ = 0, interval_agreement_ = 0;  // Σ since the last progress line
  DraftLmTrainResult result_;
};

DraftLmTrainer::DraftLmTrainer(const DraftLmTrainOptions& o) : o_(o), log_(o.out, o.quiet) {
  at::set_num_threads(o.threads);
  target_ = load_hf_model(o.target);
  target_->eval();
  for (auto& p : target_->parameters()) p.set_requires_grad(false);
  load_data();
  make_or_load_draft();
  draft_->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& item : draft_->named_parameters()) named.emplace_back(item.key(), item.value());
  optimizer_ = std::make_unique<AdamW>(named, AdamWOptions{o.beta1, o.beta2, 1e-8, o.weight_decay});
  if (!checkpoint_.empty()) {
    load_checkpoint(checkpoint_, *draft_, optimizer_.get());
    const json state = read_checkpoint_state(checkpoint_);
    position_ = RunPosition::resumed(state, checkpoint_, o.seed);
    tokenizer_dir_ = state.value("tokenizer_dir", std::string());
    export_pad_id_ = state.value("pad_id", int64_t{-1});
  }
  log_setup();
}

void DraftLmTrainer::load_data() {
  const int32_t eos = static_cast<int32_t>(target_->config().eos_token_id);
  pad_ = eos >= 0 ? eos : 0;
  RegenSplit split = split_regen_data(
      o_.data, RegenSplitOptions{target_->config().vocab_size, eos, o_.val_fraction, o_.max_len, o_.eval_sequences},
      "draft-lm");
  if (!split.read_report.summary().empty()) log_.line(split.read_report.summary());
  num_records_ = split.num_records;
  train_seqs_ = std::move(split.train);
  val_seqs_ = std::move(split.val);
  // One anchor per row keeps the sampler's batches, and their (seed, step) purity, those of
  // draft and eagle3; the loss covers every answer position.
  sampler_ = std::make_unique<DraftBatchSampler>(train_seqs_, o_.batch, 1, o_.seed, pad_);
}

void DraftLmTrainer::make_or_load_draft() {
  checkpoint_ = find_checkpoint(o_.out);
  if (!checkpoint_.empty()) {
    draft_ = std::make_shared<CausalLmImpl>(read_checkpoint_config(checkpoint_));
  } else {
    DSPARK_CHECK(!o_.init_from.empty(),
                 "draft-lm: --init-from is required for a new run (a pretrained draft LM; `dspark-train pretrain` "
                 "makes one)");
    draft_ = load_hf_model(o_.init_from);
    tokenizer_dir_ = fs::exists(o_.init_from / "tokenizer.json") ? o_.init_from : fs::path(o_.target);
    std::ifstream generation(o_.init_from / "generation_config.json");
    const json g = generation ? json::parse(generation, nullptr, /*allow_exceptions=*/false) : json(nullptr);
    if (g.is_object() && g.contains("pad_token_id") && g["pad_token_id"].is_number_integer())
      export_pad_id_ = g["pad_token_id"].get<int64_t>();
  }
  const ModelConfig& d = draft_->config();
  const ModelConfig& t = target_->config();
  DSPARK_CHECK(d.vocab_size == t.vocab_size, "draft-lm: the draft's vocab_size is {} but the target's is {}; a draft "
               "LM must share the target's tokenizer", d.vocab_size, t.vocab_size);
}

void DraftLmTrainer::log_setup() const {
  const ModelConfig& c = draft_->config();
  if (checkpoint_.empty())
    log_.print("starting {} (weights from {})", o_.out.string(), o_.init_from.string());
  else
    log_.print("resuming from {} at step {}", checkpoint_.string(), position_.step);
  log_.print("draft LM: {} layers, hidden {}, vocab {}: {:.2f}M parameters", c.num_hidden_layers, c.hidden_size,
             c.vocab_size, static_cast<double>(draft_->num_parameters()) / 1e6);
  log_.print("target: {} ({} layers); data: {} records -> {} train / {} val sequences", o_.target.string(),
             target_->config().num_hidden_layers, num_records_, train_seqs_.size(), val_seqs_.size());
  log_.print("loss: forward KL to the target at every answer position; batch {}, steps {}, lr {} -> {} warmup {}, "
             "bf16 {}", o_.batch, o_.steps, o_.lr, o_.min_lr, o_.warmup, o_.bf16);
}

double DraftLmTrainer::train_step(int64_t step, int64_t& tokens) {
  const DraftBatch batch = sampler_->batch(step);
  tokens = batch.num_tokens;
  const DraftTensors t = to_tensors(batch);
  const TargetOutputs target_out = run_target(*target_, t.ids, {}, o_.bf16);
  torch::Tensor logits;
  {
    Bf16Autocast autocast(o_.bf16);
    logits = draft_->forward(t.ids).logits;
  }
  DraftLmLoss loss = draft_lm_loss(logits, target_out.logits, t.loss_mask);
  loss.total.backward();
  interval_kl_ += loss.kl;
  interval_agreement_ += loss.agreement;
  return loss.kl;
}

void DraftLmTrainer::log_progress(const ProgressReport& r) {
  const double k = static_cast<double>(r.interval_steps);
  log_.print("step {}/{} kl {:.4f} agreement {:.3f} {}", r.at.step, r.steps, interval_kl_ / k,
             interval_agreement_ / k, r.tail());
  json m = r.metrics();
  m.update({{"kl", interval_kl_ / k}, {"agreement", interval_agreement_ / k}});
  log_.metrics(m);
  interval_kl_ = interval_agreement_ = 0;
}

void DraftLmTrainer::evaluate(const RunPosition& at) {
  if (val_seqs_.empty()) return;
  at::NoGradGuard no_grad;
  draft_->eval();
  const double t0 = now_seconds();
  double kl = 0, agreement = 0, rows = 0;
  GreedyChains chains;
  for (size_t i = 0; i < val_seqs_.size(); i += static_cast<size_t>(o_.batch)) {
    const size_t n = std::min(val_seqs_.size() - i, static_cast<size_t>(o_.batch));
    std::vector<const DraftSequence*> batch_rows;
    for (size_t k = 0; k < n; ++k) batch_rows.push_back(&val_seqs_[i + k]);
    const DraftTensors t = to_tensors(make_draft_batch(batch_rows, std::vector<std::vector<int64_t>>(n), 1, pad_));
    const TargetOutputs target_out = run_target(*target_, t.ids, {}, o_.bf16);
    torch::Tensor logits;
    {
      Bf16Autocast autocast(o_.bf16);
      logits = draft_->forward(t.ids).logits;
    }
    const DraftLmLoss l = draft_lm_loss(logits, target_out.logits, t.loss_mask);
    kl += l.kl * l.rows;
    agreement += l.agreement * l.rows;
    rows += l.rows;
    const GreedyChains c = greedy_chains(t, logits, target_out.logits, o_.eval_drafts);
    chains.tau_sum += c.tau_sum;
    chains.chains += c.chains;
  }
  draft_->train();
  kl /= std::max(rows, 1.0);
  agreement /= std::max(rows, 1.0);
  const double tau = chains.chains > 0 ? chains.tau_sum / static_cast<double>(chains.chains) : 0.0;
  log_.print("eval step {}: kl {:.4f} agreement {:.3f} | tau greedy {:.3f} (K {}, {} greedy windows) ({:.1f} s)",
             at.step, kl, agreement, tau, o_.eval_drafts, chains.chains, now_seconds() - t0);
  log_.metrics({{"type", "eval"}, {"step", at.step}, {"kl", kl}, {"agreement", agreement}, {"tau_greedy", tau},
                {"drafts", o_.eval_drafts}, {"greedy_windows", chains.chains}});
  result_.val_kl.push_back(kl);
  result_.val_tau_greedy.push_back(tau);
}

void DraftLmTrainer::save(const RunPosition& at) {
  json state = at.state(o_.seed);
  state.update({{"target", o_.target.string()}, {"data", o_.data.string()}, {"tokenizer_dir", tokenizer_dir_.string()},
                {"bos_id", draft_->config().bos_token_id}, {"eos_id", target_->config().eos_token_id},
                {"pad_id", export_pad_id_}, {"draft_lm", true},
                {"options", options_json(o_)}});
  save_checkpoint(o_.out, *draft_, *optimizer_, state);
  log_.print("checkpoint at step {}", at.step);
}

void DraftLmTrainer::export_model() {
  ExportOptions ex;
  ex.tokenizer_dir = fs::exists(tokenizer_dir_ / "tokenizer.json") ? tokenizer_dir_ : fs::path();
  ex.bos_id = draft_->config().bos_token_id;
  ex.eos_id = target_->config().eos_token_id;
  ex.pad_id = export_pad_id_;
  export_hf(*draft_, o_.out / "drafter", ex);
  log_.print("exported {}", (o_.out / "drafter").string());
}

DraftLmTrainResult DraftLmTrainer::run() {
  static_cast<StepLoopResult&>(result_) =
      run_step_loop(step_loop_options(o_), position_, !checkpoint_.empty(), *optimizer_, log_, *this);
  return result_;
}

}  // namespace

void DraftLmTrainOptions::validate() const {
  DSPARK_CHECK(!target.empty() && !data.empty() && !out.empty(), "draft-lm: --target, --data and --out are required");
  DSPARK_CHECK(batch >= 1 && steps >= 1, "draft-lm: --batch and --steps must be >= 1");
  DSPARK_CHECK(max_len >= 4, "draft-lm: --max-len must be >= 4, got {}", max_len);
  DSPARK_CHECK(val_fraction >= 0 && val_fraction < 1, "draft-lm: --val-fraction must be in [0, 1), got {}",
               val_fraction);
  DSPARK_CHECK(lr > 0 && min_lr >= 0 && warmup >= 0, "draft-lm: bad learning-rate schedule");
  DSPARK_CHECK(log_every >= 1, "draft-lm: --log-every must be >= 1");
  DSPARK_CHECK(eval_drafts >= 1, "draft-lm: --eval-drafts must be >= 1");
}

DraftLmTrainResult run_draft_lm_training(const DraftLmTrainOptions& options) {
  options.validate();
  DraftLmTrainer trainer(options);
  return trainer.run();
}

void add_draft_lm_command(CLI::App& app) {
  auto o = std::make_shared<DraftLmTrainOptions>();
  auto* cmd = app.add_subcommand("draft-lm", "Distil a pretrained draft LM into a frozen target on regen data");
  cmd->add_option("--target", o->target, "Target: Hugging Face directory or pretraining checkpoint")->required();
  cmd->add_option("--data", o->data, "Regen JSONL file or directory")->required();
  cmd->add_option("--out", o->out, "Run directory (resumes when it holds a checkpoint)")->required();
  cmd->add_option("--init-from", o->init_from, "The pretrained draft LM (Hugging Face directory; new runs)");
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
  cmd->add_option("--seed", o->seed, "Batch seed")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads")->capture_default_str();
  cmd->add_option("--log-every", o->log_every, "Progress period (steps)")->capture_default_str();
  cmd->add_option("--eval-every", o->eval_every, "Validation period (steps; 0: at the end)")->capture_default_str();
  cmd->add_option("--eval-sequences", o->eval_sequences, "Held-out sequences per validation")->capture_default_str();
  cmd->add_option("--eval-drafts", o->eval_drafts, "K of the greedy tau")->capture_default_str();
  cmd->add_option("--save-every", o->save_every, "Checkpoint period (steps; 0: at exit)")->capture_default_str();
  cmd->add_option("--export", o->export_at_end, "Export OUT/drafter at the last step")->capture_default_str();
  cmd->callback([o] { run_draft_lm_training(*o); });
}

}  // namespace dspark::train
