#include "spec/proposer_factory.h"

#include <filesystem>

#include "core/check.h"
#include "spec/draft_model_proposer.h"
#include "spec/drafter_config.h"
#include "spec/dspark_proposer.h"
#include "spec/ngram_proposer.h"

namespace dspark {
namespace {

bool names_drafter(const SpeculatorOptions& o) {
  return !o.speculator.empty() && o.speculator != "ngram" && is_drafter_directory(o.speculator);
}

std::filesystem::path require_target_dir(const SpeculatorOptions& o) {
  DSPARK_CHECK(!o.target_model_dir.empty(),
               "the drafter {} shares the target's embeddings and LM head: the target's directory must be given",
               o.speculator);
  return o.target_model_dir;
}

// A target saved with int8 weights gets an int8 drafter too, as --quantization int8 would.
WeightQuantization drafter_quantization(const SpeculatorOptions& o, const Transformer& target) {
  return target.config().int8_weights ? WeightQuantization::kInt8 : o.quantization;
}

std::unique_ptr<Proposer> make_block_drafter(const SpeculatorOptions& o, const Transformer& target) {
  const std::filesystem::path target_dir = require_target_dir(o);
  DSparkProposerOptions d;
  d.num_speculative_tokens = o.num_speculative_tokens;
  d.max_running = o.max_running;
  d.max_model_len = target.max_model_len();
  d.max_context_rows = target.options().max_batch_tokens;
  d.compute = o.compute;
  d.quantization = drafter_quantization(o, target);
  DrafterConfig config = DrafterConfig::from_file(o.speculator);
  const WeightStore drafter(o.speculator);
  const WeightStore target_weights(target_dir);
  return std::make_unique<DSparkProposer>(std::move(config), drafter, target_weights, target.config(), d);
}

}  // namespace

std::vector<int32_t> speculator_capture_layers(const SpeculatorOptions& o) {
  if (!names_drafter(o)) return {};
  const DrafterConfig config = DrafterConfig::from_file(o.speculator);
  const ModelConfig target = ModelConfig::from_file(require_target_dir(o));
  config.validate_for_target(target, (std::filesystem::path(o.speculator) / "config.json").string());
  return config.capture_layers();
}

std::unique_ptr<Proposer> make_proposer(const SpeculatorOptions& o, const Transformer& target) {
  if (o.speculator.empty()) return nullptr;
  const int32_t k = o.num_speculative_tokens > 0 ? o.num_speculative_tokens : kDefaultSpeculativeTokens;
  if (o.speculator == "ngram") {
    return std::make_unique<NgramProposer>(NgramOptions{o.ngram_min, o.ngram_max, k});
  }
  const std::filesystem::path dir(o.speculator);
  DSPARK_CHECK(std::filesystem::is_directory(dir),
               "speculator '{}' is neither \"ngram\" nor an existing model directory", o.speculator);
  if (names_drafter(o)) return make_block_drafter(o, target);
  TransformerOptions to;
  to.compute = o.compute;
  to.quantization = drafter_quantization(o, target);
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
  d.num_speculative_tokens = k;
  d.p_min = o.draft_p_min;
  d.max_running = o.max_running;
  return std::make_unique<DraftModelProposer>(std::move(draft), d);
}

}  // namespace dspark
