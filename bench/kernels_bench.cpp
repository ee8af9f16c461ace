// Kernel microbenchmarks. Run with OMP_NUM_THREADS=1 and =2 and compare within one run
// (these machines are shared and noisy).
//
// Linear: rows of the decoder's shapes at M = 1, 9, 64, reported as GB/s of packed weight
// bytes (the decode roofline) and GFLOP/s. "hot" repeats one matrix (cache resident when it
// fits); "stream" cycles through copies totalling >= 32 MB, as a model's layers do, so the
// weights come from L3 like in a decode step. BM_ReadBandwidth reads 32 MB the same way
// (the roofline to compare "stream" GB/s with, measured in the same run).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "core/threads.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/isa.h"
#include "kernels/linear.h"
#include "kernels/norm.h"
#include "kernels/packed_bf16_gemm.h"
#include "kernels/packed_int8_gemm.h"
#include "kernels/sampling.h"

namespace dspark {
namespace {

std::vector<float> random_floats(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform()) * 2.0f - 1.0f;
  return v;
}

// 0: Linear kAuto bf16 (the kernel best_bf16_kernel() picks), 1-4: the packed bf16 kernels
// fma256, fma512, dpbf16, amx, 5: int8 weights (best_int8_kernel()), 6: Linear kOneDnn bf16 (capped at
// AVX-512 BF16), 7: Linear kOneDnn f32, 8: Linear kPackedF32 (f32 weights, what f32 models
// use), 9: the packed bf16 kernel fp16, 10: 4-bit weights (best_int8_kernel(4)). Kinds the CPU
// lacks (or where oneDNN would not be batch invariant) are skipped.
enum class Kind {
  kPackedBest, kFma256, kFma512, kDpbf16, kAmx, kInt8, kOneDnnBf16, kOneDnnF32, kPackedF32, kFp16, kInt4
};

Bf16Kernel bf16_kernel_of(Kind kind) {
  switch (kind) {
    case Kind::kFma256: return Bf16Kernel::kFma256;
    case Kind::kFma512: return Bf16Kernel::kFma512;
    case Kind::kDpbf16: return Bf16Kernel::kDpbf16;
    case Kind::kAmx: return Bf16Kernel::kAmx;
    case Kind::kFp16: return Bf16Kernel::kFp16;
    default: return Bf16Kernel::kBest;
  }
}

bool kind_available(Kind kind) {
  if (kind == Kind::kInt8 || kind == Kind::kInt4 || kind == Kind::kPackedF32) return true;  // on every level
  if (kind == Kind::kOneDnnBf16) return linear_backend_supported(LinearBackend::kOneDnn, DType::kBF16);
  if (kind == Kind::kOneDnnF32) return linear_backend_supported(LinearBackend::kOneDnn, DType::kF32);
  const Bf16Kernel k = bf16_kernel_of(kind);
  return k == Bf16Kernel::kBest || isa_allowed(bf16_kernel_isa(k));
}

// One weight matrix behind a uniform call: forward(x, y, rows).
class LinearCase {
 public:
  LinearCase(Kind kind, const std::vector<float>& w, int64_t out, int64_t in, int64_t max_rows) {
    if (bf16_kernel_of(kind) != Bf16Kernel::kBest) {
      gemm_ = std::make_unique<PackedBf16Gemm>(w.data(), out, in, std::span<const float>{}, max_rows,
                                               bf16_kernel_of(kind));
      return;
    }
    const bool f32 = kind == Kind::kOneDnnF32 || kind == Kind::kPackedF32;
    const bool integer = kind == Kind::kInt8 || kind == Kind::kInt4;
    LinearOptions options{f32 ? DType::kF32 : DType::kBF16, max_rows,
                          kind == Kind::kPackedBest  ? LinearBackend::kPackedBf16
                          : integer                  ? LinearBackend::kPackedInt8
                          : kind == Kind::kPackedF32 ? LinearBackend::kPackedF32
                                                     : LinearBackend::kOneDnn,
                          kind == Kind::kInt8   ? WeightQuantization::kInt8
                          : kind == Kind::kInt4 ? WeightQuantization::kInt4
                                                : WeightQuantization::kNone};
    linear_ = std::make_unique<Linear>(w, out, in, std::span<const float>{}, options);
  }
  size_t weight_bytes() const { return gemm_ ? gemm_->weight_bytes() : linear_->weight_bytes(); }
  void prepare(int64_t rows) {
    if (linear_) linear_->prepare(rows);
  }
  void forward(const float* x, float* y, int64_t rows) {
    if (linear_) return linear_->forward(x, y, rows);
    gemm_->multiply(x, y, rows);
  }

