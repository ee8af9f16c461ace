// The EAGLE-3 training loop: batch -> target pass -> training-time test -> loss -> AdamW,
// with progress lines, validation, checkpoints and the final export.
#include "train/draft/eagle3_train.h"

#include <cmath>
#include <fstream>
#include <memory>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "train/checkpoint.h"
#include "train/draft/draft_batch.h"
#include "train/draft/draft_eval.h"
#include "train/draft/draft_step.h"
#include "train/draft/regen_split.h"
#include "train/draft/eagle3.h"
#include "train/draft/eagle3_eval.h"
#include "train/draft/eagle3_io.h"
#include "train/draft/eagle3_loss.h"
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

std::vector<std::string> target_architectures(const fs::path& target) {
  std::ifstream in(target / "config.json");
  const json config = in ? json::parse(in, nullptr, /*allow_exceptions=*/false) : json(nullptr);
  std::vector<std::string> out;
  if (config.is_object() && config.contains("architectures") && config["architectures"].is_array())
    for (const json& a : config["architectures"])
      if (a.is_string()) out.push_back(a.get<std::string>());
  return out;
}

json options_json(const Eagle3TrainOptions& o) {
  return json{{"target", o.target.string()}, {"data", o.data.string()}, {"draft_vocab", o.draft_vocab},
              {"ttt_steps", o.ttt_steps}, {"ttt_decay", o.ttt_decay}, {"val_fraction", o.val_fraction},
              {"max_len", o.max_len}, {"batch", o.batch}, {"steps", o.steps}, {"lr", o.lr}, {"min_lr", o.min_lr},
              {"warmup", o.warmup}, {"weight_decay", o.weight_decay}, {"beta1", o.beta1}, {"beta2", o.beta2},
              {"grad_clip", o.grad_clip}, {"bf16", o.bf16}};
}

// Sums over the steps since the last progress line.
struct IntervalStats {
  int64_t steps = 0;
  double loss = 0;
  std::vector<double> kl, accuracy, conditional;  // [ttt steps]

  void add(const Eagle3Loss& l, double loss_value) {
    ++steps;
    loss += loss_value;
    accumulate(kl, l.kl);
    accumulate(accuracy, l.accuracy);
    accumulate(conditional, l.conditional);
  }
  std::vector<double> mean(const std::vector<double>& sums) const {
    std::vector<double> out;
    for (double s : sums) out.push_back(s / static_cast<double>(std::max<int64_t>(steps, 1)));
    return out;
  }
  void reset() { *this = IntervalStats{}; }

 private:
  static void accumulate(std::vector<double>& sums, const std::vector<double>& values) {
    if (sums.size() < values.size()) sums.resize(values.size(), 0.0);
    for (size_t i = 0; i < values.size(); ++i) sums[i] += values[i];
  }
};

// The run: target, drafter, data, optimizer, and the hooks of the shared step loop.
class Eagle3Trainer final : public StepLoopHooks {
 public:
  explicit Eagle3Trainer(const Eagle3TrainOptions& o);
  Eagle3TrainResult run();

  double train_step(int64_t step, int64_t& tokens) override;
  void log_progress(const ProgressReport& report) override;
  void evaluate(const RunPosition& at) override;
  void save(const RunPosition& at) override;
  void export_model() override;

 private:
  void load_data();
  void make_or_load_drafter();
  void restore_state();
  void log_setup() const;

  const Eagle3TrainOptions& o_;
  mutable RunLog log_;
  std::shared_ptr<CausalLmImpl> target_;
  int64_t num_records_ = 0;
  std::vector<DraftSequence> train_seqs_, val_seqs_;
  int32_t pad_ = 0;
  std::unique_ptr<DraftBatchSampler> sampler_;
  fs::path checkpoint_;
  std::string origin_;
  std::shared_ptr<Eagle3Impl> drafter_;
  std::unique_ptr<AdamW> optimizer_;
  RunPosition position_;
  IntervalStats interval_;
  Eagle3TrainResult result_;
};

Eagle3Trainer::Eagle3Trainer(const Eagle3TrainOptions& o) : o_(o), log_(o.out, o.quiet) {
  at::set_num_threads(o.threads);
  target_ = load_hf_model(o.target);
  target_->eval();
  for (auto& p : target_->parameters()) p.set_requires_grad(false);
  load_data();
  make_or_load_drafter();
  drafter_->train();
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& item : drafter_->named_parameters()) named.emplace_back(item.key(), item.value());
  optimizer_ = std::make_unique<AdamW>(named, AdamWOptions{o.beta1, o.beta2, 1e-8, o.weight_decay});
  restore_state();
  log_setup();
}

