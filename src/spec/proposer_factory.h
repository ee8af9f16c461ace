// Builds the proposer a user names: "ngram" (prompt lookup) or a directory. A directory
// holding an ordinary causal LM (config.json with a supported model_type) becomes a
// draft-model proposer; it must share the target's vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/transformer.h"
#include "spec/proposer.h"

namespace dspark {

struct SpeculatorOptions {
  std::string speculator;              // "ngram" or a model directory; empty = none
  int32_t num_speculative_tokens = 5;  // K
  float draft_p_min = 0.0f;            // draft model: stop drafting below this probability
  int32_t ngram_min = 1;               // n-gram: shortest tail matched
  int32_t ngram_max = 4;               // n-gram: longest tail tried first
  int64_t max_running = 1;             // the engine's max_running
  DType compute = DType::kBF16;        // draft model compute dtype
};

// Returns nullptr when options.speculator is empty. Throws Error for an unknown name, a
// directory that is not a model, or a draft model whose vocabulary differs from the target's.
std::unique_ptr<Proposer> make_proposer(const SpeculatorOptions& options, const Transformer& target);

}  // namespace dspark