 private:
  std::unique_ptr<Linear> linear_;
  std::unique_ptr<PackedBf16Gemm> gemm_;
};

// args: kind, out, in, M, stream (0 = hot, 1 = cycle through >= 32 MB of copies)
void BM_Linear(benchmark::State& state) {
  const auto kind = static_cast<Kind>(state.range(0));
  const int64_t out = state.range(1), in = state.range(2), rows = state.range(3);
  const bool stream = state.range(4) != 0;
  if (!kind_available(kind)) {
    state.SkipWithError("kernel not available on this CPU / ISA cap");
    return;
  }
  const auto w = random_floats(static_cast<size_t>(out * in), 1);
  std::vector<std::unique_ptr<LinearCase>> copies;
  copies.push_back(std::make_unique<LinearCase>(kind, w, out, in, 64));
  const size_t bytes = copies[0]->weight_bytes();
  if (stream) {
    const size_t count = std::min<size_t>(256, (size_t{32} << 20) / bytes + 1);
    while (copies.size() < count) copies.push_back(std::make_unique<LinearCase>(kind, w, out, in, 64));
  }
  for (auto& c : copies) c->prepare(rows);
  const auto x = random_floats(static_cast<size_t>(rows * in), 2);
  std::vector<float> y(static_cast<size_t>(rows * out));
  size_t next = 0;
  for (auto _ : state) {
    copies[next]->forward(x.data(), y.data(), rows);
    next = next + 1 == copies.size() ? 0 : next + 1;
    benchmark::DoNotOptimize(y.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["wGB/s"] = benchmark::Counter(iters * static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(iters * 2.0 * static_cast<double>(rows * out * in) / 1e9, benchmark::Counter::kIsRate);
}

// With --benchmark_repetitions=N, "_min" rows give the least disturbed run (on a shared
// machine the mean mostly measures the neighbours). Rate counters get the same statistic,
// so derive best rates from the min time.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Plain sequential read of `mb` MB split over the OpenMP threads.
void BM_ReadBandwidth(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0)) << 20;
  AlignedBuffer buffer(n);
  std::memset(buffer.data(), 1, n);
  const auto* p = buffer.as<const uint64_t>();
  const int64_t words = static_cast<int64_t>(n / 8);
  for (auto _ : state) {
    uint64_t sum = 0;
#pragma omp parallel for reduction(^ : sum) schedule(static)
    for (int64_t i = 0; i < words; i += 8) sum ^= p[i] ^ p[i + 1] ^ p[i + 2] ^ p[i + 3] ^ p[i + 4] ^ p[i + 5] ^ p[i + 6] ^ p[i + 7];
    benchmark::DoNotOptimize(sum);
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n) / 1e9,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReadBandwidth)->ArgName("MB")->Arg(1)->Arg(32)->UseRealTime()->ComputeStatistics("min", min_of);

void linear_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "out", "in", "M", "stream"});
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{512, 512}, {1536, 512}, {3072, 512}, {512, 1536}, {8192, 512}};
  for (int64_t kind : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
    for (auto [out, in] : shapes) {
      for (int64_t m : {1, 9, 64}) b->Args({kind, out, in, m, 0});
      b->Args({kind, out, in, 1, 1});
      b->Args({kind, out, in, 9, 1});
    }
}
BENCHMARK(BM_Linear)->Apply(linear_args)->MinTime(0.2)->UseRealTime()->ComputeStatistics("min", min_of);

