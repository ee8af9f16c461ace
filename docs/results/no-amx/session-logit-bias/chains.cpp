// Independent vpdpbusd zmm chains on one core: instructions per second as the number of
// chains (accumulators in flight) grows, which shows the instruction's latency.
// g++ -O2 -march=native -o chains chains.cpp && ./chains
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
constexpr int64_t N = 50'000'000;
template <int C>
__attribute__((noinline)) int run(int seed) {
  __m512i a = _mm512_set1_epi32(0x01010101 + seed);
  __m512i acc[C];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (int64_t i = 0; i < N; ++i) {
#pragma GCC unroll 32
    for (int j = 0; j < C; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, a);
  }
  __m512i s = acc[0];
  for (int j = 1; j < C; ++j) s = _mm512_add_epi32(s, acc[j]);
  return _mm512_reduce_add_epi32(s);
}
template <int C>
void t() {
  run<C>(0);
  auto t0 = std::chrono::steady_clock::now();
  volatile int r = run<C>(1);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)r;
  std::printf("chains %2d: %.2f G vpdpbusd/s\n", C, C * N / s / 1e9);
}
int main() { t<4>(); t<6>(); t<8>(); t<10>(); t<12>(); t<16>(); t<20>(); t<24>(); t<8>(); t<12>(); }