void Eagle3Trainer::load_data() {
  const int32_t eos = static_cast<int32_t>(target_->config().eos_token_id);
  pad_ = eos >= 0 ? eos : 0;
  RegenSplit split = split_regen_data(
      o_.data, RegenSplitOptions{target_->config().vocab_size, eos, o_.val_fraction, o_.max_len, o_.eval_sequences},
      "eagle3");
  if (!split.read_report.summary().empty()) log_.line(split.read_report.summary());
  num_records_ = split.num_records;
  train_seqs_ = std::move(split.train);
  val_seqs_ = std::move(split.val);
  // Anchors are not used (the training-time test covers every position); one per row keeps
  // the sampler's batches, and so their (seed, step) purity, those of draft.
  sampler_ = std::make_unique<DraftBatchSampler>(train_seqs_, o_.batch, 1, o_.seed, pad_);
}

void Eagle3Trainer::make_or_load_drafter() {
  checkpoint_ = find_checkpoint(o_.out);
  if (!checkpoint_.empty()) {
    drafter_ = load_eagle3(checkpoint_, *target_);
    origin_ = "resumed";
    return;
  }
  if (!o_.init_from.empty()) {
    // Warm start (e.g. after the target was trained further): the weights, vocabulary and
    // shape of an earlier drafter with a fresh optimizer.
    drafter_ = load_eagle3(o_.init_from, *target_);
    origin_ = "weights from " + o_.init_from.string();
    return;
  }
  const ModelConfig& tc = target_->config();
  const std::vector<int64_t> counts = count_completion_tokens(train_seqs_, tc.vocab_size);
  const DraftVocab vocab = build_draft_vocab(counts, o_.draft_vocab);
  Eagle3ShapeOptions shape;
  shape.aux_layer_ids = o_.aux_layers;
  shape.draft_vocab_size = o_.draft_vocab;
  shape.speculative_tokens = static_cast<int32_t>(o_.ttt_steps);
  shape.verifier_name_or_path = fs::absolute(o_.target).lexically_normal().string();
  shape.verifier_architectures = target_architectures(o_.target);
  drafter_ = make_eagle3(make_eagle3_config(tc, shape), *target_, vocab, o_.init_std, o_.seed);
  origin_ = fmt::format("fresh drafter; draft vocabulary covers {:.2f}% of the training completion tokens",
                        100.0 * vocab_coverage(counts, vocab));
}

void Eagle3Trainer::restore_state() {
  if (checkpoint_.empty()) return;
  load_optimizer_checkpoint(checkpoint_, *optimizer_);
  position_ = RunPosition::resumed(read_checkpoint_state(checkpoint_), checkpoint_, o_.seed);
}

void Eagle3Trainer::log_setup() const {
  const Eagle3Config& c = drafter_->config();
  const ModelConfig& tc = target_->config();
  if (checkpoint_.empty())
    log_.print("starting {} ({})", o_.out.string(), origin_);
  else
    log_.print("resuming from {} at step {}", checkpoint_.string(), position_.step);
  log_.print("eagle3 drafter: aux ids [{}] (capture layers [{}]), draft vocab {} of {}, hidden {}: {:.2f}M trainable "
             "parameters",
             fmt::join(c.aux_hidden_state_layer_ids, ", "), fmt::join(drafter_->capture_layers(), ", "),
             c.draft_vocab_size, c.layer.vocab_size, c.layer.hidden_size,
             static_cast<double>(drafter_->num_parameters()) / 1e6);
  log_.print("target: {} ({} layers, hidden {}, vocab {}); data: {} records -> {} train / {} val sequences",
             o_.target.string(), tc.num_hidden_layers, tc.hidden_size, tc.vocab_size, num_records_,
             train_seqs_.size(), val_seqs_.size());
  log_.print("loss: forward KL on the draft vocabulary, ttt steps {} decay {}; batch {}, steps {}, lr {} -> {} warmup "
             "{}, bf16 {}",
             o_.ttt_steps, o_.ttt_decay, o_.batch, o_.steps, o_.lr, o_.min_lr, o_.warmup, o_.bf16);
}

double Eagle3Trainer::train_step(int64_t step, int64_t& tokens) {
  const DraftBatch batch = sampler_->batch(step);
  tokens = batch.num_tokens;
  const DraftTensors t = to_tensors(batch);
  const TargetOutputs target_out = run_target(*target_, t.ids, drafter_->capture_layers(), o_.bf16);
  Eagle3Ttt ttt;
  {
    Bf16Autocast autocast(o_.bf16);
    ttt = drafter_->ttt(target_out.aux, t.ids, o_.ttt_steps);
  }
  Eagle3Loss loss = eagle3_loss(ttt.logits, target_out.logits, t.loss_mask, drafter_->vocab_target_ids(),
                                Eagle3LossOptions{o_.ttt_decay});
  loss.total.backward();
  const double value = loss.total.item<double>();
  interval_.add(loss, value);
  result_.accuracy.push_back(loss.accuracy);
  return value;
}

