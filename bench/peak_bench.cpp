// Peak multiply-add rates of the instructions the matmul kernels are built on, per core
// (one thread) and per process (OpenMP threads): 12 independent accumulator chains, so the
// loop measures throughput, not latency. The roofline's compute side: a step's FLOPs over
// these rates, next to its weight bytes over the read bandwidth (decode_step_bench).
//
//   build/bench/peak_bench        (rates reported as GFLOP/s; int8 as GOP/s, 2 per MAC)
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <cstdint>

#include "kernels/isa.h"

namespace dspark {
namespace {

constexpr int64_t kIterations = 1 << 20;

__attribute__((target("avx2,fma"))) double fma256(float seed) {
  const __m256 a = _mm256_set1_ps(seed), b = _mm256_set1_ps(1.0f - seed);
  __m256 acc[12];
  for (auto& v : acc) v = _mm256_setzero_ps();
  for (int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(a, b, acc[j]);
  __m256 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, acc[j]);
  return _mm256_cvtss_f32(s);
}

__attribute__((target("avx512f"))) double fma512(float seed) {
  const __m512 a = _mm512_set1_ps(seed), b = _mm512_set1_ps(1.0f - seed);
  __m512 acc[12];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(a, b, acc[j]);
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) double dpbf16(float seed) {
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80 + static_cast<int>(seed));
  __m512 acc[12];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, a);
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bw,avx512fp16"))) double fma512ph(float seed) {
  const __m512h a = _mm512_set1_ph(static_cast<_Float16>(seed));
  const __m512h b = _mm512_set1_ph(static_cast<_Float16>(1.0f - seed));
  __m512h acc[12];
  for (auto& v : acc) v = _mm512_setzero_ph();
  for (int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ph(a, b, acc[j]);
  __m512h s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ph(s, acc[j]);
  return static_cast<double>(_mm512_reduce_add_ph(s));
}

__attribute__((target("avx512f,avx512vnni"))) double vnni512(float seed) {
  const __m512i a = _mm512_set1_epi32(0x01010101 + static_cast<int>(seed));
  __m512i acc[12];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, a);
  __m512i s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_epi32(s, acc[j]);
  return _mm512_reduce_add_epi32(s);
}

__attribute__((target("avx2,avxvnni"))) double vnni256(float seed) {
  const __m256i a = _mm256_set1_epi32(0x01010101 + static_cast<int>(seed));
  __m256i acc[12];
  for (auto& v : acc) v = _mm256_setzero_si256();
  for (int64_t i = 0; i < kIterations; ++i)
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_dpbusd_avx_epi32(acc[j], a, a);
  __m256i s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_epi32(s, acc[j]);
  return _mm256_extract_epi32(s, 0);
}

// The AVX2 int8 kernel's inner step. Only the vpaddd carries a chain, so the inputs pass
// through an empty asm each iteration: otherwise the compiler computes the loop-invariant
// vpmaddubsw and vpmaddwd once and the loop times vpaddd alone.
constexpr int kMaddubsChains = 6;  // 6 inputs + 6 sums + the ones: 13 of 16 ymm registers
__attribute__((target("avx2"))) double maddubs256(float seed) {
  __m256i x[kMaddubsChains], acc[kMaddubsChains];
  for (int j = 0; j < kMaddubsChains; ++j) {
    x[j] = _mm256_set1_epi32(0x01010101 * (j + 1) + static_cast<int>(seed));
    acc[j] = _mm256_setzero_si256();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < kIterations; ++i) {
    asm volatile("" : "+x"(x[0]), "+x"(x[1]), "+x"(x[2]), "+x"(x[3]), "+x"(x[4]), "+x"(x[5]));
#pragma GCC unroll 6
    for (int j = 0; j < kMaddubsChains; ++j)
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(_mm256_maddubs_epi16(x[j], x[j]), ones));
  }
  __m256i s = acc[0];
  for (int j = 1; j < kMaddubsChains; ++j) s = _mm256_add_epi32(s, acc[j]);
  return _mm256_extract_epi32(s, 0);
}

struct Instruction {
  const char* name;
  double (*run)(float);
  double flops_per_call;  // 12 chains x kIterations x multiply-adds per instruction x 2
  Isa isa;
};
const Instruction kInstructions[] = {
    {"vfmadd231ps ymm", fma256, 12.0 * kIterations * 8 * 2, Isa::kAvx2},
    {"vfmadd231ps zmm", fma512, 12.0 * kIterations * 16 * 2, Isa::kAvx512},
    {"vdpbf16ps zmm", dpbf16, 12.0 * kIterations * 32 * 2, Isa::kAvx512Bf16},
    {"vpdpbusd zmm", vnni512, 12.0 * kIterations * 64 * 2, Isa::kVnni},
    {"vfmadd231ph zmm", fma512ph, 12.0 * kIterations * 32 * 2, Isa::kAvx512Fp16},
    {"vpmaddubsw+vpmaddwd+vpaddd ymm", maddubs256, 1.0 * kMaddubsChains * kIterations * 32 * 2, Isa::kAvx2},
    {"vpdpbusd ymm (AVX-VNNI)", vnni256, 12.0 * kIterations * 32 * 2, Isa::kAvxVnni},
};

// args: instruction, threads (1 = one core, 0 = all OpenMP threads).
void BM_Peak(benchmark::State& state) {
  const Instruction& ins = kInstructions[state.range(0)];
  if (!isa_supported(ins.isa)) {
    state.SkipWithError("this CPU lacks the instruction");
    return;
  }
  const int threads = state.range(1) == 1 ? 1 : omp_get_max_threads();
  state.SetLabel(ins.name);
  double sink = 0;
  for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += ins.run(static_cast<float>(omp_get_thread_num()) * 1e-3f);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["GFLOP/s"] = benchmark::Counter(ins.flops_per_call * threads / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Peak)->ArgNames({"instruction", "one_core"})->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 0}})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dspark

BENCHMARK_MAIN();
