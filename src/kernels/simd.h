// Internal AVX-512 (and a few AVX2) helpers shared by the kernels (not part of the public API).
//
// The library is compiled for AVX2 (one binary for any x86-64 with AVX2 + FMA); AVX-512
// code lives between DSPARK_AVX512_BEGIN and DSPARK_AVX512_END, which compile it for
// AVX-512 F/BW/VL/DQ without changing the rest of the file, and runs only where
// simd::wide() says the CPU has it and the ISA cap allows it (kernels/isa.h). Everything
// here is static, so no inline copy compiled for AVX-512 can be shared with other code.
//
// Every helper is element-wise or has a fixed reduction order, so results never depend on
// where a value sits in a buffer or on how many rows are processed together. Tails are
// handled with masked loads/stores (same arithmetic as full vectors), never by a separate
// scalar loop.
#pragma once

#include <cstdint>

#include "core/dtype.h"

#include <immintrin.h>

#include "kernels/isa.h"

#define DSPARK_AVX512_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx512bw,avx512vl,avx512dq,fma\")")
#define DSPARK_AVX512_END _Pragma("GCC pop_options")

namespace dspark::simd {

// True when the AVX-512 versions may run (checked per call; a cached table read).
static inline bool wide() { return isa_allowed(Isa::kAvx512); }

DSPARK_AVX512_BEGIN

// Mask of the first n lanes, n clamped to [0, 16].
static inline __mmask16 lanes(int64_t n) {
  if (n <= 0) return 0;
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

// exp(x) in f32: x = n ln2 + r with |r| <= ln2/2, exp(r) by its degree-7 Taylor polynomial
// (truncation error < 1e-8 relative), then scaled by 2^n with vscalefps, which handles
// overflow to +inf and gradual underflow to 0. Inputs are clamped to [-104, 89] first so
// that -inf gives 0 and +inf gives +inf.
static inline __m512 exp(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(89.0f)), _mm512_set1_ps(-104.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 split in a high part exact in few bits and a low correction (Cody-Waite).
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// Loads up to 16 bf16 values (masked) widened to f32 (exact).
static inline __m512 load_bf16(const uint16_t* p, __mmask16 mask) {
  const __m256i raw = _mm256_maskz_loadu_epi16(mask, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}

// Rounds 16 f32 to bf16 exactly as float_to_bf16 does (nearest even, denormals kept, NaN
// made quiet), so vector and scalar writers of the same value store the same bits.
static inline __m256i to_bf16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i bits = _mm512_mask_or_epi32(rounded, nan, u, _mm512_set1_epi32(0x00400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16));
}

// 16 f32 rounded to bf16 and widened back to f32 (exact): what a bf16 product sees.
static inline __m512 round_to_bf16(__m512 v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(to_bf16(v)), 16));
}

static inline void f32_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes(n - i);
    _mm256_mask_storeu_epi16(dst + i, m, to_bf16(_mm512_maskz_loadu_ps(m, src + i)));
  }
}

DSPARK_AVX512_END

// exp(x) in f32 on 8 lanes (AVX2, the build's baseline): the AVX-512 exp's reduction and
// polynomial, 2^n built in the exponent bits. Below -87 (where exp leaves the normal range)
// and for NaN it returns 0, so -inf gives 0; above 88 it saturates at exp(88).
static inline __m256 exp8(__m256 x) {
  const __m256 in_range = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ);
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)), _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723212e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(in_range, _mm256_mul_ps(p, _mm256_castsi256_ps(two_n)));
}

// All-ones lanes for i < n (n clamped to [0, 8]), for AVX2 masked loads.
static inline __m256i lanes8(int64_t n) {
  const int32_t k = n <= 0 ? 0 : n >= 8 ? 8 : static_cast<int32_t>(n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// dst[i] = bf16(src[i]) for i < n (round to nearest even; both versions give the same bits).
static inline void f32_to_bf16(const float* src, uint16_t* dst, int64_t n) {
  if (wide()) return f32_to_bf16_avx512(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

}  // namespace dspark::simd
