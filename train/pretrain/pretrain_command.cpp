// Options of `dspark-train pretrain`: validation, JSON form, and the CLI11 subcommand.
#include <CLI/CLI.hpp>

#include "core/check.h"
#include "train/pretrain/mixture_sampler.h"
#include "train/pretrain/pretrain.h"
#include "train/pretrain/pretrain_options_json.h"

namespace dspark::train {

using nlohmann::json;

void PretrainOptions::validate() const {
  DSPARK_CHECK(!data.empty(), "pretrain: --data is required");
  DSPARK_CHECK(!out.empty(), "pretrain: --out is required");
  parse_mixture(mix);
  DSPARK_CHECK(hidden > 0 && layers > 0 && heads > 0 && kv_heads > 0 && ffn > 0,
               "pretrain: model sizes must be positive (hidden {}, layers {}, heads {}, kv-heads {}, ffn {})", hidden,
               layers, heads, kv_heads, ffn);
  DSPARK_CHECK(hidden % heads == 0 && (hidden / heads) % 2 == 0,
               "pretrain: --hidden {} must be a multiple of --heads {} with an even head size", hidden, heads);
  DSPARK_CHECK(heads % kv_heads == 0, "pretrain: --heads {} must be a multiple of --kv-heads {}", heads, kv_heads);
  DSPARK_CHECK(batch > 0 && seq_len > 1 && grad_accum > 0, "pretrain: --batch {}, --seq-len {}, --grad-accum {} invalid",
               batch, seq_len, grad_accum);
  DSPARK_CHECK(max_seq >= seq_len, "pretrain: --max-seq {} is below --seq-len {}", max_seq, seq_len);
  DSPARK_CHECK(steps > 0 && warmup >= 0 && stop_after >= 0, "pretrain: --steps {} / --warmup {} / --stop-after {} invalid",
               steps, warmup, stop_after);
  DSPARK_CHECK(lr > 0 && min_lr >= 0 && min_lr <= lr, "pretrain: need 0 <= --min-lr ({}) <= --lr ({}), --lr > 0",
               min_lr, lr);
  DSPARK_CHECK(weight_decay >= 0 && beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && grad_clip >= 0,
               "pretrain: --weight-decay / betas / --grad-clip out of range");
  DSPARK_CHECK(threads > 0 && log_every > 0 && eval_every >= 0 && eval_windows >= 0 && save_every >= 0,
               "pretrain: --threads, --log-every must be positive; eval/save periods non-negative");
  DSPARK_CHECK(init_std > 0, "pretrain: --init-std must be positive");
}

json options_to_json(const PretrainOptions& o) {
  return json{{"data", o.data.string()},
              {"mix", o.mix},
              {"init_from", o.init_from.string()},
              {"hidden", o.hidden},
              {"layers", o.layers},
              {"heads", o.heads},
              {"kv_heads", o.kv_heads},
              {"ffn", o.ffn},
              {"tie_embeddings", o.tie_embeddings},
              {"max_seq", o.max_seq},
              {"rope_theta", o.rope_theta},
              {"norm_eps", o.norm_eps},
              {"init_std", o.init_std},
              {"batch", o.batch},
              {"seq_len", o.seq_len},
              {"grad_accum", o.grad_accum},
              {"steps", o.steps},
              {"lr", o.lr},
              {"min_lr", o.min_lr},
              {"warmup", o.warmup},
              {"weight_decay", o.weight_decay},
              {"beta1", o.beta1},
              {"beta2", o.beta2},
              {"grad_clip", o.grad_clip},
              {"bf16", o.bf16},
              {"seed", o.seed},
              {"threads", o.threads}};
}

std::vector<std::string> compare_resumed_options(const json& stored, const PretrainOptions& now) {
  std::vector<std::string> out;
  const json current = options_to_json(now);
  for (const char* key : {"mix", "batch", "seq_len", "grad_accum", "steps", "lr", "min_lr", "warmup", "weight_decay",
                          "beta1", "beta2", "grad_clip", "bf16", "threads"}) {
    if (stored.contains(key) && stored[key] != current[key])
      out.push_back(fmt::format("--{} was {} in the checkpoint, now {}: the resumed run will differ from an "
                                "uninterrupted one",
                                key, stored[key].dump(), current[key].dump()));
  }
  return out;
}

void add_pretrain_command(CLI::App& app) {
  auto o = std::make_shared<PretrainOptions>();
  auto* cmd = app.add_subcommand("pretrain", "Pretrain a Llama-style target model on prepared token shards");
  auto path_opt = [&](const char* name, std::filesystem::path& field, const char* help) {
    return cmd->add_option_function<std::string>(name, [&field](const std::string& v) { field = v; }, help);
  };
  path_opt("--data", o->data, "shard directory made by `dspark-train prepare` (meta.json)")->required();
  path_opt("--out", o->out, "run directory: logs, checkpoint (resumed when present), hf/ export")->required();
  path_opt("--init-from", o->init_from, "start from this Hugging Face model directory (fresh optimizer)");
  cmd->add_option("--mix", o->mix, "per-source sampling weights, name=weight,...")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "hidden size")->capture_default_str();
  cmd->add_option("--layers", o->layers, "decoder layers")->capture_default_str();
  cmd->add_option("--heads", o->heads, "attention heads")->capture_default_str();
  cmd->add_option("--kv-heads", o->kv_heads, "key/value heads")->capture_default_str();
  cmd->add_option("--ffn", o->ffn, "MLP intermediate size")->capture_default_str();
  cmd->add_flag("--tie-embeddings,!--no-tie-embeddings", o->tie_embeddings, "share embedding and LM head")
      ->capture_default_str();
  cmd->add_option("--max-seq", o->max_seq, "max_position_embeddings of the config")->capture_default_str();
  cmd->add_option("--rope-theta", o->rope_theta, "RoPE base")->capture_default_str();
  cmd->add_option("--norm-eps", o->norm_eps, "RMSNorm epsilon")->capture_default_str();
  cmd->add_option("--init-std", o->init_std, "weight init standard deviation")->capture_default_str();
  cmd->add_option("--batch", o->batch, "sequences per micro-batch")->capture_default_str();
  cmd->add_option("--seq-len", o->seq_len, "tokens per training sequence")->capture_default_str();
  cmd->add_option("--grad-accum", o->grad_accum, "micro-batches per optimizer step")->capture_default_str();
  cmd->add_option("--steps", o->steps, "total optimizer steps (length of the schedule)")->capture_default_str();
  cmd->add_option("--stop-after", o->stop_after, "stop with a checkpoint after N steps of this invocation")
      ->capture_default_str();
  cmd->add_option("--lr", o->lr, "peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr", o->min_lr, "final learning rate of the cosine")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "linear warm-up steps")->capture_default_str();
  cmd->add_option("--weight-decay", o->weight_decay, "AdamW decoupled weight decay (matrices only)")
      ->capture_default_str();
  cmd->add_option("--beta1", o->beta1, "AdamW beta1")->capture_default_str();
  cmd->add_option("--beta2", o->beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--grad-clip", o->grad_clip, "max global gradient norm (0: off)")->capture_default_str();
  cmd->add_flag("--bf16,!--f32", o->bf16,
                "bf16 autocast for matmuls or pure f32 (default: bf16 where the CPU has AVX512_BF16)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "init and batch-sampling seed")->capture_default_str();
  cmd->add_option("--threads", o->threads, "intra-op threads")->capture_default_str();
  cmd->add_option("--log-every", o->log_every, "progress line period (steps)")->capture_default_str();
  cmd->add_option("--eval-every", o->eval_every, "validation period (steps, 0: end only)")->capture_default_str();
  cmd->add_option("--eval-windows", o->eval_windows, "validation windows per source")->capture_default_str();
  cmd->add_option("--save-every", o->save_every, "checkpoint period (steps, 0: exit only)")->capture_default_str();
  cmd->add_flag("--export,!--no-export", o->export_at_end, "export OUT/hf after the last step")->capture_default_str();
  cmd->callback([o] { run_pretrain(*o); });
}

}  // namespace dspark::train
