// Builds the proposer a user names: "ngram" (prompt lookup) or a directory. A directory
// whose config.json has "speculators_model_type" ("dspark" or "dflash") is a block drafter
// (spec/dspark_proposer.h) that reads the target's hidden states and shares its embeddings
// and LM head; any other directory holding an ordinary causal LM becomes a draft-model
// proposer. Either must share the target's vocabulary.
//
// A block drafter needs the target loaded with TransformerOptions::capture_layers equal to
// its aux layers: call speculator_capture_layers() before loading the target.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "spec/proposer.h"

namespace dspark {

struct SpeculatorOptions {
  std::string speculator;              // "ngram" or a model directory; empty = none
  int32_t num_speculative_tokens = 0;  // K; 0 = the method's default (5, or the drafter's own)
  float draft_p_min = 0.0f;            // draft model: stop drafting below this probability
  int32_t ngram_min = 1;               // n-gram: shortest tail matched
  int32_t ngram_max = 4;               // n-gram: longest tail tried first
  int64_t max_running = 1;             // the engine's max_running
  DType compute = DType::kBF16;        // draft model / drafter compute dtype
  WeightQuantization quantization = WeightQuantization::kNone;  // draft model's / drafter's matmul weights
  std::string target_model_dir;        // the target's directory (block drafters share its weights)
};

// K of n-gram and draft-model proposers when options.num_speculative_tokens is 0.
inline constexpr int32_t kDefaultSpeculativeTokens = 5;

// The capture layers the target must be loaded with for this speculator: a block drafter's
// aux layers converted to "output of decoder layer l" (checked against the target's config
// in target_model_dir), otherwise empty.
std::vector<int32_t> speculator_capture_layers(const SpeculatorOptions& options);

// Returns nullptr when options.speculator is empty. Throws Error for an unknown name, a
// directory that is not a model, or a drafter / draft model that does not fit the target.
std::unique_ptr<Proposer> make_proposer(const SpeculatorOptions& options, const Transformer& target);

}  // namespace dspark
