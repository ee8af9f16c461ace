// Regen data for trainer tests: random prompts answered greedily by a (tiny, random) target,
// as `dspark-train regen` would answer them, written as JSONL.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/rng.h"
#include "train/draft/regen_records.h"
#include "train/model/hf_weights.h"
#include "train/model/transformer.h"

namespace dspark::train::testing {

// `count` prompts of 4..9 ids in 1..max_id, each answered with up to max_tokens greedy
// tokens of the model in target_dir (EOS = id 0 ends an answer).
inline void write_greedy_records(const std::filesystem::path& target_dir, const std::filesystem::path& file,
                                 int count, int max_tokens, int32_t max_id) {
  auto model = load_hf_model(target_dir);
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file);
  Rng rng(5);
  for (int r = 0; r < count; ++r) {
    RegenRecord rec;
    rec.id = "synthetic:" + std::to_string(r);
    rec.source = "synthetic";
    const int prompt_len = 4 + static_cast<int>(rng.next_u64() % 6);
    for (int i = 0; i < prompt_len; ++i)
      rec.prompt_ids.push_back(1 + static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(max_id)));
    std::vector<int32_t> seq = rec.prompt_ids;
    rec.finish_reason = "length";
    for (int k = 0; k < max_tokens; ++k) {
      auto logits = hf_logits(*model, seq);
      const auto next = static_cast<int32_t>(logits[logits.size(0) - 1].argmax().item<int64_t>());
      if (next == 0) {
        rec.finish_reason = "eos";
        break;
      }
      rec.completion_ids.push_back(next);
      seq.push_back(next);
    }
    out << regen_record_to_json(rec) << "\n";
  }
}

}  // namespace dspark::train::testing
