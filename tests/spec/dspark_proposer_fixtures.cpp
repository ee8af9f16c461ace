#include "spec/dspark_proposer_fixtures.h"

#include "core/rng.h"
#include "spec/drafter_fixtures.h"
#include "support/tiny_models.h"

namespace dspark::testing {

DrafterSetup make_setup(DrafterKind kind, const std::string& name, bool own_embeddings, bool tied_target,
                        int64_t markov_context_size) {
  testing::TinyModelSpec spec;
  spec.num_layers = 3;
  spec.tie_word_embeddings = tied_target;
  spec.seed = 3;
  DrafterSetup s;
  s.target_dir = testing::write_tiny_model(spec, testing::make_temp_dir(name + "-target"));
  s.target = ModelConfig::from_file(s.target_dir);
  s.config = testing::make_drafter_config(s.target, kind, {1, 3}, /*block_size=*/4, /*num_layers=*/2);
  if (kind == DrafterKind::kDSpark) s.config.confidence_temperatures = {1.0f, 1.5f, 2.0f, 0.5f};
  if (markov_context_size > 0) {
    s.config.markov_head_type = "contextual";
    s.config.markov_context_size = markov_context_size;
  }
  testing::DrafterWeightsSpec w;
  w.own_embeddings = own_embeddings;
  s.drafter_dir = testing::write_random_drafter(s.config, testing::make_temp_dir(name + "-drafter"), w);
  return s;
}

const DrafterSetup& setup(DrafterKind kind) {
  static const DrafterSetup dspark = make_setup(DrafterKind::kDSpark, "dspark");
  static const DrafterSetup dflash = make_setup(DrafterKind::kDFlash, "dflash");
  return kind == DrafterKind::kDSpark ? dspark : dflash;
}

DSparkProposerOptions proposer_options(DType compute) {
  DSparkProposerOptions o;
  o.max_running = 4;
  o.max_model_len = 128;
  o.max_context_rows = 64;
  o.kv_block_size = 4;
  o.compute = compute;
  o.keep_base_logits = true;
  return o;
}

std::unique_ptr<DSparkProposer> make_proposer(const DrafterSetup& s, DType compute, int64_t max_context_rows,
                                              int64_t max_pending_positions, int64_t context_window) {
  DSparkProposerOptions o = proposer_options(compute);
  o.max_context_rows = max_context_rows;
  o.max_pending_positions = max_pending_positions;
  o.context_window = context_window;
  return DSparkProposer::load(s.drafter_dir, s.target_dir, o);
}

std::vector<std::vector<float>> random_context(const DrafterSetup& s, int64_t positions, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<float>> ctx(s.config.aux_hidden_state_layer_ids.size());
  for (auto& layer : ctx) {
    layer.resize(positions * s.config.target_hidden_size);
    for (float& x : layer) x = static_cast<float>(rng.uniform() * 4 - 2);
  }
  return ctx;
}

void observe(DSparkProposer& p, int32_t slot, const std::vector<std::vector<float>>& ctx, int32_t start,
             int32_t count) {
  const int64_t h = p.config().target_hidden_size;
  std::vector<float> packed;
  for (const auto& layer : ctx) packed.insert(packed.end(), layer.begin() + start * h, layer.begin() + (start + count) * h);
  CommittedHiddenStates c;
  c.slot = slot;
  c.start_position = start;
  c.num_positions = count;
  c.hidden = packed.data();
  c.layer_stride = count * h;
  c.hidden_size = h;
  p.observe({&c, 1});
}

std::vector<int32_t> random_tokens(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng.next_u64() % 90);
  return t;
}

SamplingParams position_keyed_params(uint64_t seed) {
  SamplingParams sp;
  sp.temperature = 1.0f;
  sp.seed = seed;
  sp.position_keyed = true;
  return sp;
}

SamplingParams greedy_params() {
  SamplingParams sp;
  sp.temperature = 0;
  return sp;
}

}  // namespace dspark::testing
