#include "spec/proposer_factory.h"

#include <filesystem>

#include "core/check.h"
#include "loader/safetensors.h"
#include "model/load_quantization.h"
#include "spec/draft_model_proposer.h"
#include "spec/dspark_proposer.h"
#include "spec/eagle3_proposer.h"
#include "spec/ngram_proposer.h"

namespace dspark {
WeightQuantization drafter_quantization(const SpeculatorOptions& o, const Transformer& target) {
  if (o.quantization) return *o.quantization;
  if (!o.speculator.empty() && o.speculator != "ngram") {
    if (const auto configured = configured_quantization(o.speculator)) return *configured;
  }
  return stored_quantization(target.config()).value_or(target.options().quantization);
}

namespace {

std::unique_ptr<Proposer> make_draft_model(const SpeculatorOptions& o, const Transformer& target, int32_t k) {
  const std::filesystem::path dir(o.speculator);
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

}  // namespace

SpeculatorPlan::SpeculatorPlan(SpeculatorOptions options, const ModelConfig& target)
    : options_(std::move(options)), target_layers_(target.num_hidden_layers) {
  if (options_.speculator.empty() || options_.speculator == "ngram") return;
  const std::filesystem::path dir(options_.speculator);
  DSPARK_CHECK(std::filesystem::is_directory(dir),
               "speculator '{}' is neither \"ngram\" nor an existing model directory", options_.speculator);
  if (is_eagle3_directory(dir)) {
    eagle3_ = Eagle3Config::from_file(dir);
    eagle3_->validate_for_target(target, (dir / "config.json").string());
    return;
  }
  if (!is_drafter_directory(dir)) return;
  drafter_ = DrafterConfig::from_file(dir);
  drafter_->validate_for_target(target, (dir / "config.json").string());
}

std::vector<int32_t> SpeculatorPlan::capture_layers() const {
  if (eagle3_) return eagle3_->capture_layers(target_layers_);
  return drafter_ ? drafter_->capture_layers() : std::vector<int32_t>{};
}

std::unique_ptr<Proposer> SpeculatorPlan::build(const Transformer& target) const {
  const SpeculatorOptions& o = options_;
  if (o.speculator.empty()) return nullptr;
  const int32_t k = o.num_speculative_tokens > 0 ? o.num_speculative_tokens : kDefaultSpeculativeTokens;
  if (o.speculator == "ngram") return std::make_unique<NgramProposer>(NgramOptions{o.ngram_min, o.ngram_max, k});
  if (eagle3_) {
    Eagle3ProposerOptions e;
    e.num_speculative_tokens = o.num_speculative_tokens;
    e.max_running = o.max_running;
    e.max_model_len = target.max_model_len();
    e.max_context_rows = target.options().max_batch_tokens;
    e.context_window = o.draft_context_window;
    e.max_pending_positions = o.draft_pending_positions;
    e.compute = o.compute;
    e.quantization = drafter_quantization(o, target);
    return std::make_unique<Eagle3Proposer>(*eagle3_, WeightStore(o.speculator), target, e);
  }
  if (!drafter_) return make_draft_model(o, target, k);
  DSparkProposerOptions d;
  d.num_speculative_tokens = o.num_speculative_tokens;
  d.max_running = o.max_running;
  d.max_model_len = target.max_model_len();
  d.max_context_rows = target.options().max_batch_tokens;
  d.context_window = o.draft_context_window;
  d.max_pending_positions = o.draft_pending_positions;
  d.repeat_lookup_min_match = o.repeat_lookup_min_match;
  d.greedy_draft_vocab = o.greedy_draft_vocab;
  d.compute = o.compute;
  d.quantization = drafter_quantization(o, target);
  const WeightStore drafter(o.speculator);
  return std::make_unique<DSparkProposer>(*drafter_, drafter, target, d);
}

}  // namespace dspark
