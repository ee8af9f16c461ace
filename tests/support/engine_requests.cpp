#include "support/engine_requests.h"

#include <gtest/gtest.h>

#include "core/rng.h"
#include "support/tiny_models.h"

namespace dspark::testing {

std::filesystem::path write_tiny_engine_model(const std::string& name, uint64_t seed, int64_t layers,
                                              int64_t vocab_size) {
  TinyModelSpec spec;
  spec.vocab_size = vocab_size;
  spec.num_layers = layers;
  spec.seed = seed;
  return write_tiny_model_with_tokenizer(spec, name);
}

std::unique_ptr<Transformer> load_tiny_engine_model(const std::filesystem::path& dir, int64_t max_sequences) {
  TransformerOptions o;
  o.max_batch_tokens = 128;
  o.max_sequences = max_sequences;
  return Transformer::load(dir, o);
}

std::vector<int32_t> repetitive_prompt(uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> p;
  for (int j = 0; j < 30; ++j) p.push_back(static_cast<int32_t>(3 + (j % 6 == 0 ? rng.next_u64() % 90 : j % 4)));
  return p;
}

int64_t RequestDriver::add(std::vector<int32_t> prompt, const GenerationOptions& options, Callback on_output) {
  const int64_t id = engine_.add_request(std::move(prompt), options);
  if (on_output) callbacks_.emplace(id, std::move(on_output));
  return id;
}

bool RequestDriver::step() {
  const bool stepped = engine_.step(outputs_);
  for (const RequestOutput& out : outputs_) {
    auto it = callbacks_.find(out.request_id);
    if (it == callbacks_.end()) continue;
    it->second(out);
    if (out.finished) callbacks_.erase(it);
  }
  return stepped;
}

void record_hidden_states(const CommittedHiddenStates& c, size_t num_layers, std::vector<std::vector<float>>& rows) {
  EXPECT_EQ(c.start_position, static_cast<int32_t>(rows.size())) << "positions must arrive in order, no gaps";
  for (int32_t i = 0; i < c.num_positions; ++i) {
    std::vector<float> row;
    for (size_t l = 0; l < num_layers; ++l) {
      const float* h = c.hidden + static_cast<int64_t>(l) * c.layer_stride + i * c.hidden_size;
      row.insert(row.end(), h, h + c.hidden_size);
    }
    rows.push_back(std::move(row));
  }
}

GenerationOptions greedy(int64_t max_tokens) {
  GenerationOptions g;
  g.max_tokens = max_tokens;
  g.sampling.temperature = 0;
  g.ignore_eos = true;
  return g;
}

std::vector<std::vector<int32_t>> run_all(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                          const GenerationOptions& options) {
  std::vector<std::vector<int32_t>> out(prompts.size());
  std::vector<bool> done(prompts.size());
  RequestDriver driver(engine);
  for (size_t i = 0; i < prompts.size(); ++i) {
    driver.add(prompts[i], options, [&, i](const RequestOutput& o) {
      out[i].insert(out[i].end(), o.token_ids.begin(), o.token_ids.end());
      if (o.finished) done[i] = true;
    });
  }
  while (driver.step()) {
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_TRUE(done[i]) << "request " << i;
  EXPECT_EQ(engine.stats().kv_blocks_used, 0) << "KV blocks leaked";
  return out;
}

}  // namespace dspark::testing
