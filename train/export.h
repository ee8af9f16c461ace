// Export of a trained CausalLm as a Hugging Face model directory:
//   config.json            ModelConfig::to_json (architectures, model_type), torch_dtype
//                          "bfloat16", bos/eos ids of the tokenizer
//   model.safetensors      every parameter in bf16 (round to nearest even), HF names
//   generation_config.json bos/eos/pad ids
//   tokenizer.json, tokenizer_config.json, special_tokens_map.json  copied from the
//                          tokenizer directory (tokenizer.json is required)
// OUT is created when missing; each of these files is written to a temporary name and renamed
// over the old one (config.json last), and anything else in OUT (a README, other files) is
// left alone, so exporting into the tokenizer's own directory is fine.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace dspark::train {

class CausalLmImpl;

struct ExportOptions {
  std::filesystem::path tokenizer_dir;  // where tokenizer.json lives (empty: no tokenizer copied)
  int64_t bos_id = -1;                  // -1: none
  int64_t eos_id = -1;                  // -1: none
  int64_t pad_id = -1;                  // -1: none
};

void export_hf(const CausalLmImpl& model, const std::filesystem::path& out_dir, const ExportOptions& options);

// Exports a checkpoint (RUN dir or RUN/checkpoint); ids and tokenizer directory come from its
// state.json unless given in `overrides` (fields >= 0 / non-empty win).
void export_checkpoint(const std::filesystem::path& checkpoint, const std::filesystem::path& out_dir,
                       const ExportOptions& overrides);

// Lets another part of the trainer claim checkpoints of another kind (drafters):
// add_options registers its own options on the export subcommand; handle exports the
// checkpoint and returns true when it is of that kind, else returns false.
struct ExportExtension {
  std::function<void(CLI::App*)> add_options;
  std::function<bool(const std::filesystem::path& checkpoint, const std::filesystem::path& out)> handle;
};

// `dspark-train export --checkpoint DIR --out HFDIR [--tokenizer DIR]`
void add_export_command(CLI::App& app, const std::vector<ExportExtension>& extensions = {});

}  // namespace dspark::train
