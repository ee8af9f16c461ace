#include "spec/proposer_factory.h"

#include <filesystem>

#include "core/check.h"
#include "spec/draft_model_proposer.h"
#include "spec/ngram_proposer.h"

namespace dspark {

std::unique_ptr<Proposer> make_proposer(const SpeculatorOptions& o, const Transformer& target) {
  if (o.speculator.empty()) return nullptr;
  if (o.speculator == "ngram") {
    return std::make_unique<NgramProposer>(NgramOptions{o.ngram_min, o.ngram_max, o.num_speculative_tokens});
  }
  const std::filesystem::path dir(o.speculator);
  DSPARK_CHECK(std::filesystem::is_directory(dir),
               "speculator '{}' is neither \"ngram\" nor an existing model directory", o.speculator);
  TransformerOptions to;
  to.compute = o.compute;
  to.max_sequences = o.max_running;
  to.max_batch_tokens = std::max<int64_t>(target.options().max_batch_tokens, o.max_running);
  to.max_model_len = 0;
  auto draft = Transformer::load(dir, to);
  DSPARK_CHECK(draft->config().vocab_size == target.config().vocab_size,
               "draft model {} has a vocabulary of {} tokens but the target has {}: they must share a tokenizer",
               dir.string(), draft->config().vocab_size, target.config().vocab_size);
  DSPARK_CHECK(draft->max_model_len() >= target.max_model_len(),
               "draft model {} has a context of {} tokens, shorter than the target's {} (set --max-model-len)",
               dir.string(), draft->max_model_len(), target.max_model_len());
  DraftModelOptions d;
  d.num_speculative_tokens = o.num_speculative_tokens;
  d.p_min = o.draft_p_min;
  d.max_running = o.max_running;
  return std::make_unique<DraftModelProposer>(std::move(draft), d);
}

}  // namespace dspark
