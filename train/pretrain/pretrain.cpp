// The pretraining loop: sample -> forward/backward (bf16 autocast) -> clip -> AdamW, with
// periodic progress lines, validation, checkpoints, and a final export.
#include "train/pretrain/pretrain.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <memory>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "train/checkpoint.h"
#include "core/check.h"
#include "core/clock.h"
#include "train/export.h"
#include "train/model/autocast.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"
#include "train/pretrain/adamw.h"
#include "train/stop_signals.h"
#include "train/pretrain/mixture_sampler.h"
#include "train/pretrain/pretrain_options_json.h"
#include "train/pretrain/run_log.h"
#include "train/pretrain/schedule.h"
#include "data/token_shards.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

ModelConfig config_from_options(const PretrainOptions& o, const TokenShards& corpus) {
  ModelConfig c;
  c.model_type = ModelType::kLlama;
  c.model_type_name = "llama";
  c.vocab_size = corpus.vocab_size();
  c.hidden_size = o.hidden;
  c.intermediate_size = o.ffn;
  c.num_hidden_layers = o.layers;
  c.num_attention_heads = o.heads;
  c.num_key_value_heads = o.kv_heads;
  c.head_dim = o.hidden / o.heads;
  c.max_position_embeddings = o.max_seq;
  c.rms_norm_eps = static_cast<float>(o.norm_eps);
  c.rope_theta = static_cast<float>(o.rope_theta);
  c.tie_word_embeddings = o.tie_embeddings;
  c.bos_token_id = -1;  // documents are separated by EOS only
  c.eos_token_id = corpus.eos_id();
  c.eos_token_ids = {corpus.eos_id()};
  c.torch_dtype = "float32";
  return c;
}

// Mean next-token cross-entropy of windows [B, T + 1] (int32 tokens in `host`).
torch::Tensor window_loss(const CausalLmImpl& model, std::span<const int32_t> host, int64_t batch, int64_t window,
                          bool bf16) {
  auto tokens = torch::from_blob(const_cast<int32_t*>(host.data()), {batch, window}, at::kInt).to(at::kLong);
  auto input = tokens.narrow(1, 0, window - 1);
  auto target = tokens.narrow(1, 1, window - 1);
  torch::Tensor logits;
  {
    Bf16Autocast autocast(bf16);
    logits = model.forward(input).logits;  // [B, T, V]
  }
  const int64_t vocab = logits.size(-1);
  return at::cross_entropy_loss(logits.to(at::kFloat).reshape({-1, vocab}), target.reshape({-1}));
}

struct SourceEval {
  std::string name;
  std::vector<Window> windows;
};

}  // namespace

