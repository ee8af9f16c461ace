// One target forward step of a ~30M-parameter Llama-shaped model (random weights):
// 1 token (plain decode) and 9 tokens (anchor + 8 drafts, a verification step), with a
// KV history of 128 positions. Alongside, the machine's read bandwidth is measured in the
// same run, so the roofline fraction (weight bytes / bandwidth vs step time) compares
// like with like on a noisy machine.
//
//   build/bench/decode_step_bench [--benchmark_filter=...]   (threads: OMP_NUM_THREADS)
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <numeric>

#include "core/aligned_buffer.h"
#include "core/threads.h"
#include "model/block_allocator.h"
#include "model/kv_pool.h"
#include "model/transformer.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kHistory = 128;
constexpr int64_t kMaxStep = 64;  // largest step benchmarked

struct Fixture {
  std::unique_ptr<Transformer> model;
  std::unique_ptr<KvPool> kv;
  BlockAllocator allocator{64};
  BlockTable table;

  explicit Fixture(DType compute) {
    testing::TinyModelSpec spec;
    spec.model_type = "llama";
    spec.vocab_size = 8192;
    spec.hidden_size = 512;
    spec.num_layers = 8;
    spec.num_heads = 8;
    spec.num_kv_heads = 4;
    spec.head_dim = 64;
    spec.intermediate_size = 1536;
    spec.max_position_embeddings = 1024;
    spec.tie_word_embeddings = true;
    spec.file_dtype = DType::kBF16;
    static const auto dir = testing::write_tiny_model(spec, testing::make_temp_dir("decode-bench"));
    TransformerOptions opts;
    opts.compute = compute;
    opts.max_batch_tokens = 128;
    model = Transformer::load(dir, opts);
    kv = std::make_unique<KvPool>(model->config(), KvPoolOptions{64, 16, DType::kF32});
    table.reserve(kHistory + kMaxStep, 16, allocator);
    std::vector<int32_t> prompt(kHistory);
    std::iota(prompt.begin(), prompt.end(), 1);
    const SequenceSlice slice{static_cast<int32_t>(kHistory), 0, table.data()};
    model->forward(ForwardBatch{prompt, {&slice, 1}, {}}, *kv);
  }

  // Re-runs positions [kHistory, kHistory + n): the KV history stays fixed.
  void step(int64_t n) {
    std::vector<int32_t> ids(n, 7), rows(n);
    std::iota(rows.begin(), rows.end(), 0);
    const SequenceSlice slice{static_cast<int32_t>(n), static_cast<int32_t>(kHistory), table.data()};
    benchmark::DoNotOptimize(model->forward(ForwardBatch{ids, {&slice, 1}, rows}, *kv).logits);
  }
};

Fixture& fixture(DType compute) {
  static Fixture bf16(DType::kBF16);
  static Fixture f32(DType::kF32);
  return compute == DType::kBF16 ? bf16 : f32;
}

void step_benchmark(benchmark::State& state, DType compute) {
  Fixture& f = fixture(compute);
  const int64_t n = state.range(0);
  for (auto _ : state) f.step(n);
  const double bytes = static_cast<double>(f.model->weight_bytes());
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::kIs1000);
  state.counters["weight_MB"] = bytes / 1e6;
  state.counters["threads"] = num_threads();
}

void BM_StepBf16(benchmark::State& state) { step_benchmark(state, DType::kBF16); }
void BM_StepF32(benchmark::State& state) { step_benchmark(state, DType::kF32); }
BENCHMARK(BM_StepBf16)->Arg(1)->Arg(9)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_StepF32)->Arg(1)->Arg(9)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Streaming read with the same OpenMP threads: the decode roofline's bandwidth. Two sizes:
// 64 MB (about the model's weights, which may stay in a large last-level cache across
// steps) and 2 GB (well past any cache: DRAM bandwidth).
void BM_ReadBandwidth(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  AlignedBuffer buffer(n);
  std::memset(buffer.data(), 1, n);
  const auto* p = buffer.as<const uint64_t>();
  const int64_t words = static_cast<int64_t>(n / 8);
  for (auto _ : state) {
    uint64_t sum = 0;
#pragma omp parallel for reduction(^ : sum) schedule(static)
    for (int64_t i = 0; i < words; i += 8) {
      sum ^= p[i] ^ p[i + 1] ^ p[i + 2] ^ p[i + 3] ^ p[i + 4] ^ p[i + 5] ^ p[i + 6] ^ p[i + 7];
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
}
BENCHMARK(BM_ReadBandwidth)->Arg(64)->Arg(2048)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace
}  // namespace dspark

BENCHMARK_MAIN();
