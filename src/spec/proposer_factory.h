// Builds the proposer a user names: "ngram" (prompt lookup) or a directory. A directory
// whose config.json has "speculators_model_type" "eagle3", or the original EAGLE-3
// architecture LlamaForCausalLMEagle3, is an EAGLE-3 drafter (spec/eagle3_proposer.h); one
// with "speculators_model_type" "dspark" or "dflash" is a block drafter
// (spec/dspark_proposer.h). Both read the target's hidden states and share its embeddings.
// Any other directory holding an ordinary causal LM becomes a draft-model proposer. Each
// must share the target's vocabulary.
//
// In two steps, because a block drafter decides how the target is loaded: a SpeculatorPlan
// reads the speculator's config once and checks it against the target's config, says which
// layers the target must capture (capture_layers), and, once the target is loaded with
// them, builds the proposer over it. engine/assembly.h runs both steps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "spec/drafter_config.h"
#include "spec/eagle3_config.h"
#include "spec/proposer.h"

namespace dspark {

// K of n-gram and draft-model proposers when options.num_speculative_tokens is 0.
inline constexpr int32_t kDefaultSpeculativeTokens = 5;
// A block drafter attends to this many context positions before the anchor: its cost per
// draft and its KV memory stay bounded however long the prompt (drafters are trained on
// sequences of a few thousand tokens at most, so farther positions add cost, not accuracy).
inline constexpr int64_t kDefaultDraftContextWindow = 2048;
// Tail-match length from which a block drafter's greedy request drafts by repeat lookup:
// replaying the eval sets' greedy rounds, 8 gave the best τ on most sets (docs/results.md).
inline constexpr int32_t kDefaultRepeatLookupMinMatch = 8;

struct SpeculatorOptions {
  std::string speculator;              // "ngram" or a model directory; empty = none
  int32_t num_speculative_tokens = 0;  // K; 0 = the method's default (5, or the drafter's own)
  float draft_p_min = 0.0f;            // draft model: stop drafting below this probability
  int32_t ngram_min = 1;               // n-gram: shortest tail matched
  int32_t ngram_max = 4;               // n-gram: longest tail tried first
  int64_t draft_context_window = kDefaultDraftContextWindow;  // block drafter: context positions seen (0 = all)
  // DSpark/DFlash/EAGLE-3: committed positions per request whose context projection waits
  // for the request's next draft (0 = projected at once; -1 = about 64 MiB over all slots).
  int64_t draft_pending_positions = -1;
  // DSpark/DFlash drafter: a greedy request whose context tail occurred earlier, at least
  // this long, drafts the repeat continuation instead (0 = never; DSparkProposerOptions).
  int32_t repeat_lookup_min_match = kDefaultRepeatLookupMinMatch;
  // DSpark/DFlash drafter: draft greedy requests from the drafter's greedy draft vocabulary
  // when it has one (false: from its whole vocabulary, as sampled requests; DSparkProposerOptions).
  bool greedy_draft_vocab = true;
  int64_t max_running = 1;             // the engine's max_running
  DType compute = DType::kBF16;        // draft model / drafter compute dtype
  // Draft model's / drafter's matmul weights; unset: the drafter config's "quantization"
  // (model/load_quantization.h), else as the target's (its --quantization, or int8 when
  // the target was saved quantized). int8 drafts on a bf16 target trade a little
  // acceptance for a cheaper draft; the output stays the target's.
  std::optional<WeightQuantization> quantization;
};


// The drafter's matmul weights: the options' choice, else its config's "quantization", else
// the target's (int8 when the target runs int8, whether quantized at load or saved
// quantized).
WeightQuantization drafter_quantization(const SpeculatorOptions& options, const Transformer& target);

class SpeculatorPlan {
 public:
  // Throws Error for an unknown name, a directory that is not a model, or a block drafter
  // whose config does not fit the target (naming the file and field).
  SpeculatorPlan(SpeculatorOptions options, const ModelConfig& target);

  bool empty() const { return options_.speculator.empty(); }
  // The layers the target must be loaded with (TransformerOptions::capture_layers): a block
  // or EAGLE-3 drafter's aux layers as "output of decoder layer l", otherwise none.
  std::vector<int32_t> capture_layers() const;
  // The proposer over `target` (loaded with capture_layers()); nullptr when empty(). Throws
  // Error for a drafter or draft model that does not fit the target.
  std::unique_ptr<Proposer> build(const Transformer& target) const;

 private:
  SpeculatorOptions options_;
  int64_t target_layers_ = 0;             // the target's decoder layers
  std::optional<DrafterConfig> drafter_;  // a block drafter's config, read once
  std::optional<Eagle3Config> eagle3_;    // an EAGLE-3 drafter's config, read once
};

}  // namespace dspark