PretrainResult run_pretrain(const PretrainOptions& o) {
  o.validate();
  at::set_num_threads(o.threads);
  RunLog log(o.out, o.quiet);
  StopSignals signals;

  const TokenShards corpus(o.data);
  const auto mixture = parse_mixture(o.mix);
  const int64_t window = o.seq_len + 1;
  const MixtureSampler sampler(corpus, mixture, window, o.seed);

  // Model and optimizer: resume, start from HF weights, or initialise.
  const fs::path checkpoint = find_checkpoint(o.out);
  json resumed_state;
  std::shared_ptr<CausalLmImpl> model;
  if (!checkpoint.empty()) {
    model = std::make_shared<CausalLmImpl>(read_checkpoint_config(checkpoint));
    resumed_state = read_checkpoint_state(checkpoint);
  } else if (!o.init_from.empty()) {
    model = load_hf_model(o.init_from);
  } else {
    model = std::make_shared<CausalLmImpl>(config_from_options(o, corpus));
    model->init_weights(o.init_std, o.seed);
  }
  const ModelConfig& config = model->config();
  DSPARK_CHECK(config.vocab_size >= corpus.vocab_size(), "model vocab {} is smaller than the data's vocab {}",
               config.vocab_size, corpus.vocab_size());
  model->train();

  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& item : model->named_parameters()) named.emplace_back(item.key(), item.value());
  AdamW optimizer(named, AdamWOptions{o.beta1, o.beta2, 1e-8, o.weight_decay});

  int64_t step = 0;
  int64_t tokens_seen = 0;
  double elapsed_before = 0;  // training seconds of earlier invocations
  if (!checkpoint.empty()) {
    load_checkpoint(checkpoint, *model, &optimizer);
    step = resumed_state.at("step").get<int64_t>();
    tokens_seen = resumed_state.value("tokens_seen", int64_t{0});
    elapsed_before = resumed_state.value("elapsed_seconds", 0.0);
    const uint64_t seed = resumed_state.value("seed", o.seed);
    DSPARK_CHECK(seed == o.seed, "{}: checkpoint was trained with --seed {}, now {}; batches would differ",
                 checkpoint.string(), seed, o.seed);
    for (const auto& warning : compare_resumed_options(resumed_state.value("options", json::object()), o))
      log.print("warning: {}", warning);
    log.print("resuming from {} at step {} ({} tokens seen)", checkpoint.string(), step, tokens_seen);
  } else {
    log.print("starting {} ({})", o.out.string(),
              o.init_from.empty() ? "fresh weights" : "weights from " + o.init_from.string());
  }
  const int64_t tokens_per_step = o.batch * o.seq_len * o.grad_accum;
  log.print("model: {} layers, hidden {}, heads {}/{}, ffn {}, vocab {}, tied {}: {:.2f}M parameters",
            config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.num_key_value_heads,
            config.intermediate_size, config.vocab_size, config.tie_word_embeddings,
            static_cast<double>(model->num_parameters()) / 1e6);
  log.print("data: {} mix {}; {} tokens/step ({}x{}x{}), steps {}, lr {} -> {} warmup {}, wd {}, bf16 {}, threads {}",
            o.data.string(), format_mixture(mixture), tokens_per_step, o.batch, o.seq_len, o.grad_accum, o.steps,
            o.lr, o.min_lr, o.warmup, o.weight_decay, o.bf16, o.threads);

  const CosineSchedule schedule{o.lr, o.min_lr, o.warmup, o.steps};

  std::vector<SourceEval> evals;
  for (size_t s = 0; s < corpus.sources().size(); ++s) {
    SourceEval e{corpus.sources()[s].name, sampler.val_windows(s, o.eval_windows)};
    if (e.windows.empty()) log.print("warning: source '{}' has no full validation window", e.name);
    else evals.push_back(std::move(e));
  }

  PretrainResult result;
  result.first_step = step + 1;
  result.last_step = step;

  auto evaluate = [&]() {
    at::NoGradGuard no_grad;
    model->eval();
    json record{{"type", "eval"}, {"step", step}};
    std::string line = fmt::format("eval step {}:", step);
    double sum = 0;
    std::vector<int32_t> host;
    for (const auto& e : evals) {
      double total = 0;
      int64_t count = 0;
      for (size_t i = 0; i < e.windows.size(); i += static_cast<size_t>(o.batch)) {
        const size_t n = std::min(e.windows.size() - i, static_cast<size_t>(o.batch));
        host.resize(n * window);
        sampler.fill_val(std::span(e.windows).subspan(i, n), host);
        total += window_loss(*model, host, static_cast<int64_t>(n), window, o.bf16).item<double>() *
                 static_cast<double>(n);
        count += static_cast<int64_t>(n);
      }
      const double loss = total / static_cast<double>(count);
      sum += loss;
      record[e.name] = loss;
      line += fmt::format(" {} {:.4f}", e.name, loss);
    }
    const double mean = evals.empty() ? 0.0 : sum / static_cast<double>(evals.size());
    record["mean"] = mean;
    line += fmt::format(" | mean {:.4f}", mean);
    log.line(line);
    log.metrics(record);
    result.val_losses.push_back(mean);
    model->train();
  };

  const double run_start = now_seconds();
  double train_seconds = 0;  // this invocation, excluding eval/checkpoint
  auto state_json = [&]() {
    return json{{"step", step},
                {"seed", o.seed},
                {"tokens_seen", tokens_seen},
                {"elapsed_seconds", elapsed_before + train_seconds},
                {"data", o.data.string()},
                {"mix", format_mixture(mixture)},
                {"tokenizer_dir", corpus.tokenizer_dir().string()},
                {"bos_id", -1},
                {"eos_id", corpus.eos_id()},
                {"pad_id", corpus.pad_id()},
                {"mask_id", corpus.mask_id()},
                {"options", options_to_json(o)}};
  };
  auto save = [&]() {
    const double t0 = now_seconds();
    save_checkpoint(o.out, *model, optimizer, state_json());
    log.print("checkpoint at step {} ({:.1f} s)", step, now_seconds() - t0);
  };

  std::vector<int32_t> host(static_cast<size_t>(o.batch * window));  // [batch, seq_len + 1]
  ProgressInterval interval;
  double interval_loss = 0;
  int64_t last_saved = step;
  int64_t steps_here = 0;
  while (step < o.steps) {
    if (signals.should_stop(step, steps_here, o.stop_after, log)) {
      result.interrupted = true;
      break;
    }
    const double t0 = now_seconds();
    const int64_t this_step = step + 1;
    double loss_sum = 0;
    for (int64_t micro = 0; micro < o.grad_accum; ++micro) {
      sampler.fill(this_step, micro * o.batch, o.batch, host);
      auto loss = window_loss(*model, host, o.batch, window, o.bf16);
      (o.grad_accum > 1 ? loss / static_cast<double>(o.grad_accum) : loss).backward();
      loss_sum += loss.item<double>();
    }
    const double grad_norm = optimizer.clip_grad_norm(o.grad_clip);
    const double lr = schedule.lr_at(this_step);
    optimizer.step(lr);
    optimizer.zero_grad();
    step = this_step;
    ++steps_here;
    tokens_seen += tokens_per_step;
    const double loss = loss_sum / static_cast<double>(o.grad_accum);
    DSPARK_CHECK(std::isfinite(loss), "step {}: loss is {}; stopping (last checkpoint at step {})", step, loss,
                 last_saved);
    result.losses.push_back(loss);
    result.last_step = step;
    const double dt = now_seconds() - t0;
    train_seconds += dt;
    interval.add(tokens_per_step, dt);
    interval_loss += loss;

    if (step % o.log_every == 0 || step == o.steps) {
      const double tps = interval.tokens_per_second();
      const double eta = interval.eta_seconds(o.steps - step);
      const double mean_loss = interval_loss / static_cast<double>(interval.steps);
      log.print("step {}/{} loss {:.4f} lr {:.2e} gnorm {:.3f} tok/s {:.0f} elapsed {} eta {}", step, o.steps,
                mean_loss, lr, grad_norm, tps, format_duration(elapsed_before + train_seconds),
                format_duration(eta));
      log.metrics({{"type", "train"}, {"step", step}, {"loss", mean_loss}, {"lr", lr}, {"grad_norm", grad_norm},
                   {"tokens_per_second", tps}, {"tokens_seen", tokens_seen},
                   {"elapsed_seconds", elapsed_before + train_seconds}});
      interval.reset();
      interval_loss = 0;
    }
    if (o.eval_every > 0 && step % o.eval_every == 0 && step < o.steps) evaluate();
    if (o.save_every > 0 && step % o.save_every == 0 && step < o.steps) {
      save();
      last_saved = step;
    }
  }
  if (step >= o.steps && !evals.empty() && steps_here > 0) evaluate();
  if (steps_here > 0 || checkpoint.empty()) save();
  if (step >= o.steps && o.export_at_end) {
    ExportOptions ex;
    ex.tokenizer_dir = corpus.tokenizer_dir();
    if (!fs::exists(ex.tokenizer_dir / "tokenizer.json")) {
      log.print("warning: {} has no tokenizer.json; exporting without tokenizer files", ex.tokenizer_dir.string());
      ex.tokenizer_dir.clear();
    }
    ex.bos_id = -1;
    ex.eos_id = corpus.eos_id();
    ex.pad_id = corpus.pad_id();
    export_hf(*model, o.out / "hf", ex);
    log.print("exported {}", (o.out / "hf").string());
  }
  result.tokens_per_second =
      train_seconds > 0 ? static_cast<double>(steps_here * tokens_per_step) / train_seconds : 0.0;
  log.print("done: step {}/{} in {} ({:.0f} tok/s this run, {} total)", step, o.steps,
            format_duration(now_seconds() - run_start), result.tokens_per_second,
            format_duration(elapsed_before + train_seconds));
  return result;
}

}  // namespace dspark::train
