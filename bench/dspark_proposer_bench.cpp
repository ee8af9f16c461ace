// One DSpark drafter pass next to one target decode step, measured side by side in the same
// iterations (this machine is shared and noisy: only ratios within one run mean anything).
//
// Shapes: the target is models/tiny-target's (Llama, hidden 512, 8 layers, 8 heads / 4 KV
// heads of 64, FFN 1536, vocabulary 8192, tied embeddings, bf16); the drafter is a Qwen3-
// layer DSpark drafter of the same width with 1 or 2 layers, 3 aux layers, block γ = 8 (8
// drafts, the anchor slot predicts), Markov rank 64, confidence head on the Markov feature.
// Random weights; compute bf16; context 128..400 positions.
//
// Per iteration, for a batch of B requests (B = 1, 16):
//   target_us   one target forward of B sequences x 1 token (a plain decode step)
//   propose_us  one propose(): the block pass (B x 8 rows), LM head over B x 8 rows, and the
//               sequential Markov / sampling / confidence stage (greedy requests)
//   observe_us  the context work of a round: one observe() of 4 committed positions per
//               request (anchor + 3 accepted) and the catch_up() that projects them
//   ratio       propose / target;  round_ratio (propose + observe) / target
// Reported as the mean and the minimum over iterations (min = least disturbed).
//
// BM_IdleContext: steps in which nobody drafts (a busy engine on the adaptive schedule):
// one target decode step of B = 16 sequences and the observe() of their one committed
// position each, with the projection done at once (pending 0) or deferred (the default);
// context_us per step and its ratio to the target step.
//
// BM_LongContext: one request whose prompt has `context` positions (1K, 8K, 32K), with the
// drafter's context window off (0) or at its default (2048): prefill_ms is the drafter's
// share of the prompt (observe() in chunks of 128, then catch_up), propose_us one round's
// propose() and the observe() of its 4 committed positions; kv_blocks what the drafter
// holds afterwards. Without a window both grow with the prompt; with one they stay flat.
//
//   build/bench/dspark_proposer_bench [--benchmark_filter=...]   (threads: OMP_NUM_THREADS)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "core/threads.h"
#include "model/block_allocator.h"
#include "model/kv_pool.h"
#include "model/transformer.h"
#include "spec/drafter_fixtures.h"
#include "spec/dspark_proposer.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kHistory = 128;
constexpr int64_t kMaxContext = 400;
constexpr int64_t kMaxBatch = 16;
constexpr int32_t kObserveRows = 4;

const std::filesystem::path& target_dir() {
  static const auto dir = [] {
    const testing::TinyModelSpec spec = testing::tiny_target_shape();
    return testing::write_tiny_model(spec, testing::make_temp_dir("dspark-bench-target"));
  }();
  return dir;
}

std::filesystem::path drafter_dir(int64_t num_layers) {
  const ModelConfig target = ModelConfig::from_file(target_dir());
  nlohmann::json layer = {{"model_type", "qwen3"},         {"vocab_size", 8192},       {"hidden_size", 512},
                          {"intermediate_size", 1536},     {"num_hidden_layers", num_layers},
                          {"num_attention_heads", 8},      {"num_key_value_heads", 4}, {"head_dim", 64},
                          {"max_position_embeddings", 1024}, {"rope_theta", 10000.0}};
  DrafterConfig c = testing::make_drafter_config(target, DrafterKind::kDSpark, {2, 5, 8}, 8, num_layers, 64);
  c.layer = ModelConfig::from_json(layer, "bench drafter layer");
  testing::DrafterWeightsSpec spec;
  spec.file_dtype = DType::kBF16;
  spec.markov_scale = 0.2f;
  return testing::write_random_drafter(c, testing::make_temp_dir("dspark-bench-drafter"), spec);
}

struct Fixture {
  std::unique_ptr<Transformer> target;
  std::unique_ptr<KvPool> kv;
  BlockAllocator allocator{kMaxBatch * 16};
  std::vector<BlockTable> tables;
  std::unique_ptr<DSparkProposer> drafter;
  std::vector<float> hidden;        // [3 layers, kObserveRows * kMaxBatch max, 512] random target states
  std::vector<int32_t> tokens;      // [kMaxContext + 1]
  std::vector<int32_t> observed;    // [kMaxBatch] positions each slot has seen
  SamplingParams greedy;

