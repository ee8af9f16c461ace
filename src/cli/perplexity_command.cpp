// dspark perplexity: the target's perplexity on the texts of dataset files, per file, so
// that weight formats (--quantization int8 against bf16) and dtypes can be compared on text
// the model was not trained on. Every token after the first of each text is scored; texts
// longer than the context are cut to it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "loadgen/dataset.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/check.h"
#include "model/block_allocator.h"
#include "model/kv_pool.h"

namespace dspark::cli {
namespace {

struct PerplexityArgs {
  ModelArgs model;
  std::vector<std::string> datasets;
  int64_t limit = 0;  // texts per dataset (0 = all)
};

// -log p(target) under logits (f64 log-sum-exp).
double negative_log_likelihood(const float* logits, int64_t vocab, int32_t target) {
  double max = logits[0];
  for (int64_t i = 1; i < vocab; ++i) max = std::max(max, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  return max + std::log(sum) - static_cast<double>(logits[target]);
}

void run_perplexity(const PerplexityArgs& args) {
  DSPARK_CHECK(!args.datasets.empty(), "perplexity: give at least one --dataset");
  Assembly loaded = assemble(args.model, SpeculatorOptions{}, 1);
  Transformer& model = *loaded.target;
  const int64_t vocab = model.config().vocab_size;
  const int64_t chunk = model.options().max_batch_tokens;
  const int64_t context = model.max_model_len();
  constexpr int64_t kBlockSize = 16;
  const int64_t num_blocks = (context + kBlockSize - 1) / kBlockSize;
  KvPool kv(model.config(), KvPoolOptions{num_blocks, kBlockSize, parse_dtype(args.model.kv_dtype)});
  BlockAllocator allocator(num_blocks);
  std::vector<int32_t> rows(static_cast<size_t>(chunk));
  std::iota(rows.begin(), rows.end(), 0);
  std::printf("%-28s %7s %10s %10s %12s\n", "dataset", "texts", "tokens", "mean NLL", "perplexity");
  for (const std::string& file : args.datasets) {
    const auto texts = load_dataset(file, args.limit);
    double total_nll = 0.0;
    int64_t scored = 0;
    for (const DatasetPrompt& text : texts) {
      std::vector<int32_t> ids = loaded.tokenizer->encode(text.text, true);
      if (static_cast<int64_t>(ids.size()) > context) ids.resize(static_cast<size_t>(context));
      if (ids.size() < 2) continue;
      BlockTable table;
      DSPARK_CHECK(table.reserve(static_cast<int64_t>(ids.size()), kBlockSize, allocator), "perplexity: KV pool full");
      // Chunked prefill with logits at every row: row i predicts token i + 1.
      for (int64_t start = 0; start < static_cast<int64_t>(ids.size()) - 1; start += chunk) {
        const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(ids.size()) - 1 - start);
        const SequenceSlice slice{static_cast<int32_t>(n), static_cast<int32_t>(start), table.data()};
        const ForwardResult r = model.forward(
            ForwardBatch{std::span<const int32_t>(ids.data() + start, static_cast<size_t>(n)), {&slice, 1},
                         std::span<const int32_t>(rows.data(), static_cast<size_t>(n))},
            kv);
        for (int64_t i = 0; i < n; ++i)
          total_nll += negative_log_likelihood(r.logits + i * vocab, vocab, ids[static_cast<size_t>(start + i + 1)]);
        scored += n;
      }
      table.release_all(allocator);
    }
    const double mean = scored > 0 ? total_nll / static_cast<double>(scored) : 0.0;
    std::printf("%-28s %7zu %10lld %10.5f %12.4f\n", std::filesystem::path(file).filename().string().c_str(),
                texts.size(), static_cast<long long>(scored), mean, std::exp(mean));
  }
}

}  // namespace

void register_perplexity(CLI::App& app) {
  auto args = std::make_shared<PerplexityArgs>();
  CLI::App* cmd = app.add_subcommand("perplexity", "The target's perplexity on the texts of dataset files");
  add_model_options(cmd, args->model);
  cmd->add_option("--dataset", args->datasets, "Dataset file (repeatable; formats as for eval)")->required();
  cmd->add_option("--limit", args->limit, "Texts per dataset (0 = all)")->capture_default_str();
  cmd->callback([args] { run_perplexity(*args); });
}

}  // namespace dspark::cli
