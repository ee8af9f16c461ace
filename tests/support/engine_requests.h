// Running batches of requests through an Engine in tests: the greedy options that make
// lengths independent of the model, and a driver that steps the engine until every
// request has finished.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace dspark::testing {

// A tiny random model (TinyModelSpec defaults, vocab_size tokens, `layers` layers, weights
// from `seed`) with a byte-level tokenizer of the same vocabulary, in a fresh temp dir.
std::filesystem::path write_tiny_engine_model(const std::string& name, uint64_t seed, int64_t layers,
                                              int64_t vocab_size = 97);
// Loads it for an engine: batches of up to 128 tokens, max_sequences sequences.
std::unique_ptr<Transformer> load_tiny_engine_model(const std::filesystem::path& dir, int64_t max_sequences = 4);
// 30 tokens with repeated 4-grams (so that n-gram lookup finds drafts), varied by seed.
std::vector<int32_t> repetitive_prompt(uint64_t seed);

// Per-request callbacks over Engine::step's outputs, for tests that follow several
// requests at once.
class RequestDriver {
 public:
  using Callback = std::function<void(const RequestOutput&)>;
  explicit RequestDriver(Engine& engine) : engine_(engine) {}
  // Engine::add_request; on_output receives that request's outputs.
  int64_t add(std::vector<int32_t> prompt, const GenerationOptions& options, Callback on_output = {});
  // One engine step, its outputs to their requests' callbacks; Engine::step's result.
  bool step();

 private:
  Engine& engine_;
  std::map<int64_t, Callback> callbacks_;
  std::vector<RequestOutput> outputs_;
};

// Appends what observe() was shown to a slot's record, one row per position (the captured
// layers side by side). Expects (GoogleTest) the positions to continue the record
// without a gap.
void record_hidden_states(const CommittedHiddenStates& committed, size_t num_layers,
                          std::vector<std::vector<float>>& rows);

// Greedy decoding of exactly max_tokens tokens (EOS ignored).
GenerationOptions greedy(int64_t max_tokens);

// Adds every prompt to engine at once and steps it until idle; returns each request's
// tokens, in prompt order. Expects (GoogleTest) every request to finish and no KV block to
// stay in use.
std::vector<std::vector<int32_t>> run_all(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                          const GenerationOptions& options);

}  // namespace dspark::testing
