// One target forward step of a ~30M-parameter Llama-shaped model (random weights):
// 1 token (plain decode) and 9 tokens (anchor + 8 drafts, a verification step), with a
// KV history of 128 positions (and 896 for two paths' verification ratio, where attention
// weighs more), for each matmul path this CPU has: bf16 weights under the ISA caps avx2
// (fma256), avx512 (fma512) and the best level (what `auto` picks), int8 weights (amx,
// vnni512, avxvnni and avx2), 4-bit weights (best, avxvnni and avx2), and f32 (the packed f32 kernels). Alongside, the machine's
// read bandwidth is measured in the same run, so the roofline fraction (weight bytes /
// bandwidth vs step time) compares like with like on a noisy machine.
//
//   build/bench/decode_step_bench [--benchmark_filter=...]   (threads: OMP_NUM_THREADS)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/threads.h"
#include "kernels/isa.h"
#include "model/block_allocator.h"
#include "model/kv_pool.h"
#include "model/transformer.h"
#include "support/tiny_models.h"

namespace dspark {
namespace {

constexpr int64_t kHistory = 128;      // KV positions before each benchmarked step
constexpr int64_t kLongHistory = 896;  // the long-context variant (tiny-target's context is 1,024)
constexpr int64_t kMaxStep = 64;       // largest step benchmarked

// A path runs under its ISA cap (ScopedIsaCap): the matmul kernels read the cap when they are
// built, the other vector kernels (attention, norms) on every call, so its steps need it too.

struct Fixture {
  std::unique_ptr<Transformer> model;
  std::unique_ptr<KvPool> kv;
  BlockAllocator allocator{(kLongHistory + kMaxStep) / 16};
  BlockTable table;
  int64_t history;

  Fixture(DType compute, Isa isa, WeightQuantization quantization, int64_t history_positions)
      : history(history_positions) {
    const testing::TinyModelSpec spec = testing::tiny_target_shape();
    static const auto dir = testing::write_tiny_model(spec, testing::make_temp_dir("decode-bench"));
    TransformerOptions opts;
    opts.compute = compute;
    opts.quantization = quantization;
    const ScopedIsaCap cap(isa);  // the matmul kernels are chosen at construction
    opts.max_batch_tokens = 128;
    model = Transformer::load(dir, opts);
    kv = std::make_unique<KvPool>(model->config(), KvPoolOptions{allocator.num_blocks(), 16, DType::kF32});
    table.reserve(history + kMaxStep, 16, allocator);
    for (int64_t done = 0; done < history;) {  // the prompt, in chunks of max_batch_tokens
      const int64_t n = std::min<int64_t>(history - done, opts.max_batch_tokens);
      std::vector<int32_t> prompt(static_cast<size_t>(n));
      std::iota(prompt.begin(), prompt.end(), static_cast<int32_t>(done + 1));
      const SequenceSlice slice{static_cast<int32_t>(n), static_cast<int32_t>(done), table.data()};
      model->forward(ForwardBatch{prompt, {&slice, 1}, {}}, *kv);
      done += n;
    }
  }

