// The pretraining loop: sample -> forward/backward (bf16 autocast) -> clip -> AdamW, with
// periodic progress lines, validation, checkpoints, and a final export.
#include "train/pretrain/pretrain.h"

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
#include "train/pretrain/mixture_sampler.h"
#include "train/pretrain/pretrain_options_json.h"
#include "train/pretrain/run_log.h"
#include "train/step_loop.h"
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

// The pretraining run: its model, optimizer, data and validation windows, and the hooks
// of the shared step loop.
class Pretrainer final : public StepLoopHooks {
 public:
  explicit Pretrainer(const PretrainOptions& o);
  PretrainResult run();

  double train_step(int64_t step, int64_t& tokens) override;
  void log_progress(const ProgressReport& report) override;
  void evaluate(const RunPosition& at) override;
  void save(const RunPosition& at) override;
  void export_model() override;

 private:
  const PretrainOptions& o_;
  RunLog log_;
  const TokenShards corpus_;
  const std::vector<MixtureWeight> mixture_;
  const int64_t window_;  // tokens per sampled window: seq_len + 1
  const MixtureSampler sampler_;
  fs::path checkpoint_;
  std::shared_ptr<CausalLmImpl> model_;
  std::unique_ptr<AdamW> optimizer_;
  RunPosition position_;
  std::vector<SourceEval> evals_;
  std::vector<int32_t> host_;  // [batch, window] int32 tokens of one micro-batch
  double interval_loss_ = 0;   // Σ loss since the last progress line
  PretrainResult result_;
};

Pretrainer::Pretrainer(const PretrainOptions& o)
    : o_(o),
      log_(o.out, o.quiet),
      corpus_(o.data),
      mixture_(parse_mixture(o.mix)),
      window_(o.seq_len + 1),
      sampler_(corpus_, mixture_, window_, o.seed),
      host_(static_cast<size_t>(o.batch * window_)) {
  at::set_num_threads(o.threads);
  // Model and optimizer: resume, start from HF weights, or initialise.
  checkpoint_ = find_checkpoint(o.out);
  json resumed_state;
  if (!checkpoint_.empty()) {
    model_ = std::make_shared<CausalLmImpl>(read_checkpoint_config(checkpoint_));
    resumed_state = read_checkpoint_state(checkpoint_);
  } else if (!o.init_from.empty()) {
    model_ = load_hf_model(o.init_from);
  } else {
    model_ = std::make_shared<CausalLmImpl>(config_from_options(o, corpus_));
    model_->init_weights(o.init_std, o.seed);
  }
  const ModelConfig& config = model_->config();
  DSPARK_CHECK(config.vocab_size >= corpus_.vocab_size(), "model vocab {} is smaller than the data's vocab {}",
               config.vocab_size, corpus_.vocab_size());
  model_->train();

  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& item : model_->named_parameters()) named.emplace_back(item.key(), item.value());
  optimizer_ = std::make_unique<AdamW>(named, AdamWOptions{o.beta1, o.beta2, 1e-8, o.weight_decay});

  if (!checkpoint_.empty()) {
    load_checkpoint(checkpoint_, *model_, optimizer_.get());
    position_ = RunPosition::resumed(resumed_state, checkpoint_, o.seed);
    for (const auto& warning : compare_resumed_options(resumed_state.value("options", json::object()), o))
      log_.print("warning: {}", warning);
    log_.print("resuming from {} at step {} ({} tokens seen)", checkpoint_.string(), position_.step,
               position_.tokens_seen);
  } else {
    log_.print("starting {} ({})", o.out.string(),
               o.init_from.empty() ? "fresh weights" : "weights from " + o.init_from.string());
  }
  log_.print("model: {} layers, hidden {}, heads {}/{}, ffn {}, vocab {}, tied {}: {:.2f}M parameters",
             config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.num_key_value_heads,
             config.intermediate_size, config.vocab_size, config.tie_word_embeddings,
             static_cast<double>(model_->num_parameters()) / 1e6);
  log_.print("data: {} mix {}; {} tokens/step ({}x{}x{}), steps {}, lr {} -> {} warmup {}, wd {}, bf16 {}, threads {}",
             o.data.string(), format_mixture(mixture_), o.batch * o.seq_len * o.grad_accum, o.batch, o.seq_len,
             o.grad_accum, o.steps, o.lr, o.min_lr, o.warmup, o.weight_decay, o.bf16, o.threads);

  for (size_t s = 0; s < corpus_.sources().size(); ++s) {
    SourceEval e{corpus_.sources()[s].name, sampler_.val_windows(s, o.eval_windows)};
    if (e.windows.empty()) log_.print("warning: source '{}' has no full validation window", e.name);
    else evals_.push_back(std::move(e));
  }
}

