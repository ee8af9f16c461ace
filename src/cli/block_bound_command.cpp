// dspark block-bound: how much any block drafter could be accepted on a model, data set and
// temperature (spec/block_bound.h): for each prompt the target samples an answer; at
// anchors along it, it samples --samples continuations of --block tokens, and the spread
// of its own distributions over them bounds what drafting a block in one pass can reach.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "core/check.h"
#include "core/rng.h"
#include "kernels/sampling.h"
#include "loadgen/dataset.h"
#include "model/block_allocator.h"
#include "model/kv_pool.h"
#include "spec/block_bound.h"

namespace dspark::cli {
namespace {

struct BlockBoundArgs {
  ModelArgs model;
  std::vector<std::string> datasets;
  int64_t limit = 20;       // prompts per dataset (0 = all)
  float temperature = 1.0f;
  int64_t samples = 64;     // continuations per anchor
  int64_t block = 8;        // positions drafted in one pass
  int64_t stride = 16;      // answer tokens between anchors
  int64_t max_tokens = 128; // answer length
  uint64_t seed = 1;
};

// The entropy of p [vocab] in nats.
double entropy(const float* p, int64_t vocab) {
  double h = 0.0;
  for (int64_t v = 0; v < vocab; ++v)
    if (p[v] > 0.0f) h -= static_cast<double>(p[v]) * std::log(static_cast<double>(p[v]));
  return h;
}

// Bounds summed over anchors, per domain.
struct Totals {
  int64_t prompts = 0, anchors = 0;
  double entropy = 0.0;  // of p at the first draft position, summed over anchors
  std::vector<double> marginal, first_order;  // [block] survivals summed over anchors
};

void run_block_bound(BlockBoundArgs args) {
  DSPARK_CHECK(!args.datasets.empty(), "block-bound: give at least one --dataset");
  DSPARK_CHECK(args.temperature > 0.0f, "block-bound: --temperature must be > 0 (greedy drafts lose nothing)");
  DSPARK_CHECK(args.samples >= 2 && args.block >= 1 && args.stride >= 1 && args.max_tokens >= 1,
               "block-bound: --samples >= 2, --block, --stride and --max-tokens >= 1");
  constexpr int64_t kBlockSize = 16;
  // One forward recomputes each continuation's partial last block (< 16 tokens).
  args.model.max_batch_tokens = std::max(args.model.max_batch_tokens, args.samples * kBlockSize);
  Assembly loaded = assemble(args.model, SpeculatorOptions{}, args.samples + 1);
  Transformer& model = *loaded.target;
  const int64_t vocab = model.config().vocab_size, S = args.samples, K = args.block;
  const int64_t context = model.max_model_len();
  const int64_t answer_blocks = (context + kBlockSize - 1) / kBlockSize;
  const int64_t num_blocks = answer_blocks + S * ((kBlockSize + K + kBlockSize - 1) / kBlockSize + 1);
  KvPool kv(model.config(), KvPoolOptions{num_blocks, kBlockSize, parse_dtype(args.model.kv_dtype)});
  BlockAllocator allocator(num_blocks);
  Rng rng(args.seed);
  // The engine's own transform (softmax at the temperature) and inverse-CDF draw.
  LogitsProcessor processor(vocab);
  SamplingParams sampling;
  sampling.temperature = args.temperature;
  auto to_probs = [&](const float* logits, float* probs) { processor.to_probs(logits, probs, sampling, {}, 0); };
  auto draw = [&](const float* probs) { return sample_from_probs(probs, vocab, rng.uniform()); };
  std::vector<float> p(static_cast<size_t>(vocab));
  ContinuationSamples c{S, K, vocab, std::vector<float>(static_cast<size_t>(S * K * vocab)),
                        std::vector<int32_t>(static_cast<size_t>(S * K))};
  std::map<std::string, Totals> totals;

  for (const std::string& file : args.datasets)
    for (const DatasetPrompt& prompt : load_dataset(file, args.limit)) {
      std::vector<int32_t> ids = loaded.tokenizer->encode(prompt.text, true);
      if (static_cast<int64_t>(ids.size()) + args.max_tokens + K > context) continue;
      Totals& t = totals[prompt.domain];
      ++t.prompts;
      BlockTable answer;  // sequence 0: prompt + the sampled answer
      // Feeds ids[from, ids.size()) to the answer sequence; p = the target's next distribution.
      auto feed_answer = [&](int64_t from) {
        for (int64_t start = from; start < static_cast<int64_t>(ids.size());) {
          const int64_t n = std::min<int64_t>(model.options().max_batch_tokens, static_cast<int64_t>(ids.size()) - start);
          DSPARK_CHECK(answer.reserve(start + n, kBlockSize, allocator), "block-bound: KV pool full");
          const SequenceSlice slice{static_cast<int32_t>(n), static_cast<int32_t>(start), answer.data()};
          const int32_t last = static_cast<int32_t>(n - 1);
          const ForwardResult r = model.forward(
              ForwardBatch{std::span<const int32_t>(ids.data() + start, static_cast<size_t>(n)), {&slice, 1}, {&last, 1}},
              kv);
          start += n;
          if (start == static_cast<int64_t>(ids.size())) to_probs(r.logits, p.data());
        }
      };
      feed_answer(0);
      for (int64_t a = 0; a < args.max_tokens; ++a) {
        const int32_t token = draw(p.data());
        ids.push_back(token);
        const auto& eos = model.config().eos_token_ids;
        if (std::find(eos.begin(), eos.end(), token) != eos.end()) break;
        feed_answer(static_cast<int64_t>(ids.size()) - 1);
        if (a % args.stride != 0 || a + K >= args.max_tokens) continue;
        // Anchor: S continuations share the answer's full blocks and recompute its last
        // partial one, then draw K tokens each.
        const int64_t len = static_cast<int64_t>(ids.size());
        const int64_t shared = (len - 1) / kBlockSize;  // full blocks before the anchor's
        std::vector<BlockTable> forks(static_cast<size_t>(S));
        std::vector<SequenceSlice> slices(static_cast<size_t>(S));
        std::vector<int32_t> tokens, rows;
        for (int64_t s = 0; s < S; ++s) {
          for (int64_t b = 0; b < shared; ++b) {
            allocator.retain(answer[b]);
            forks[s].append_shared(answer[b]);
          }
          DSPARK_CHECK(forks[s].reserve(len + K, kBlockSize, allocator), "block-bound: KV pool full");
          const int64_t first = shared * kBlockSize;
          tokens.insert(tokens.end(), ids.begin() + first, ids.end());
          rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
          slices[s] = {static_cast<int32_t>(len - first), static_cast<int32_t>(first), forks[s].data()};
        }
        for (int64_t j = 0; j < K; ++j) {
          const ForwardResult r = model.forward(ForwardBatch{tokens, slices, rows}, kv);
          tokens.clear();
          rows.clear();
          for (int64_t s = 0; s < S; ++s) {
            float* ps = c.probs.data() + (s * K + j) * vocab;
            to_probs(r.logits + s * vocab, ps);
            if (j == 0 && s == 0) t.entropy += entropy(ps, vocab);
            // Batch invariance: a continuation's first distribution is the answer's own, bit
            // for bit, or the shared KV blocks are wrong.
            DSPARK_CHECK(j > 0 || std::equal(ps, ps + vocab, p.data()),
                         "block-bound: continuation {} starts from another distribution than the answer", s);
            const int32_t drawn = draw(ps);
            c.tokens[static_cast<size_t>(s * K + j)] = drawn;
            slices[s] = {1, static_cast<int32_t>(len + j), forks[s].data()};
            rows.push_back(static_cast<int32_t>(tokens.size()));
            tokens.push_back(drawn);
          }
        }
        for (BlockTable& f : forks) f.release_all(allocator);
        const BlockBound bound = block_drafter_bound(c);
        t.marginal.resize(static_cast<size_t>(K), 0.0);
        t.first_order.resize(static_cast<size_t>(K), 0.0);
        for (int64_t j = 0; j < K; ++j) {
          t.marginal[j] += bound.marginal_survival[j];
          t.first_order[j] += bound.first_order_survival[j];
        }
        ++t.anchors;
      }
      answer.release_all(allocator);
    }

  std::printf("temperature %.2f, block %lld, %lld continuations per anchor, an anchor every %lld answer tokens\n",
              args.temperature, static_cast<long long>(K), static_cast<long long>(S),
              static_cast<long long>(args.stride));
  std::printf("%-12s %7s %7s %8s  %-9s %-48s %-9s %s\n", "domain", "prompts", "anchors", "H(p1)", "tau marg",
              "survival per position (marginal)", "tau 1st", "survival per position (first order)");
  Totals all;
  auto print = [&](const std::string& name, const Totals& t) {
    if (t.anchors == 0) return;
    const double n = static_cast<double>(t.anchors);
    std::string marginal, first_order;
    double tau_m = 1.0, tau_f = 1.0;
    for (int64_t j = 0; j < K; ++j) {
      marginal += fmt::format("{:.2f} ", t.marginal[j] / n);
      first_order += fmt::format("{:.2f} ", t.first_order[j] / n);
      tau_m += t.marginal[j] / n;
      tau_f += t.first_order[j] / n;
    }
    std::printf("%-12s %7lld %7lld %8.3f  %-9.3f %-48s %-9.3f %s\n", name.c_str(), static_cast<long long>(t.prompts),
                static_cast<long long>(t.anchors), t.entropy / n, tau_m, marginal.c_str(), tau_f, first_order.c_str());
  };
  for (const auto& [name, t] : totals) {
    print(name, t);
    all.prompts += t.prompts;
    all.anchors += t.anchors;
    all.entropy += t.entropy;
    all.marginal.resize(static_cast<size_t>(K), 0.0);
    all.first_order.resize(static_cast<size_t>(K), 0.0);
    for (int64_t j = 0; j < K && !t.marginal.empty(); ++j) {
      all.marginal[j] += t.marginal[j];
      all.first_order[j] += t.first_order[j];
    }
  }
  if (totals.size() > 1) print("all", all);
}

}  // namespace

void register_block_bound(CLI::App& app) {
  auto args = std::make_shared<BlockBoundArgs>();
  CLI::App* cmd = app.add_subcommand(
      "block-bound", "How much a block drafter could be accepted at a temperature (the target's own spread)");
  add_model_options(cmd, args->model);
  cmd->add_option("--dataset", args->datasets, "Dataset file (repeatable; formats as for eval)")->required();
  cmd->add_option("--limit", args->limit, "Prompts per dataset (0 = all)")->capture_default_str();
  cmd->add_option("--temperature", args->temperature, "Sampling temperature (> 0)")->capture_default_str();
  cmd->add_option("--samples", args->samples, "Continuations sampled per anchor")->capture_default_str();
  cmd->add_option("--block", args->block, "Positions drafted in one pass")->capture_default_str();
  cmd->add_option("--stride", args->stride, "Answer tokens between anchors")->capture_default_str();
  cmd->add_option("--max-tokens", args->max_tokens, "Answer tokens sampled per prompt")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Sampling seed")->capture_default_str();
  cmd->callback([args] { run_block_bound(*args); });
}

}  // namespace dspark::cli
