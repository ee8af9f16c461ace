// The drafter training loop: batch -> target pass -> drafter pass -> loss -> AdamW, with
// progress lines, validation, checkpoints and the final export.
#include "train/draft/draft_train.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <string>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "train/checkpoint.h"
#include "train/draft/draft_batch.h"
#include "train/draft/draft_eval.h"
#include "train/draft/draft_step.h"
#include "train/draft/regen_split.h"
#include "train/draft/drafter.h"
#include "train/draft/drafter_grow.h"
#include "train/draft/drafter_io.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"
#include "train/pretrain/adamw.h"
#include "train/pretrain/run_log.h"
#include "train/step_loop.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json_or_null(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// The reserved mask token: the run state's mask_id (a pretraining checkpoint), else the
// tokenizer's "<|mask|>".
int32_t resolve_mask_token(const fs::path& target) {
  const json state = read_json_or_null(target / "state.json");
  if (state.is_object() && state.value("mask_id", -1) >= 0) return state["mask_id"].get<int32_t>();
  fs::path tok_dir = target;
  if (!fs::exists(tok_dir / "tokenizer.json") && state.is_object() && state.contains("tokenizer_dir"))
    tok_dir = state["tokenizer_dir"].get<std::string>();
  const json tok = read_json_or_null(tok_dir / "tokenizer.json");
  if (tok.is_object() && tok.contains("added_tokens")) {
    for (const json& t : tok["added_tokens"])
      if (t.value("content", "") == "<|mask|>") return t.at("id").get<int32_t>();
  }
  DSPARK_FAIL("draft: no mask token found for {} (no mask_id in state.json, no <|mask|> in tokenizer.json); pass "
              "--mask-token-id",
              target.string());
}

std::vector<std::string> target_architectures(const fs::path& target) {
  const json config = read_json_or_null(target / "config.json");
  std::vector<std::string> out;
  if (config.is_object() && config.contains("architectures") && config["architectures"].is_array())
    for (const json& a : config["architectures"])
      if (a.is_string()) out.push_back(a.get<std::string>());
  return out;
}

json options_json(const DraftTrainOptions& o, const DraftLossOptions& loss) {
  return json{{"target", o.target.string()}, {"data", o.data.string()}, {"kind", o.kind},
              {"block_size", o.block_size}, {"layers", o.layers}, {"markov_rank", o.markov_rank},
              {"markov_context_size", o.markov_context_size},
              {"val_fraction", o.val_fraction}, {"max_len", o.max_len}, {"batch", o.batch},
              {"anchors", o.anchors}, {"ce_weight", loss.ce_weight}, {"tv_weight", loss.tv_weight},
              {"confidence_weight", loss.confidence_weight}, {"kl_weight", loss.kl_weight}, {"decay", loss.decay},
              {"steps", o.steps},
              {"lr", o.lr}, {"min_lr", o.min_lr}, {"warmup", o.warmup}, {"weight_decay", o.weight_decay},
              {"beta1", o.beta1}, {"beta2", o.beta2}, {"grad_clip", o.grad_clip}, {"bf16", o.bf16},
              {"layer_lr_scale_from", o.layer_lr_scale_from}, {"layer_lr_scale", o.layer_lr_scale}};
}

DraftLossOptions loss_options(const DraftTrainOptions& o, DrafterKind kind) {
  const bool dspark = kind == DrafterKind::kDSpark;
  DraftLossOptions l;
  l.ce_weight = o.ce_weight >= 0 ? o.ce_weight : (dspark ? 0.1 : 1.0);
  l.tv_weight = o.tv_weight >= 0 ? o.tv_weight : (dspark ? 0.9 : 0.0);
  l.confidence_weight = o.confidence_weight >= 0 ? o.confidence_weight : (dspark ? 1.0 : 0.0);
  l.kl_weight = o.kl_weight;
  l.decay = o.decay;
  return l;
}

}  // namespace