// Every row count a decode, verification or drafter step runs (M = 1..16) through one
// 3072 x 512 matrix, hot and streamed, and (fma256) a 512 x 256 one that fits in L2: how
// each row tiling uses the multiply-add rate (compare GFLOP/s with peak_bench at the same
// thread count).
void small_m_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "out", "in", "M", "stream"});
  for (int64_t kind : {1, 2, 3, 5, 8, 9, 10})
    for (int64_t stream : {0, 1})
      for (int64_t m = 1; m <= 16; ++m) b->Args({kind, 3072, 512, m, stream});
  for (int64_t m = 1; m <= 10; ++m) b->Args({1, 512, 256, m, 0});
  for (int64_t kind : {3, 5, 8})  // the DSpark Markov head's W2 (vocabulary x rank 64), one row per draft position
    for (int64_t stream : {0, 1}) b->Args({kind, 8192, 64, 1, stream});
}
BENCHMARK(BM_Linear)->Name("BM_LinearSmallM")->Apply(small_m_args)->MinTime(0.2)->UseRealTime()->ComputeStatistics("min", min_of);

// Times paged_attention over `kv` for tokens with the given sequences, key counts and
// block tables, queries random.
void run_attention(benchmark::State& state, const KvLayerView& kv, int64_t heads, const std::vector<int32_t>& seq_of_token,
                   const std::vector<int32_t>& num_keys, const int32_t* const* block_tables, bool cold = false) {
  const int64_t tokens = static_cast<int64_t>(num_keys.size());
  const auto q = random_floats(static_cast<size_t>(tokens * heads * kv.head_dim), 5);
  std::vector<float> out(q.size());
  PagedAttentionArgs args;
  args.q = q.data();
  args.out = out.data();
  args.num_tokens = tokens;
  args.num_heads = heads;
  args.seq_of_token = seq_of_token.data();
  args.num_keys = num_keys.data();
  args.block_tables = block_tables;
  args.scale = 1.0f / std::sqrt(static_cast<float>(kv.head_dim));
  // cold: 64 MB read between calls (untimed), as a step's weights stream through the caches
  // between one layer's attention and the next use of its KV rows.
  std::vector<int64_t> evict(cold ? (size_t{64} << 20) / sizeof(int64_t) : 0, 1);
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      int64_t sum = 0;
      for (size_t i = 0; i < evict.size(); i += 8) sum += evict[i];
      benchmark::DoNotOptimize(sum);
      state.ResumeTiming();
    }
    paged_attention(args, kv);
    benchmark::DoNotOptimize(out.data());
  }
}