  explicit Fixture(int64_t drafter_layers, int64_t max_pending_positions = -1)
      : tables(kMaxBatch), observed(kMaxBatch, 0) {
    TransformerOptions opts;
    opts.compute = DType::kBF16;
    opts.max_batch_tokens = 128;
    opts.max_sequences = kMaxBatch;
    target = Transformer::load(target_dir(), opts);
    kv = std::make_unique<KvPool>(target->config(), KvPoolOptions{kMaxBatch * 16, 16, DType::kF32});
    std::vector<int32_t> prompt(kHistory);
    std::iota(prompt.begin(), prompt.end(), 1);
    for (auto& t : tables) {
      t.reserve(kHistory + 16, 16, allocator);
      const SequenceSlice slice{static_cast<int32_t>(kHistory), 0, t.data()};
      target->forward(ForwardBatch{prompt, {&slice, 1}, {}}, *kv);
    }
    DSparkProposerOptions o;
    o.max_running = kMaxBatch;
    o.max_model_len = 1024;
    o.max_context_rows = 128;
    o.compute = DType::kBF16;
    o.max_pending_positions = max_pending_positions;
    drafter = DSparkProposer::load(drafter_dir(drafter_layers), target_dir(), o);
    Rng rng(3);
    hidden.resize(3 * 128 * 512);
    for (float& x : hidden) x = static_cast<float>(rng.uniform() * 4 - 2);
    tokens.resize(kMaxContext + 1);
    for (auto& t : tokens) t = static_cast<int32_t>(3 + rng.next_u64() % 8000);
    greedy.temperature = 0;
    for (int32_t s = 0; s < kMaxBatch; ++s) reset(s);
  }

  // Shows `rows` more positions of every slot in [0, batch) to the drafter in one call.
  void observe(int64_t batch, int32_t rows) {
    std::vector<CommittedHiddenStates> committed;
    for (int32_t s = 0; s < batch; ++s) {
      CommittedHiddenStates c;
      c.slot = s;
      c.start_position = observed[s];
      c.num_positions = rows;
      c.hidden = hidden.data();
      c.layer_stride = 128 * 512;
      c.hidden_size = 512;
      committed.push_back(c);
      observed[s] += rows;
    }
    drafter->observe(committed);
  }

  void reset(int32_t slot) {
    drafter->release(slot);
    observed[slot] = 0;
    CommittedHiddenStates c{slot, 0, static_cast<int32_t>(kHistory), hidden.data(), 0, 512, {}};
    c.layer_stride = 0;  // the same rows for every aux layer: values do not matter here
    drafter->observe({&c, 1});
    observed[slot] = kHistory;
  }

  void target_step(int64_t batch) {
    std::vector<int32_t> ids(batch, 7), rows(batch);
    std::iota(rows.begin(), rows.end(), 0);
    std::vector<SequenceSlice> slices;
    for (int64_t s = 0; s < batch; ++s) slices.push_back({1, static_cast<int32_t>(kHistory), tables[s].data()});
    benchmark::DoNotOptimize(target->forward(ForwardBatch{ids, slices, rows}, *kv).logits);
  }

  std::vector<DraftRequest> requests(int64_t batch) {
    std::vector<DraftRequest> r;
    for (int32_t s = 0; s < batch; ++s) {
      r.push_back({s, std::span<const int32_t>(tokens.data(), observed[s] + 1), &greedy, nullptr, 8});
    }
    return r;
  }

  void catch_up(int64_t batch) { drafter->catch_up(requests(batch)); }

  void propose(int64_t batch) {
    std::vector<Draft> drafts(batch);
    drafter->propose(requests(batch), drafts);
    benchmark::DoNotOptimize(drafts[0].tokens.data());
  }
};