void DraftTrainOptions::validate() const {
  DSPARK_CHECK(!target.empty() && !data.empty() && !out.empty(), "draft: --target, --data and --out are required");
  DSPARK_CHECK(kind == "dspark" || kind == "dflash", "draft: --kind must be dspark or dflash, got '{}'", kind);
  DSPARK_CHECK(block_size >= 2, "draft: --block-size must be >= 2, got {}", block_size);
  DSPARK_CHECK(batch >= 1 && anchors >= 1 && steps >= 1, "draft: --batch, --anchors, --steps must be >= 1");
  DSPARK_CHECK(max_len >= 4, "draft: --max-len must be >= 4, got {}", max_len);
  DSPARK_CHECK(val_fraction >= 0 && val_fraction < 1, "draft: --val-fraction must be in [0, 1), got {}",
               val_fraction);
  DSPARK_CHECK(lr > 0 && min_lr >= 0 && warmup >= 0, "draft: bad learning-rate schedule");
  DSPARK_CHECK(log_every >= 1, "draft: --log-every must be >= 1");
  DSPARK_CHECK(grow_layers >= 0 && grow_markov_rank >= 0 && grow_markov_context_size >= 0,
               "draft: --grow-layers, --grow-markov-rank and --grow-markov-context-size must be >= 0");
  DSPARK_CHECK(!grows() || !init_from.empty(),
               "draft: --grow-layers / --grow-markov-rank / --grow-markov-context-size / --grow-aux-layers grow the "
               "drafter of --init-from, which is missing");
  DSPARK_CHECK(markov_context_size >= 0, "draft: --markov-context-size must be >= 0");
  DSPARK_CHECK(layer_lr_scale > 0 && std::isfinite(layer_lr_scale), "draft: --layer-lr-scale must be > 0, got {}",
               layer_lr_scale);
  DSPARK_CHECK(layer_lr_scale == 1.0 || layer_lr_scale_from >= 0,
               "draft: --layer-lr-scale {} needs --layer-lr-scale-from, the first layer it applies to", layer_lr_scale);
}

namespace {

// The run: target, drafter, data, optimizer, and the hooks of the shared step loop.
class DraftTrainer final : public StepLoopHooks {
 public:
  explicit DraftTrainer(const DraftTrainOptions& o);
  DraftTrainResult run();

  double train_step(int64_t step, int64_t& tokens) override;
  void log_progress(const ProgressReport& report) override;
  void evaluate(const RunPosition& at) override;
  void save(const RunPosition& at) override;
  void export_model() override;

 private:
  void make_or_load_drafter();
  void scale_layer_learning_rates();
  void log_setup(const RegenSplit& split);

  // Sums since the last progress line (their loss terms and the first draft's acceptance).
  struct Interval {
    double ce = 0, tv = 0, confidence = 0, kl = 0, alpha1 = 0;
  };

  const DraftTrainOptions& o_;
  RunLog log_;
  std::shared_ptr<CausalLmImpl> target_;
  fs::path checkpoint_;
  std::shared_ptr<DrafterImpl> drafter_;
  DraftLossOptions loss_opts_;
  int32_t pad_ = 0;
  std::vector<DraftSequence> train_seqs_, val_seqs_;
  std::unique_ptr<DraftBatchSampler> sampler_;
  std::unique_ptr<AdamW> optimizer_;
  RunPosition position_;
  Interval interval_;
  double interval_loss_ = 0;
  DraftTrainResult result_;
};

DraftTrainer::DraftTrainer(const DraftTrainOptions& o) : o_(o), log_(o.out, o.quiet) {
  at::set_num_threads(o.threads);
  target_ = load_hf_model(o.target);
  target_->eval();
  for (auto& p : target_->parameters()) p.set_requires_grad(false);
  const ModelConfig& tc = target_->config();
  make_or_load_drafter();
  loss_opts_ = loss_options(o, drafter_->config().kind);
  drafter_->train();

  const int32_t eos = static_cast<int32_t>(tc.eos_token_id);
  pad_ = eos >= 0 ? eos : 0;
  RegenSplit split = split_regen_data(
      o.data, RegenSplitOptions{tc.vocab_size, eos, o.val_fraction, o.max_len, o.eval_sequences}, "draft");
  if (!split.read_report.summary().empty()) log_.line(split.read_report.summary());
  train_seqs_ = std::move(split.train);
  val_seqs_ = std::move(split.val);
  sampler_ = std::make_unique<DraftBatchSampler>(train_seqs_, o.batch, o.anchors, o.seed, pad_);

  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& item : drafter_->named_parameters()) named.emplace_back(item.key(), item.value());
  optimizer_ = std::make_unique<AdamW>(named, AdamWOptions{o.beta1, o.beta2, 1e-8, o.weight_decay});
  scale_layer_learning_rates();
  if (!checkpoint_.empty()) {
    load_optimizer_checkpoint(checkpoint_, *optimizer_);
    position_ = RunPosition::resumed(read_checkpoint_state(checkpoint_), checkpoint_, o.seed);
    log_.print("resuming from {} at step {}", checkpoint_.string(), position_.step);
  } else {
    const bool grown = o.grows();
    log_.print("starting {} ({})", o.out.string(),
               o.init_from.empty() ? "fresh " + o.kind + " drafter"
                                   : (grown ? "grown from " : "weights from ") + o.init_from.string());
  }
  log_setup(split);
}

