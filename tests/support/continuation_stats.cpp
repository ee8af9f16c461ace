#include "support/continuation_stats.h"

#include <cmath>
#include <memory>
#include <numbers>

#include "support/engine_requests.h"
#include "support/engine_runner.h"

namespace dspark::testing {

std::vector<double> exact_continuations(Transformer& model, const std::vector<int32_t>& prompt,
                                        const SamplingParams& sp, int64_t vocab, int length) {
  std::vector<double> dist(static_cast<size_t>(std::pow(vocab, length)));
  LogitsProcessor processor(vocab);
  std::vector<float> probs(vocab);  // [vocab]
  for (size_t code = 0; code < dist.size(); ++code) {
    std::vector<int32_t> cont(length);
    size_t c = code;
    for (int i = length - 1; i >= 0; --i) {
      cont[i] = static_cast<int32_t>(c % vocab);
      c /= vocab;
    }
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), cont.begin(), cont.end() - 1);
    EngineRunner runner(model);
    const std::vector<float> logits = runner.run(runner.add_sequence(), seq, 64);  // [seq, vocab]
    double p = 1;
    for (int i = 0; i < length; ++i) {
      processor.to_probs(logits.data() + (prompt.size() - 1 + i) * vocab, probs.data(), sp, {}, 0);
      p *= probs[cont[i]];
    }
    dist[code] = p;
  }
  return dist;
}

std::vector<double> sampled_continuations(Engine& engine, const std::vector<int32_t>& prompt,
                                          const SamplingParams& sp, int64_t vocab, int length, int samples,
                                          uint64_t first_seed) {
  std::vector<double> counts(static_cast<size_t>(std::pow(vocab, length)));
  GenerationOptions g;
  g.max_tokens = length;
  g.ignore_eos = true;
  g.sampling = sp;
  RequestDriver driver(engine);
  for (int i = 0; i < samples; ++i) {
    g.sampling.seed = static_cast<uint64_t>(i) + first_seed;
    auto tokens = std::make_shared<std::vector<int32_t>>();
    driver.add(prompt, g, [tokens, &counts, vocab](const RequestOutput& o) {
      tokens->insert(tokens->end(), o.token_ids.begin(), o.token_ids.end());
      if (o.finished) {
        size_t code = 0;
        for (int32_t t : *tokens) code = code * vocab + t;
        counts[code] += 1;
      }
    });
    // Keep the queue short: requests are admitted as the engine steps.
    if (engine.stats().num_waiting >= 64) driver.step();
  }
  while (driver.step()) {
  }
  for (double& c : counts) c /= samples;
  return counts;
}

double total_variation(const std::vector<double>& a, const std::vector<double>& b) {
  double tv = 0;
  for (size_t i = 0; i < a.size(); ++i) tv += std::abs(a[i] - b[i]);
  return tv / 2;
}

double tv_threshold(const std::vector<double>& exact, int n) {
  double mean = 0, var = 0;
  for (double p : exact) {
    const double sigma2 = p * (1 - p) / n;
    mean += std::sqrt(sigma2) * std::sqrt(2 / std::numbers::pi) / 2;
    var += sigma2 * (1 - 2 / std::numbers::pi) / 4;
  }
  return mean + 6 * std::sqrt(var);
}

}  // namespace dspark::testing