Fixture& fixture(int64_t layers) {
  static Fixture one(1);
  static Fixture two(2);
  return layers == 1 ? one : two;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

void BM_DrafterVsTargetStep(benchmark::State& state) {
  Fixture& f = fixture(state.range(0));
  const int64_t batch = state.range(1);
  double target_sum = 0, propose_sum = 0, observe_sum = 0;
  double target_min = 1e30, propose_min = 1e30, observe_min = 1e30;
  int64_t n = 0;
  for (auto _ : state) {
    if (f.observed[0] + kObserveRows >= kMaxContext) {
      for (int32_t s = 0; s < batch; ++s) f.reset(s);
    }
    auto t0 = std::chrono::steady_clock::now();
    f.target_step(batch);
    const double t = since(t0);
    t0 = std::chrono::steady_clock::now();
    f.catch_up(batch);
    const double c = since(t0);
    t0 = std::chrono::steady_clock::now();
    f.propose(batch);
    const double p = since(t0);
    t0 = std::chrono::steady_clock::now();
    f.observe(batch, kObserveRows);
    const double o = c + since(t0);
    target_sum += t, propose_sum += p, observe_sum += o, ++n;
    target_min = std::min(target_min, t), propose_min = std::min(propose_min, p), observe_min = std::min(observe_min, o);
  }
  state.counters["target_us"] = target_sum / n;
  state.counters["propose_us"] = propose_sum / n;
  state.counters["observe_us"] = observe_sum / n;
  state.counters["ratio"] = propose_sum / target_sum;
  state.counters["round_ratio"] = (propose_sum + observe_sum) / target_sum;
  state.counters["min_target_us"] = target_min;
  state.counters["min_propose_us"] = propose_min;
  state.counters["min_ratio"] = propose_min / target_min;
  state.counters["min_round_ratio"] = (propose_min + observe_min) / target_min;
  state.counters["threads"] = num_threads();
}
BENCHMARK(BM_DrafterVsTargetStep)
    ->ArgNames({"layers", "batch"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({1, 16})
    ->Args({2, 16})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

void BM_IdleContext(benchmark::State& state) {
  static Fixture deferred(1);
  static Fixture at_once(1, /*max_pending_positions=*/0);
  Fixture& f = state.range(0) == 0 ? at_once : deferred;
  const int64_t batch = kMaxBatch;
  double target_sum = 0, context_sum = 0;
  int64_t n = 0;
  for (auto _ : state) {
    if (f.observed[0] + 1 >= kMaxContext) {
      for (int32_t s = 0; s < batch; ++s) f.reset(s);
    }
    auto t0 = std::chrono::steady_clock::now();
    f.target_step(batch);
    target_sum += since(t0);
    t0 = std::chrono::steady_clock::now();
    f.observe(batch, 1);
    context_sum += since(t0);
    ++n;
  }
  state.counters["target_us"] = target_sum / n;
  state.counters["context_us"] = context_sum / n;
  state.counters["context_ratio"] = context_sum / target_sum;
  state.counters["threads"] = num_threads();
}
BENCHMARK(BM_IdleContext)->ArgNames({"pending"})->Arg(0)->Arg(-1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_LongContext(benchmark::State& state) {
  const int32_t context = static_cast<int32_t>(state.range(0));
  constexpr int32_t kChunk = 128;
  static const std::filesystem::path drafter = drafter_dir(1);
  Rng rng(5);
  std::vector<float> hidden(3 * kChunk * 512);  // [3 aux layers, kChunk, 512]
  for (float& x : hidden) x = static_cast<float>(rng.uniform() * 4 - 2);
  std::vector<int32_t> tokens(context + 64);
  for (auto& t : tokens) t = static_cast<int32_t>(3 + rng.next_u64() % 8000);
  SamplingParams greedy;
  greedy.temperature = 0;
  DSparkProposerOptions o;
  o.max_running = 1;
  o.max_model_len = context + 64;
  o.max_context_rows = kChunk;
  o.compute = DType::kBF16;
  o.context_window = state.range(1);
  const auto p = DSparkProposer::load(drafter, target_dir(), o);
  auto observe = [&](int32_t start, int32_t rows) {
    const CommittedHiddenStates c{0, start, rows, hidden.data(), kChunk * 512, 512, tokens};
    p->observe({&c, 1});
  };
  double prefill_sum = 0, round_sum = 0;
  int64_t n = 0, rounds = 0;
  for (auto _ : state) {
    p->release(0);
    auto t0 = std::chrono::steady_clock::now();
    for (int32_t start = 0; start < context; start += kChunk) observe(start, std::min(kChunk, context - start));
    const DraftRequest prompt_end{0, std::span<const int32_t>(tokens.data(), context + 1), &greedy, nullptr, 8};
    p->catch_up({&prompt_end, 1});
    prefill_sum += since(t0);
    for (int32_t r = 0; r < 8; ++r, ++rounds) {  // rounds of 3 accepted drafts: 4 new positions each
      const int32_t c = context + 4 * r;
      const DraftRequest req{0, std::span<const int32_t>(tokens.data(), c + 1), &greedy, nullptr, 8};
      Draft d;
      t0 = std::chrono::steady_clock::now();
      p->propose({&req, 1}, {&d, 1});
      observe(c, 4);
      round_sum += since(t0);
    }
    ++n;
  }
  state.counters["prefill_ms"] = prefill_sum / n / 1e3;
  state.counters["propose_us"] = round_sum / rounds;
  state.counters["kv_blocks"] = static_cast<double>(p->kv_blocks_in_use());
  state.counters["threads"] = num_threads();
}
BENCHMARK(BM_LongContext)
    ->ArgNames({"context", "window"})
    ->ArgsProduct({{1024, 8192, 32768}, {0, 2048}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

}  // namespace
}  // namespace dspark

BENCHMARK_MAIN();
