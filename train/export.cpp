#include "train/export.h"

#include <fstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "train/checkpoint.h"
#include "core/check.h"
#include "train/model/hf_weights.h"
#include "loader/safetensors.h"
#include "train/model/transformer.h"

namespace dspark::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json id_or_null(int64_t id) { return id >= 0 ? json(id) : json(nullptr); }

}  // namespace

void export_hf(const CausalLmImpl& model, const fs::path& out_dir, const ExportOptions& options) {
  fs::create_directories(out_dir);
  if (!options.tokenizer_dir.empty())
    DSPARK_CHECK(fs::exists(options.tokenizer_dir / "tokenizer.json"), "export: {} has no tokenizer.json",
                 options.tokenizer_dir.string());

  ModelConfig config = model.config();
  config.torch_dtype = "bfloat16";
  config.bos_token_id = options.bos_id;
  config.eos_token_id = options.eos_id;
  config.eos_token_ids.clear();
  if (options.eos_id >= 0) config.eos_token_ids.push_back(options.eos_id);
  write_safetensors(out_dir / "model.safetensors", model_tensors(model, DType::kBF16), {{"format", "pt"}});
  json gen{{"_from_model_config", true},
           {"bos_token_id", id_or_null(options.bos_id)},
           {"eos_token_id", id_or_null(options.eos_id)}};
  if (options.pad_id >= 0) gen["pad_token_id"] = options.pad_id;
  write_json_atomic(out_dir / "generation_config.json", gen);

  if (!options.tokenizer_dir.empty()) {
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
      const fs::path from = options.tokenizer_dir / name, to = out_dir / name;
      if (!fs::exists(from)) {
        spdlog::warn("export: {} has no {}", options.tokenizer_dir.string(), name);
        continue;
      }
      if (fs::exists(to) && fs::equivalent(from, to)) continue;  // exporting into the tokenizer's own directory
      fs::path tmp = to;
      tmp += ".tmp";
      fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
      fs::rename(tmp, to);
    }
  }
  // config.json last: a directory with a config.json is complete.
  write_json_atomic(out_dir / "config.json", config.to_json());
}

void export_checkpoint(const fs::path& checkpoint, const fs::path& out_dir, const ExportOptions& overrides) {
  const fs::path dir = find_checkpoint(checkpoint);
  DSPARK_CHECK(!dir.empty(), "export: no checkpoint in {} (expected state.json and model.safetensors)",
               checkpoint.string());
  const json state = read_checkpoint_state(dir);
  auto model = std::make_shared<CausalLmImpl>(read_checkpoint_config(dir));
  load_checkpoint(dir, *model, nullptr);

  ExportOptions options = overrides;
  auto from_state = [&](const char* key) { return state.contains(key) ? state[key].get<int64_t>() : int64_t{-1}; };
  if (options.bos_id < 0) options.bos_id = from_state("bos_id");
  if (options.eos_id < 0) options.eos_id = from_state("eos_id");
  if (options.pad_id < 0) options.pad_id = from_state("pad_id");
  if (options.tokenizer_dir.empty() && state.contains("tokenizer_dir"))
    options.tokenizer_dir = state["tokenizer_dir"].get<std::string>();
  export_hf(*model, out_dir, options);
}

void add_export_command(CLI::App& app, const std::vector<ExportExtension>& extensions) {
  struct Args {
    std::string checkpoint, out, tokenizer;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("export", "Write a checkpoint as a Hugging Face model directory (bf16)");
  cmd->add_option("--checkpoint", args->checkpoint, "run directory or checkpoint directory")->required();
  cmd->add_option("--out", args->out, "output model directory (replaced)")->required();
  cmd->add_option("--tokenizer", args->tokenizer, "tokenizer directory (default: the one the run was trained with)");
  for (const auto& ext : extensions)
    if (ext.add_options) ext.add_options(cmd);
  cmd->callback([args, extensions] {
    for (const auto& ext : extensions) {
      if (ext.handle && ext.handle(args->checkpoint, args->out)) {
        fmt::print("exported {} -> {}\n", args->checkpoint, args->out);
        return;
      }
    }
    ExportOptions overrides;
    overrides.tokenizer_dir = args->tokenizer;
    export_checkpoint(args->checkpoint, args->out, overrides);
    fmt::print("exported {} -> {}\n", args->checkpoint, args->out);
  });
}

}  // namespace dspark::train