void DraftTrainer::make_or_load_drafter() {
  checkpoint_ = find_checkpoint(o_.out);
  if (!checkpoint_.empty()) {
    drafter_ = load_drafter(checkpoint_, *target_);
  } else if (!o_.init_from.empty()) {
    // Warm start (e.g. after the target was trained further): the weights and shape of an
    // earlier drafter with a fresh optimizer. Its calibration does not carry over: the
    // export is made from the (uncalibrated) checkpoint.
    drafter_ = load_drafter(o_.init_from, *target_);
    if (o_.grows()) {
      const DrafterConfig& from = drafter_->config();
      const DrafterGrowth to{o_.grow_layers > 0 ? o_.grow_layers : from.layer.num_hidden_layers,
                             o_.grow_markov_rank > 0 ? o_.grow_markov_rank : from.markov_rank,
                             o_.grow_markov_context_size, o_.grow_aux_layers};
      drafter_ = grow_drafter(*drafter_, to, o_.init_std, o_.seed);
      drafter_->config().validate_for_target(target_->config(), "grown drafter");
    }
  } else {
    DrafterShapeOptions shape;
    shape.kind = o_.kind == "dspark" ? DrafterKind::kDSpark : DrafterKind::kDFlash;
    shape.block_size = o_.block_size;
    shape.layers = o_.layers;
    shape.aux_layer_ids = o_.aux_layers;
    shape.num_aux_layers = o_.num_aux_layers;
    shape.mask_token_id = o_.mask_token_id >= 0 ? o_.mask_token_id : resolve_mask_token(o_.target);
    shape.markov_rank = o_.markov_rank;
    shape.markov_context_size = o_.markov_context_size;
    shape.confidence_head = o_.confidence_head;
    shape.verifier_name_or_path = fs::absolute(o_.target).lexically_normal().string();
    shape.verifier_architectures = target_architectures(o_.target);
    drafter_ = make_drafter(make_drafter_config(target_->config(), shape), *target_, o_.init_std, o_.seed);
  }
}

void DraftTrainer::scale_layer_learning_rates() {
  if (o_.layer_lr_scale_from < 0) return;
  const int64_t layers = drafter_->config().layer.num_hidden_layers;
  DSPARK_CHECK(o_.layer_lr_scale_from < layers, "draft: --layer-lr-scale-from {} names no layer: the drafter has {}",
               o_.layer_lr_scale_from, layers);
  const int64_t n = optimizer_->scale_lr(
      [&](const std::string& name) { return decoder_layer_index(name) >= o_.layer_lr_scale_from; },
      o_.layer_lr_scale);
  log_.print("learning rate x {} for layers {}..{} ({} tensors)", o_.layer_lr_scale, o_.layer_lr_scale_from,
             layers - 1, n);
}

void DraftTrainer::log_setup(const RegenSplit& split) {
  const DrafterConfig& dc = drafter_->config();
  const ModelConfig& tc = target_->config();
  log_.print("drafter: {} layers, block {} ({} drafts), aux ids [{}] (capture layers [{}]), mask id {}, markov rank "
             "{} ({}{}), confidence {}: {:.2f}M trainable parameters",
             dc.layer.num_hidden_layers, dc.block_size, dc.num_drafts(),
             fmt::join(dc.aux_hidden_state_layer_ids, ", "), fmt::join(dc.capture_layers(), ", "), dc.mask_token_id,
             dc.markov_rank, dc.markov_head_type,
             dc.contextual_markov() ? fmt::format(", width {}", dc.markov_context_size) : std::string(),
             dc.enable_confidence_head, static_cast<double>(drafter_->num_parameters()) / 1e6);
  log_.print("target: {} ({} layers, hidden {}, vocab {}); data: {} records -> {} train / {} val sequences",
             o_.target.string(), tc.num_hidden_layers, tc.hidden_size, tc.vocab_size, split.num_records,
             train_seqs_.size(), val_seqs_.size());
  log_.print("loss: {}·CE + {}·TV + {}·BCE{}, decay {}; batch {}x{} anchors, steps {}, lr {} -> {} warmup {}, bf16 {}",
             loss_opts_.ce_weight, loss_opts_.tv_weight,
             dc.enable_confidence_head ? loss_opts_.confidence_weight : 0.0,
             loss_opts_.kl_weight != 0 ? fmt::format(" + {}·KL", loss_opts_.kl_weight) : "", loss_opts_.decay,
             o_.batch, o_.anchors,
             o_.steps, o_.lr, o_.min_lr, o_.warmup, o_.bf16);
}