// Decode attention: args: kv dtype (0 f32, 1 bf16), query tokens (one per sequence),
// kv length, heads, kv heads, head_dim.
void BM_AttentionDecode(benchmark::State& state) {
  const DType dtype = state.range(0) == 0 ? DType::kF32 : DType::kBF16;
  const int64_t tokens = state.range(1), len = state.range(2), heads = state.range(3);
  const int64_t kv_heads = state.range(4), head_dim = state.range(5), block_size = 16;
  const int64_t blocks_per_seq = (len + block_size - 1) / block_size;
  KvLayerView kv;
  kv.dtype = dtype;
  kv.num_blocks = tokens * blocks_per_seq;
  kv.block_size = block_size;
  kv.num_kv_heads = kv_heads;
  kv.head_dim = head_dim;
  const size_t pool = static_cast<size_t>(kv.num_blocks * block_size * kv_heads * head_dim);
  std::vector<float> kf, vf;
  std::vector<uint16_t> kb, vb;
  if (dtype == DType::kF32) {
    kf = random_floats(pool, 3);
    vf = random_floats(pool, 4);
    kv.k = kf.data();
    kv.v = vf.data();
  } else {
    kb.resize(pool);
    vb.resize(pool);
    const auto k = random_floats(pool, 3), v = random_floats(pool, 4);
    for (size_t i = 0; i < pool; ++i) {
      kb[i] = float_to_bf16(k[i]);
      vb[i] = float_to_bf16(v[i]);
    }
    kv.k = kb.data();
    kv.v = vb.data();
  }
  // Sequence s owns blocks s, s + tokens, s + 2 * tokens, ... (interleaved, not contiguous).
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(tokens));
  std::vector<const int32_t*> table_ptrs;
  for (int64_t s = 0; s < tokens; ++s) {
    for (int64_t b = 0; b < blocks_per_seq; ++b) tables[s].push_back(static_cast<int32_t>(b * tokens + s));
    table_ptrs.push_back(tables[s].data());
  }
  std::vector<int32_t> seq_of_token(static_cast<size_t>(tokens)), num_keys(static_cast<size_t>(tokens), static_cast<int32_t>(len));
  for (int64_t t = 0; t < tokens; ++t) seq_of_token[t] = static_cast<int32_t>(t);
  run_attention(state, kv, heads, seq_of_token, num_keys, table_ptrs.data());
  const double kv_bytes = 2.0 * static_cast<double>(tokens * len * kv_heads * head_dim) * static_cast<double>(dtype_size(dtype));
  state.counters["kvGB/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kv_bytes / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttentionDecode)
    ->ArgNames({"bf16", "tokens", "len", "heads", "kv_heads", "head_dim"})
    ->Args({0, 1, 512, 8, 8, 64})
    ->Args({1, 1, 512, 8, 8, 64})
    ->Args({0, 1, 512, 8, 2, 64})
    ->Args({1, 1, 512, 8, 2, 64})
    ->Args({0, 8, 512, 8, 8, 64})
    ->Args({1, 8, 512, 8, 8, 64})
    ->Args({1, 1, 512, 16, 8, 128})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of);

// A decode step's small kernels, for scale: rows x dim.
void BM_RmsNorm(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = state.range(1);
  const auto x = random_floats(static_cast<size_t>(rows * dim), 6), w = random_floats(static_cast<size_t>(dim), 7);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    rms_norm(x.data(), w.data(), y.data(), rows, dim, 1e-6f);
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_RmsNorm)->ArgNames({"rows", "dim"})->Args({1, 512})->Args({64, 512})->UseRealTime();

