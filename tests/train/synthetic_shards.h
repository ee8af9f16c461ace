// Writes a small shard directory in the `dspark-train prepare` format (meta.json plus int32
// token files) with learnable structure: each source's documents are arithmetic runs of
// token ids with a source-specific stride, each followed by EOS.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.h"

namespace dspark::train::testing {

struct SyntheticShardOptions {
  int64_t vocab_size = 300;
  int32_t eos_id = 0, pad_id = 1, mask_id = 2;
  std::vector<std::string> sources = {"alpha", "beta"};
  int64_t train_tokens = 20000;  // per source (approximately: whole documents)
  int64_t val_tokens = 2000;
  std::filesystem::path tokenizer_dir = "/nonexistent-tokenizer";
  uint64_t seed = 7;
};

inline void write_synthetic_shards(const std::filesystem::path& dir, const SyntheticShardOptions& o = {}) {
  std::filesystem::create_directories(dir);
  Rng rng(o.seed);
  nlohmann::json meta{{"tokenizer_dir", o.tokenizer_dir.string()}, {"vocab_size", o.vocab_size},
                      {"eos_id", o.eos_id}, {"pad_id", o.pad_id}, {"mask_id", o.mask_id},
                      {"sources", nlohmann::json::array()}};
  for (size_t s = 0; s < o.sources.size(); ++s) {
    const std::string& name = o.sources[s];
    int64_t counts[2] = {0, 0};
    int64_t documents = 0;
    for (int split = 0; split < 2; ++split) {
      const int64_t target = split == 0 ? o.train_tokens : o.val_tokens;
      std::vector<int32_t> tokens;  // [num_tokens]
      const int64_t first = 3, span = o.vocab_size - first;
      while (static_cast<int64_t>(tokens.size()) < target) {
        const int64_t length = 4 + static_cast<int64_t>(rng.next_u64() % 24);
        int64_t t = static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(span));
        for (int64_t i = 0; i < length; ++i) {
          tokens.push_back(static_cast<int32_t>(first + t));
          t = (t + 1 + static_cast<int64_t>(s)) % span;
        }
        tokens.push_back(o.eos_id);
        ++documents;
      }
      const std::string file = name + (split == 0 ? ".train.bin" : ".val.bin");
      std::ofstream out(dir / file, std::ios::binary);
      out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 4));
      counts[split] = static_cast<int64_t>(tokens.size());
    }
    meta["sources"].push_back({{"name", name},
                               {"train_file", name + ".train.bin"},
                               {"val_file", name + ".val.bin"},
                               {"train_tokens", counts[0]},
                               {"val_tokens", counts[1]},
                               {"documents", documents}});
  }
  std::ofstream(dir / "meta.json") << meta.dump(2) << "\n";
}

}  // namespace dspark::train::testing
