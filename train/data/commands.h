// The data subcommands of dspark-train (no libtorch needed):
//   tokenizer  train a byte-level BPE tokenizer and write the Hugging Face files
//   prepare    tokenize the corpus into per-source train/validation shards
#pragma once

namespace CLI {
class App;
}

namespace dspark::train {

void register_data_commands(CLI::App& app);

}  // namespace dspark::train