double DraftTrainer::train_step(int64_t step, int64_t& tokens) {
  const DraftBatch batch = sampler_->batch(step);
  tokens = batch.num_tokens;
  const DraftTensors t = to_tensors(batch);
  const TargetOutputs target_out = run_target(*target_, t.ids, drafter_->capture_layers(), o_.bf16);
  // The target's probabilities for DFlash too: α₁ is logged for both kinds.
  const BlockForward f = forward_blocks(*drafter_, t, target_out, o_.bf16, /*with_target_probs=*/true);
  const DraftLoss loss = draft_loss(f.logits, f.target_probs, f.targets.labels, f.confidence, f.targets.valid,
                                    loss_opts_);
  loss.total.backward();
  const double value = loss.total.item<double>();
  interval_loss_ += value;
  interval_.ce += loss.ce;
  interval_.tv += loss.tv;
  interval_.confidence += loss.confidence;
  interval_.kl += loss.kl;
  if (loss.acceptance.defined() && loss.weight_sum > 0) {
    auto w = f.targets.valid.select(2, 0);
    interval_.alpha1 +=
        (loss.acceptance.select(2, 0) * w).sum().item<double>() / std::max(1.0, w.sum().item<double>());
  }
  return value;
}

void DraftTrainer::log_progress(const ProgressReport& r) {
  const double k = static_cast<double>(r.interval_steps);
  log_.print("step {}/{} loss {:.4f} (ce {:.4f} tv {:.4f} conf {:.4f}{}) alpha1 {:.3f} {}", r.at.step, r.steps,
             interval_loss_ / k, interval_.ce / k, interval_.tv / k, interval_.confidence / k,
             loss_opts_.kl_weight != 0 ? fmt::format(" kl {:.4f}", interval_.kl / k) : "", interval_.alpha1 / k,
             r.tail());
  json m = r.metrics();
  m.update({{"loss", interval_loss_ / k}, {"ce", interval_.ce / k}, {"tv", interval_.tv / k},
            {"confidence", interval_.confidence / k}, {"kl", interval_.kl / k}, {"alpha1", interval_.alpha1 / k}});
  log_.metrics(m);
  interval_ = Interval{};
  interval_loss_ = 0;
}

void DraftTrainer::evaluate(const RunPosition& at) {
  if (val_seqs_.empty()) return;
  DraftEvalOptions eo;
  eo.max_anchors = o_.eval_anchors;
  eo.bf16 = o_.bf16;
  eo.pad_id = pad_;
  drafter_->eval();
  const double t0 = now_seconds();
  const DraftEvalResult e = evaluate_drafter(*target_, *drafter_, val_seqs_, eo);
  drafter_->train();
  // Records written before regen stored the answer's temperature count as neither kind.
  const std::string sampled = e.num_sampled_blocks > 0 ? fmt::format("{:.3f}", e.tau_expected_sampled)
                                                       : std::string("n/a: no record gives its temperature");
  log_.print("eval step {}: tau greedy {:.3f} expected {:.3f} (sampled answers {}) | ce {:.4f} | {} blocks "
             "({} greedy, {} in sampled answers) | accept {} | alpha {} ({:.1f} s)",
             at.step, e.tau_greedy, e.tau_expected, sampled, e.ce, e.num_blocks, e.num_greedy_blocks,
             e.num_sampled_blocks, format_rates(e.accept_greedy), format_rates(e.alpha), now_seconds() - t0);
  json metrics = {{"type", "eval"}, {"step", at.step}, {"tau_greedy", e.tau_greedy}, {"tau_expected", e.tau_expected},
                  {"ce", e.ce}, {"blocks", e.num_blocks}, {"greedy_blocks", e.num_greedy_blocks},
                  {"sampled_blocks", e.num_sampled_blocks}, {"accept_greedy", e.accept_greedy},
                  {"accept_conditional", e.accept_conditional}, {"alpha", e.alpha}};
  if (e.num_sampled_blocks > 0) metrics["tau_expected_sampled"] = e.tau_expected_sampled;
  log_.metrics(metrics);
  result_.val_tau_greedy.push_back(e.tau_greedy);
  result_.val_tau_expected.push_back(e.tau_expected);
}

void DraftTrainer::save(const RunPosition& at) {
  json state = at.state(o_.seed);
  state.update({{"target", o_.target.string()}, {"data", o_.data.string()}, {"drafter", true},
                {"options", options_json(o_, loss_opts_)}});
  save_drafter_checkpoint(o_.out, *drafter_, *optimizer_, state);
  log_.print("checkpoint at step {}", at.step);
}

void DraftTrainer::export_model() {
  DrafterExportOptions ex;
  ex.verifier_name_or_path = fs::absolute(o_.target).lexically_normal().string();
  export_drafter(o_.out, o_.out / "drafter", ex);
  log_.print("exported {}", (o_.out / "drafter").string());
}

DraftTrainResult DraftTrainer::run() {
  static_cast<StepLoopResult&>(result_) =
      run_step_loop(step_loop_options(o_), position_, !checkpoint_.empty(), *optimizer_, log_, *this);
  return result_;
}

}  // namespace

DraftTrainResult run_draft_training(const DraftTrainOptions& o) {
  o.validate();
  DraftTrainer trainer(o);
  return trainer.run();
}

}  // namespace dspark::train
