// Running batches of requests through an Engine in tests: the greedy options that make
// lengths independent of the model, and a driver that steps the engine until every
// request has finished.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace dspark::testing {

// Greedy decoding of exactly max_tokens tokens (EOS ignored).
GenerationOptions greedy(int64_t max_tokens);

// Adds every prompt to engine at once and steps it until idle; returns each request's
// tokens, in prompt order. Expects (GoogleTest) every request to finish and no KV block to
// stay in use.
std::vector<std::vector<int32_t>> run_all(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                          const GenerationOptions& options);

}  // namespace dspark::testing
