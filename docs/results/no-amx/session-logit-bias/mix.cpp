// vpdpbusd zmm and vfmadd231ps zmm alone (12 chains each) and mixed in one loop (V + F
// chains): whether the two run on separate ports (a mix would exceed either alone).
// g++ -O2 -march=native -o mix mix.cpp && ./mix
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
constexpr int64_t N = 20'000'000;
__attribute__((noinline)) double run_vnni(int seed) {
  __m512i a = _mm512_set1_epi32(0x01010101 + seed);
  __m512i acc[12];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (int64_t i = 0; i < N; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, a);
  }
  __m512i s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_epi32(s, acc[j]);
  return _mm512_reduce_add_epi32(s);
}
__attribute__((noinline)) double run_fma(int seed) {
  __m512 a = _mm512_set1_ps(1.0f + seed * 1e-9f);
  __m512 acc[12];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t i = 0; i < N; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(a, a, acc[j]);
  }
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}
// mix: V vpdpbusd + F fma per iteration
template <int V, int F>
__attribute__((noinline)) double run_mix(int seed) {
  __m512i a = _mm512_set1_epi32(0x01010101 + seed);
  __m512 b = _mm512_set1_ps(1.0f + seed * 1e-9f);
  __m512i acc[V];
  __m512 facc[F];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (auto& v : facc) v = _mm512_setzero_ps();
  for (int64_t i = 0; i < N; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < V; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, a);
#pragma GCC unroll 16
    for (int j = 0; j < F; ++j) facc[j] = _mm512_fmadd_ps(b, b, facc[j]);
  }
  __m512i s = acc[0];
  for (int j = 1; j < V; ++j) s = _mm512_add_epi32(s, acc[j]);
  __m512 t = facc[0];
  for (int j = 1; j < F; ++j) t = _mm512_add_ps(t, facc[j]);
  return _mm512_reduce_add_epi32(s) + _mm512_reduce_add_ps(t);
}
template <typename Fn>
void time(const char* name, Fn fn, double vnni_per_iter, double fma_per_iter) {
  auto t0 = std::chrono::steady_clock::now();
  volatile double r = fn(0);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (void)r;
  std::printf("%-12s %.3f s  vpdpbusd %.2f G/s  fma %.2f G/s  MACs %.1f G/s\n", name, s, vnni_per_iter * N / s / 1e9,
              fma_per_iter * N / s / 1e9, (vnni_per_iter * 64 + fma_per_iter * 16) * N / s / 1e9);
}
int main() {
  for (int rep = 0; rep < 2; ++rep) {
    time("vnni12", run_vnni, 12, 0);
    time("fma12", run_fma, 0, 12);
    time("mix 8+4", run_mix<8, 4>, 8, 4);
    time("mix 8+8", run_mix<8, 8>, 8, 8);
    time("mix 6+6", run_mix<6, 6>, 6, 6);
    time("mix 10+4", run_mix<10, 4>, 10, 4);
  }
}