void Eagle3Trainer::log_progress(const ProgressReport& r) {
  const double k = static_cast<double>(interval_.steps);
  const auto kl = interval_.mean(interval_.kl), acc = interval_.mean(interval_.accuracy),
             cond = interval_.mean(interval_.conditional);
  log_.print("step {}/{} loss {:.4f} | kl {} | acc {} | cond {} | {}", r.at.step, r.steps, interval_.loss / k,
             format_rates(kl), format_rates(acc), format_rates(cond), r.tail());
  json m = r.metrics();
  m.update({{"loss", interval_.loss / k}, {"kl", kl}, {"accuracy", acc}, {"conditional_accuracy", cond}});
  log_.metrics(m);
  interval_.reset();
}

void Eagle3Trainer::evaluate(const RunPosition& at) {
  if (val_seqs_.empty()) return;
  drafter_->eval();
  const double t0 = now_seconds();
  Eagle3EvalOptions eo;
  eo.drafts = o_.eval_drafts;
  eo.max_chains = o_.eval_chains;
  eo.bf16 = o_.bf16;
  eo.pad_id = pad_;
  const Eagle3EvalResult e = evaluate_eagle3(*target_, *drafter_, val_seqs_, eo);
  drafter_->train();
  log_.print("eval step {}: tau greedy {:.3f} (K {}) | {} chains ({} greedy) | accept {} | cond {} ({:.1f} s)", at.step,
             e.tau_greedy, eo.drafts, e.num_chains, e.num_greedy_chains, format_rates(e.accept_greedy),
             format_rates(e.accept_conditional), now_seconds() - t0);
  log_.metrics({{"type", "eval"}, {"step", at.step}, {"tau_greedy", e.tau_greedy}, {"drafts", eo.drafts},
                {"chains", e.num_chains}, {"greedy_chains", e.num_greedy_chains},
                {"accept_greedy", e.accept_greedy}, {"accept_conditional", e.accept_conditional}});
  result_.val_tau_greedy.push_back(e.tau_greedy);
}

void Eagle3Trainer::save(const RunPosition& at) {
  json state = at.state(o_.seed);
  state.update({{"target", o_.target.string()}, {"data", o_.data.string()}, {"eagle3", true},
                {"options", options_json(o_)}});
  save_eagle3_checkpoint(o_.out, *drafter_, *optimizer_, state);
  log_.print("checkpoint at step {}", at.step);
}

void Eagle3Trainer::export_model() {
  DrafterExportOptions ex;
  ex.verifier_name_or_path = fs::absolute(o_.target).lexically_normal().string();
  export_eagle3(o_.out, o_.out / "drafter", ex);
  log_.print("exported {}", (o_.out / "drafter").string());
}

Eagle3TrainResult Eagle3Trainer::run() {
  static_cast<StepLoopResult&>(result_) =
      run_step_loop(step_loop_options(o_), position_, !checkpoint_.empty(), *optimizer_, log_, *this);
  return result_;
}

}  // namespace

void Eagle3TrainOptions::validate() const {
  DSPARK_CHECK(!target.empty() && !data.empty() && !out.empty(), "eagle3: --target, --data and --out are required");
  DSPARK_CHECK(ttt_steps >= 1, "eagle3: --ttt-steps must be >= 1, got {}", ttt_steps);
  DSPARK_CHECK(ttt_decay > 0, "eagle3: --ttt-decay must be > 0, got {}", ttt_decay);
  DSPARK_CHECK(draft_vocab >= 1, "eagle3: --draft-vocab must be >= 1, got {}", draft_vocab);
  DSPARK_CHECK(batch >= 1 && steps >= 1, "eagle3: --batch and --steps must be >= 1");
  DSPARK_CHECK(max_len >= 4, "eagle3: --max-len must be >= 4, got {}", max_len);
  DSPARK_CHECK(val_fraction >= 0 && val_fraction < 1, "eagle3: --val-fraction must be in [0, 1), got {}",
               val_fraction);
  DSPARK_CHECK(lr > 0 && min_lr >= 0 && warmup >= 0, "eagle3: bad learning-rate schedule");
  DSPARK_CHECK(log_every >= 1, "eagle3: --log-every must be >= 1");
  DSPARK_CHECK(eval_drafts >= 1 && eval_chains >= 1, "eagle3: --eval-drafts and --eval-chains must be >= 1");
}

Eagle3TrainResult run_eagle3_training(const Eagle3TrainOptions& options) {
  options.validate();
  Eagle3Trainer trainer(options);
  return trainer.run();
}

}  // namespace dspark::train