  // Re-runs positions [history, history + n): the KV history stays fixed.
  void step(int64_t n) {
    std::vector<int32_t> ids(n, 7), rows(n);
    std::iota(rows.begin(), rows.end(), 0);
    const SequenceSlice slice{static_cast<int32_t>(n), static_cast<int32_t>(history), table.data()};
    benchmark::DoNotOptimize(model->forward(ForwardBatch{ids, {&slice, 1}, rows}, *kv).logits);
  }
};

// With --benchmark_repetitions=N, "_min" rows give the least disturbed run (on a shared
// machine the mean mostly measures the neighbours).
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Matmul paths, by benchmark argument 0.
struct Path {
  const char* name;
  DType compute;
  Isa isa;
  WeightQuantization quantization;
};
const Path kPaths[] = {
    {"bf16 best", DType::kBF16, best_isa(), WeightQuantization::kNone},
    {"bf16 avx2", DType::kBF16, Isa::kAvx2, WeightQuantization::kNone},
    {"bf16 avx512", DType::kBF16, Isa::kAvx512, WeightQuantization::kNone},
    {"int8 vnni", DType::kBF16, Isa::kVnni, WeightQuantization::kInt8},
    {"f32 packed", DType::kF32, best_isa(), WeightQuantization::kNone},
    {"int8 avx2", DType::kBF16, Isa::kAvx2, WeightQuantization::kInt8},
    {"int8 avxvnni", DType::kBF16, Isa::kAvxVnni, WeightQuantization::kInt8},
    {"int8 amx", DType::kBF16, Isa::kAmx, WeightQuantization::kInt8},
    {"bf16 avx512fp16", DType::kBF16, Isa::kAvx512Fp16, WeightQuantization::kNone},
    {"int4 best", DType::kBF16, best_isa(), WeightQuantization::kInt4},
    {"int4 avx2", DType::kBF16, Isa::kAvx2, WeightQuantization::kInt4},
    {"int4 avxvnni", DType::kBF16, Isa::kAvxVnni, WeightQuantization::kInt4},
};

// history: kHistory or kLongHistory (one cached fixture each).
Fixture* fixture(int64_t path, int64_t history = kHistory) {
  static std::unique_ptr<Fixture> fixtures[std::size(kPaths)][2];
  const Path& p = kPaths[path];
  if (!isa_supported(p.isa)) return nullptr;
  if (history != kHistory && history != kLongHistory) return nullptr;
  std::unique_ptr<Fixture>& f = fixtures[path][history == kHistory ? 0 : 1];
  if (!f) f = std::make_unique<Fixture>(p.compute, p.isa, p.quantization, history);
  return f.get();
}

// args: path (kPaths), tokens in the step.
void BM_Step(benchmark::State& state) {
  Fixture* f = fixture(state.range(0));
  if (f == nullptr) {
    state.SkipWithError("this CPU lacks the ISA of this path");
    return;
  }
  const ScopedIsaCap cap(kPaths[state.range(0)].isa);
  const int64_t n = state.range(1);
  state.SetLabel(std::string(kPaths[state.range(0)].name) + " (" + f->model->matmul_kernel() + ")");
  for (auto _ : state) f->step(n);
  const double bytes = static_cast<double>(f->model->weight_bytes());
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate,
                                                     benchmark::Counter::kIs1000);
  state.counters["weight_MB"] = bytes / 1e6;
  state.counters["threads"] = num_threads();
}
BENCHMARK(BM_Step)
    ->ArgNames({"path", "tokens"})
    ->ArgsProduct({{0, 1, 2, 3, 9}, {1, 9, 16}})
    ->Args({4, 1})
    ->Args({4, 9})
    ->Args({0, 64})
    ->Args({3, 64})
    ->Args({7, 1})
    ->Args({7, 9})
    ->Args({8, 1})
    ->Args({8, 9})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0)
    ->ComputeStatistics("min", min_of);

// The verification cost ratio, noise-robust: 1-token and 9-token steps alternate, so both
// see the same neighbours; reports the median of each and their ratio (the number the
// speculation speedup depends on). args: path, KV history.
void BM_VerifyOverDecode(benchmark::State& state) {
  Fixture* f = fixture(state.range(0), state.range(1));
  if (f == nullptr) {
    state.SkipWithError("this CPU lacks the ISA of this path, or the history is not a benchmarked one");
    return;
  }
  const ScopedIsaCap cap(kPaths[state.range(0)].isa);
  state.SetLabel(std::string(kPaths[state.range(0)].name) + " (" + f->model->matmul_kernel() + ")");
  std::vector<double> one, nine;
  auto timed = [&](int64_t n) {
    const auto start = std::chrono::steady_clock::now();
    f->step(n);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  for (auto _ : state) {
    one.push_back(timed(1));
    nine.push_back(timed(9));
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double t1 = median(one), t9 = median(nine);
  state.counters["t1_ms"] = t1;
  state.counters["t9_ms"] = t9;
  state.counters["t9/t1"] = t9 / t1;
}
BENCHMARK(BM_VerifyOverDecode)
    ->ArgNames({"path", "history"})
    ->ArgsProduct({benchmark::CreateDenseRange(0, 11, 1), {kHistory}})
    ->Args({0, kLongHistory})
    ->Args({3, kLongHistory})
    ->Iterations(300)
    ->Unit(benchmark::kMillisecond);

// Streaming read with the same OpenMP threads: the decode roofline's bandwidth. Two sizes:
// 64 MB (about the model's weights, which may stay in a large last-level cache across
// steps) and 2 GB (well past any cache: DRAM bandwidth); in 4 KB pages and in 2 MB pages
// where the kernel gives them (the weights' placement, core/huge_pages.h).
void BM_ReadBandwidth(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  AlignedBuffer buffer = state.range(1) != 0 ? AlignedBuffer::in_huge_pages(n) : AlignedBuffer(n);
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
BENCHMARK(BM_ReadBandwidth)
    ->ArgNames({"MB", "huge_pages"})
    ->ArgsProduct({{64, 2048}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

}  // namespace
}  // namespace dspark

BENCHMARK_MAIN();