double Pretrainer::train_step(int64_t step, int64_t& tokens) {
  double loss_sum = 0;
  for (int64_t micro = 0; micro < o_.grad_accum; ++micro) {
    sampler_.fill(step, micro * o_.batch, o_.batch, host_);
    auto loss = window_loss(*model_, host_, o_.batch, window_, o_.bf16);
    (o_.grad_accum > 1 ? loss / static_cast<double>(o_.grad_accum) : loss).backward();
    loss_sum += loss.item<double>();
  }
  tokens = o_.batch * o_.seq_len * o_.grad_accum;
  const double loss = loss_sum / static_cast<double>(o_.grad_accum);
  interval_loss_ += loss;
  return loss;
}

void Pretrainer::log_progress(const ProgressReport& r) {
  const double mean_loss = interval_loss_ / static_cast<double>(r.interval_steps);
  log_.print("step {}/{} loss {:.4f} {}", r.at.step, r.steps, mean_loss, r.tail());
  json m = r.metrics();
  m["loss"] = mean_loss;
  log_.metrics(m);
  interval_loss_ = 0;
}

void Pretrainer::evaluate(const RunPosition& at) {
  if (evals_.empty()) return;
  at::NoGradGuard no_grad;
  model_->eval();
  json record{{"type", "eval"}, {"step", at.step}};
  std::string line = fmt::format("eval step {}:", at.step);
  double sum = 0;
  std::vector<int32_t> host;
  for (const auto& e : evals_) {
    double total = 0;
    int64_t count = 0;
    for (size_t i = 0; i < e.windows.size(); i += static_cast<size_t>(o_.batch)) {
      const size_t n = std::min(e.windows.size() - i, static_cast<size_t>(o_.batch));
      host.resize(n * window_);
      sampler_.fill_val(std::span(e.windows).subspan(i, n), host);
      total += window_loss(*model_, host, static_cast<int64_t>(n), window_, o_.bf16).item<double>() *
               static_cast<double>(n);
      count += static_cast<int64_t>(n);
    }
    const double loss = total / static_cast<double>(count);
    sum += loss;
    record[e.name] = loss;
    line += fmt::format(" {} {:.4f}", e.name, loss);
  }
  const double mean = sum / static_cast<double>(evals_.size());
  record["mean"] = mean;
  line += fmt::format(" | mean {:.4f}", mean);
  log_.line(line);
  log_.metrics(record);
  result_.val_losses.push_back(mean);
  model_->train();
}

void Pretrainer::save(const RunPosition& at) {
  const double t0 = now_seconds();
  json state = at.state(o_.seed);
  state.update({{"data", o_.data.string()}, {"mix", format_mixture(mixture_)},
                {"tokenizer_dir", corpus_.tokenizer_dir().string()}, {"bos_id", -1}, {"eos_id", corpus_.eos_id()},
                {"pad_id", corpus_.pad_id()}, {"mask_id", corpus_.mask_id()},
                {"options", options_to_json(o_)}});
  save_checkpoint(o_.out, *model_, *optimizer_, state);
  log_.print("checkpoint at step {} ({:.1f} s)", at.step, now_seconds() - t0);
}

void Pretrainer::export_model() {
  ExportOptions ex;
  ex.tokenizer_dir = corpus_.tokenizer_dir();
  if (!fs::exists(ex.tokenizer_dir / "tokenizer.json")) {
    log_.print("warning: {} has no tokenizer.json; exporting without tokenizer files", ex.tokenizer_dir.string());
    ex.tokenizer_dir.clear();
  }
  ex.bos_id = -1;
  ex.eos_id = corpus_.eos_id();
  ex.pad_id = corpus_.pad_id();
  export_hf(*model_, o_.out / "hf", ex);
  log_.print("exported {}", (o_.out / "hf").string());
}

PretrainResult Pretrainer::run() {
  static_cast<StepLoopResult&>(result_) =
      run_step_loop(step_loop_options(o_), position_, !checkpoint_.empty(), *optimizer_, log_, *this);
  return result_;
}

}  // namespace

PretrainResult run_pretrain(const PretrainOptions& o) {
  o.validate();
  Pretrainer pretrainer(o);
  return pretrainer.run();
}

}  // namespace dspark::train