void BM_SiluMul(benchmark::State& state) {
  const int64_t rows = state.range(0), ffn = state.range(1);
  const auto gate_up = random_floats(static_cast<size_t>(rows * 2 * ffn), 8);
  std::vector<float> out(static_cast<size_t>(rows * ffn));
  for (auto _ : state) {
    silu_mul(gate_up.data(), out.data(), rows, ffn);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_SiluMul)->ArgNames({"rows", "ffn"})->Args({1, 1536})->Args({64, 1536})->UseRealTime();

// args: vocab, top_p x 100 (100 = off), greedy
void BM_ToProbs(benchmark::State& state) {
  const int64_t vocab = state.range(0);
  auto logits = random_floats(static_cast<size_t>(vocab), 9);
  for (auto& l : logits) l *= 8.0f;
  SamplingParams params;
  params.top_p = static_cast<float>(state.range(1)) / 100.0f;
  params.temperature = state.range(2) ? 0.0f : 0.8f;
  LogitsProcessor processor(vocab);
  std::vector<float> probs(static_cast<size_t>(vocab));
  const std::vector<int32_t> history = {1, 2, 3};
  for (auto _ : state) {
    processor.to_probs(logits.data(), probs.data(), params, history, 0);
    benchmark::DoNotOptimize(probs.data());
  }
}
BENCHMARK(BM_ToProbs)
    ->ArgNames({"vocab", "top_p", "greedy"})
    ->Args({32000, 100, 1})
    ->Args({32000, 100, 0})
    ->Args({32000, 90, 0})
    ->Args({151936, 90, 0})
    ->UseRealTime();

// A verification step's attention: `tokens` consecutive tokens of one sequence over a KV of
// `len` positions (token t sees len - tokens + 1 + t keys), tiny-target's heads (8 query, 4
// KV, head_dim 64). args: tokens, len, KV dtype (0 f32, 1 bf16), cold (1: the KV rows are
// pushed out of the caches before each call, as a real step's weights do).
void BM_AttentionVerify(benchmark::State& state) {
  const int64_t tokens = state.range(0), len = state.range(1), head_dim = 64;
  const int64_t heads = 8, kv_heads = 4, block_size = 16;
  const bool bf16 = state.range(2) != 0, cold = state.range(3) != 0;
  KvLayerView kv;
  kv.dtype = bf16 ? DType::kBF16 : DType::kF32;
  kv.num_blocks = (len + block_size - 1) / block_size;
  kv.block_size = block_size;
  kv.num_kv_heads = kv_heads;
  kv.head_dim = head_dim;
  const size_t pool = static_cast<size_t>(kv.num_blocks * block_size * kv_heads * head_dim);
  const size_t element = bf16 ? sizeof(uint16_t) : sizeof(float);
  // 64-byte aligned and in 2 MB pages, as the engine's KV pool (model/kv_pool.h).
  AlignedBuffer k = AlignedBuffer::in_huge_pages(pool * element), v = AlignedBuffer::in_huge_pages(pool * element);
  const auto k_values = random_floats(pool, 3), v_values = random_floats(pool, 4);
  if (bf16) {
    for (size_t i = 0; i < pool; ++i) {
      k.as<uint16_t>()[i] = float_to_bf16(k_values[i]);
      v.as<uint16_t>()[i] = float_to_bf16(v_values[i]);
    }
  } else {
    std::memcpy(k.as<float>(), k_values.data(), pool * sizeof(float));
    std::memcpy(v.as<float>(), v_values.data(), pool * sizeof(float));
  }
  kv.k = k.data();
  kv.v = v.data();
  std::vector<int32_t> table(static_cast<size_t>(kv.num_blocks));
  for (int64_t b = 0; b < kv.num_blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  const int32_t* table_ptr = table.data();
  std::vector<int32_t> seq_of_token(static_cast<size_t>(tokens), 0), num_keys(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t) num_keys[static_cast<size_t>(t)] = static_cast<int32_t>(len - tokens + 1 + t);
  run_attention(state, kv, heads, seq_of_token, num_keys, &table_ptr, cold);
  state.counters["threads"] = static_cast<double>(num_threads());
}
BENCHMARK(BM_AttentionVerify)
    ->ArgNames({"tokens", "len", "bf16", "cold"})
    ->Args({1, 128, 0, 0})
    ->Args({1, 2048, 0, 0})
    ->Args({9, 128, 0, 0})
    ->Args({9, 512, 0, 0})
    ->Args({9, 2048, 0, 0})
    ->ArgsProduct({{1, 9}, {32, 128, 896}, {0, 1}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond)
    ->ComputeStatistics("min", min_of);

// The cost of one parallel loop with nothing in it: arg 0 an OpenMP region (a futex system
// call to wake the team and another at its end), arg 1 the kernels' spinning team
// (core/thread_pool.h). A decoding step runs about 40 loops.
void BM_EmptyParallelLoop(benchmark::State& state) {
  std::vector<int64_t> sink(64 * 16, 0);  // one cache line per thread index
  const int64_t n = num_threads();
  for (auto _ : state) {
    if (state.range(0) == 0) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) sink[static_cast<size_t>(i % 64) * 16] += 1;
    } else {
      parallel_for(n, true, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) sink[static_cast<size_t>(i % 64) * 16] += 1;
      });
    }
  }
  benchmark::DoNotOptimize(sink.data());
  state.counters["threads"] = static_cast<double>(n);
  state.SetLabel(state.range(0) == 0 ? "openmp" : "thread team");
}
BENCHMARK(BM_EmptyParallelLoop)->ArgName("team")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dspark

BENCHMARK_MAIN();
