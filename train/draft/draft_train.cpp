// The drafter training loop: batch -> target pass -> drafter pass -> loss -> AdamW, with
// progress lines, validation, checkpoints and the final export.
#include "train/draft/draft_train.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <fstream>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/clock.h"
#include "train/checkpoint.h"
#include "train/draft/draft_batch.h"
#include "train/draft/draft_eval.h"
#include "train/draft/draft_step.h"
#include "train/draft/regen_split.h"
#include "train/draft/drafter.h"
#include "train/draft/drafter_io.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"
#include "train/pretrain/adamw.h"
#include "train/stop_signals.h"
#include "train/pretrain/run_log.h"
#include "train/pretrain/schedule.h"

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
              {"val_fraction", o.val_fraction}, {"max_len", o.max_len}, {"batch", o.batch},
              {"anchors", o.anchors}, {"ce_weight", loss.ce_weight}, {"tv_weight", loss.tv_weight},
              {"confidence_weight", loss.confidence_weight}, {"decay", loss.decay}, {"steps", o.steps},
              {"lr", o.lr}, {"min_lr", o.min_lr}, {"warmup", o.warmup}, {"weight_decay", o.weight_decay},
              {"beta1", o.beta1}, {"beta2", o.beta2}, {"grad_clip", o.grad_clip}, {"bf16", o.bf16}};
}

DraftLossOptions loss_options(const DraftTrainOptions& o, DrafterKind kind) {
  const bool dspark = kind == DrafterKind::kDSpark;
  DraftLossOptions l;
  l.ce_weight = o.ce_weight >= 0 ? o.ce_weight : (dspark ? 0.1 : 1.0);
  l.tv_weight = o.tv_weight >= 0 ? o.tv_weight : (dspark ? 0.9 : 0.0);
  l.confidence_weight = o.confidence_weight >= 0 ? o.confidence_weight : (dspark ? 1.0 : 0.0);
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
}

