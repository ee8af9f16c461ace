#include "support/engine_requests.h"

#include <gtest/gtest.h>

namespace dspark::testing {

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
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine.add_request(prompts[i], options, [&, i](const RequestOutput& o) {
      out[i].insert(out[i].end(), o.token_ids.begin(), o.token_ids.end());
      if (o.finished) done[i] = true;
    });
  }
  while (engine.step()) {
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_TRUE(done[i]) << "request " << i;
  EXPECT_EQ(engine.stats().kv_blocks_used, 0) << "KV blocks leaked";
  return out;
}

}  // namespace dspark::testing