DraftTrainResult run_draft_training(const DraftTrainOptions& o) {
  o.validate();
  at::set_num_threads(o.threads);
  RunLog log(o.out, o.quiet);
  StopSignals signals;

  auto target = load_hf_model(o.target);
  target->eval();
  for (auto& p : target->parameters()) p.set_requires_grad(false);
  const ModelConfig& tc = target->config();

  const fs::path checkpoint = find_checkpoint(o.out);
  json resumed;
  std::shared_ptr<DrafterImpl> drafter;
  if (!checkpoint.empty()) {
    drafter = load_drafter(checkpoint, *target);
    resumed = read_checkpoint_state(checkpoint);
  } else if (!o.init_from.empty()) {
    // Warm start (e.g. after the target was trained further): the weights and shape of an
    // earlier drafter with a fresh optimizer. Its calibration does not carry over: the
    // export below is made from the (uncalibrated) checkpoint.
    drafter = load_drafter(o.init_from, *target);
  } else {
    DrafterShapeOptions shape;
    shape.kind = o.kind == "dspark" ? DrafterKind::kDSpark : DrafterKind::kDFlash;
    shape.block_size = o.block_size;
    shape.layers = o.layers;
    shape.aux_layer_ids = o.aux_layers;
    shape.num_aux_layers = o.num_aux_layers;
    shape.mask_token_id = o.mask_token_id >= 0 ? o.mask_token_id : resolve_mask_token(o.target);
    shape.markov_rank = o.markov_rank;
    shape.confidence_head = o.confidence_head;
    shape.verifier_name_or_path = fs::absolute(o.target).lexically_normal().string();
    shape.verifier_architectures = target_architectures(o.target);
    drafter = make_drafter(make_drafter_config(tc, shape), *target, o.init_std, o.seed);
  }
  const DrafterConfig& dc = drafter->config();
  const DraftLossOptions loss_opts = loss_options(o, dc.kind);
  drafter->train();

  // Data.
  const int32_t eos = static_cast<int32_t>(tc.eos_token_id);
  const int32_t pad = eos >= 0 ? eos : 0;
  const RegenSplit split = split_regen_data(
      o.data, RegenSplitOptions{tc.vocab_size, eos, o.val_fraction, o.max_len, o.eval_sequences}, "draft");
  if (!split.read_report.summary().empty()) log.line(split.read_report.summary());
  const std::vector<DraftSequence>& train_seqs = split.train;
  const std::vector<DraftSequence>& val_seqs = split.val;
  const DraftBatchSampler sampler(train_seqs, o.batch, o.anchors, o.seed, pad);

  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& item : drafter->named_parameters()) named.emplace_back(item.key(), item.value());
  AdamW optimizer(named, AdamWOptions{o.beta1, o.beta2, 1e-8, o.weight_decay});

  int64_t step = 0, tokens_seen = 0;
  double elapsed_before = 0;
  if (!checkpoint.empty()) {
    load_optimizer_checkpoint(checkpoint, optimizer);
    step = resumed.at("step").get<int64_t>();
    tokens_seen = resumed.value("tokens_seen", int64_t{0});
    elapsed_before = resumed.value("elapsed_seconds", 0.0);
    const uint64_t seed = resumed.value("seed", o.seed);
    DSPARK_CHECK(seed == o.seed, "{}: checkpoint was trained with --seed {}, now {}; batches would differ",
                 checkpoint.string(), seed, o.seed);
    log.print("resuming from {} at step {}", checkpoint.string(), step);
  } else {
    log.print("starting {} ({})", o.out.string(),
              o.init_from.empty() ? "fresh " + o.kind + " drafter" : "weights from " + o.init_from.string());
  }
  log.print("drafter: {} layers, block {} ({} drafts), aux ids [{}] (capture layers [{}]), mask id {}, markov rank {}, "
            "confidence {}: {:.2f}M trainable parameters",
            dc.layer.num_hidden_layers, dc.block_size, dc.num_drafts(), fmt::join(dc.aux_hidden_state_layer_ids, ", "),
            fmt::join(dc.capture_layers(), ", "), dc.mask_token_id, dc.markov_rank, dc.enable_confidence_head,
            static_cast<double>(drafter->num_parameters()) / 1e6);
  log.print("target: {} ({} layers, hidden {}, vocab {}); data: {} records -> {} train / {} val sequences",
            o.target.string(), tc.num_hidden_layers, tc.hidden_size, tc.vocab_size, split.num_records,
            train_seqs.size(), val_seqs.size());
  log.print("loss: {}·CE + {}·TV + {}·BCE, decay {}; batch {}x{} anchors, steps {}, lr {} -> {} warmup {}, bf16 {}",
            loss_opts.ce_weight, loss_opts.tv_weight, dc.enable_confidence_head ? loss_opts.confidence_weight : 0.0,
            loss_opts.decay, o.batch, o.anchors, o.steps, o.lr, o.min_lr, o.warmup, o.bf16);

  const CosineSchedule schedule{o.lr, o.min_lr, o.warmup, o.steps};
  DraftTrainResult result;
  result.first_step = step + 1;
  result.last_step = step;

  DraftEvalOptions eval_opts;
  eval_opts.max_anchors = o.eval_anchors;
  eval_opts.bf16 = o.bf16;
  eval_opts.pad_id = pad;
  auto evaluate = [&]() {
    if (val_seqs.empty()) return;
    drafter->eval();
    const double t0 = now_seconds();
    const DraftEvalResult e = evaluate_drafter(*target, *drafter, val_seqs, eval_opts);
    drafter->train();
    log.print("eval step {}: tau greedy {:.3f} expected {:.3f} | ce {:.4f} | {} blocks ({} greedy) | accept {} | "
              "alpha {} ({:.1f} s)",
              step, e.tau_greedy, e.tau_expected, e.ce, e.num_blocks, e.num_greedy_blocks,
              format_rates(e.accept_greedy), format_rates(e.alpha), now_seconds() - t0);
    log.metrics({{"type", "eval"}, {"step", step}, {"tau_greedy", e.tau_greedy}, {"tau_expected", e.tau_expected},
                 {"ce", e.ce}, {"blocks", e.num_blocks}, {"greedy_blocks", e.num_greedy_blocks},
                 {"accept_greedy", e.accept_greedy}, {"accept_conditional", e.accept_conditional},
                 {"alpha", e.alpha}});
    result.val_tau_greedy.push_back(e.tau_greedy);
    result.val_tau_expected.push_back(e.tau_expected);
  };

  double train_seconds = 0;
  auto save = [&]() {
    json state{{"step", step},
               {"seed", o.seed},
               {"tokens_seen", tokens_seen},
               {"elapsed_seconds", elapsed_before + train_seconds},
               {"target", o.target.string()},
               {"data", o.data.string()},
               {"drafter", true},
               {"options", options_json(o, loss_opts)}};
    save_drafter_checkpoint(o.out, *drafter, optimizer, state);
    log.print("checkpoint at step {}", step);
  };

  const double run_start = now_seconds();
  ProgressInterval interval;
  double interval_loss = 0, interval_ce = 0, interval_tv = 0, interval_conf = 0, interval_accept = 0;
  int64_t steps_here = 0, tokens_here = 0, last_saved = step;
  while (step < o.steps) {
    if (signals.should_stop(step, steps_here, o.stop_after, log)) {
      result.interrupted = true;
      break;
    }
    const double t0 = now_seconds();
    const int64_t this_step = step + 1;
    const DraftBatch batch = sampler.batch(this_step);
    const DraftTensors t = to_tensors(batch);
    const TargetOutputs target_out = run_target(*target, t.ids, drafter->capture_layers(), o.bf16);
    const BlockForward f = forward_blocks(*drafter, t, target_out, o.bf16, /*with_target_probs=*/true);  // α₁ is logged for DFlash too
    const DraftLoss loss = draft_loss(f.logits, f.target_probs, f.targets.labels, f.confidence, f.targets.valid,
                                      loss_opts);
    loss.total.backward();
    const double grad_norm = optimizer.clip_grad_norm(o.grad_clip);
    const double lr = schedule.lr_at(this_step);
    optimizer.step(lr);
    optimizer.zero_grad();
    step = this_step;
    ++steps_here;
    tokens_seen += batch.num_tokens;
    tokens_here += batch.num_tokens;
    const double loss_value = loss.total.item<double>();
    DSPARK_CHECK(std::isfinite(loss_value), "step {}: loss is {}; stopping (last checkpoint at step {})", step,
                 loss_value, last_saved);
    result.losses.push_back(loss_value);
    result.last_step = step;
    const double dt = now_seconds() - t0;
    train_seconds += dt;
    interval.add(batch.num_tokens, dt);
    interval_loss += loss_value;
    interval_ce += loss.ce;
    interval_tv += loss.tv;
    interval_conf += loss.confidence;
    if (loss.acceptance.defined() && loss.weight_sum > 0) {
      auto w = f.targets.valid.select(2, 0);
      interval_accept += (loss.acceptance.select(2, 0) * w).sum().item<double>() / std::max(1.0, w.sum().item<double>());
    }
    if (step % o.log_every == 0 || step == o.steps) {
      const double k = static_cast<double>(interval.steps);
      const double tps = interval.tokens_per_second();
      const double eta = interval.eta_seconds(o.steps - step);
      log.print("step {}/{} loss {:.4f} (ce {:.4f} tv {:.4f} conf {:.4f}) alpha1 {:.3f} lr {:.2e} gnorm {:.3f} "
                "tok/s {:.0f} elapsed {} eta {}",
                step, o.steps, interval_loss / k, interval_ce / k, interval_tv / k, interval_conf / k,
                interval_accept / k, lr, grad_norm, tps, format_duration(elapsed_before + train_seconds),
                format_duration(eta));
      log.metrics({{"type", "train"}, {"step", step}, {"loss", interval_loss / k}, {"ce", interval_ce / k},
                   {"tv", interval_tv / k}, {"confidence", interval_conf / k}, {"alpha1", interval_accept / k},
                   {"lr", lr}, {"grad_norm", grad_norm}, {"tokens_per_second", tps}, {"tokens_seen", tokens_seen},
                   {"elapsed_seconds", elapsed_before + train_seconds}});
      interval.reset();
      interval_loss = interval_ce = interval_tv = interval_conf = interval_accept = 0;
    }
    if (o.eval_every > 0 && step % o.eval_every == 0 && step < o.steps) evaluate();
    if (o.save_every > 0 && step % o.save_every == 0 && step < o.steps) {
      save();
      last_saved = step;
    }
  }
  if (step >= o.steps && steps_here > 0) evaluate();
  if (steps_here > 0 || checkpoint.empty()) save();
  if (step >= o.steps && o.export_at_end) {
    DrafterExportOptions ex;
    ex.verifier_name_or_path = fs::absolute(o.target).lexically_normal().string();
    export_drafter(o.out, o.out / "drafter", ex);
    log.print("exported {}", (o.out / "drafter").string());
  }
  result.tokens_per_second = train_seconds > 0 ? static_cast<double>(tokens_here) / train_seconds : 0.0;
  log.print("done: step {}/{} in {} ({} total)", step, o.steps, format_duration(now_seconds() - run_start),
            format_duration(elapsed_before + train_seconds));
  return result;
}

}  // namespace dspark::train
