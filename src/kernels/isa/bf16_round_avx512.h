// f32 -> bf16 row conversion for the AVX-512 translation units (internal; static so that
// each unit keeps its own copy, compiled for its own ISA).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dspark::kernels {

// 16 f32 rounded to bf16 (nearest even, NaN made quiet, exactly as float_to_bf16), as
// 32-bit patterns whose top half is the bf16 value (the low half is garbage).
static inline __m512i bf16_round_bits_avx512(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(rounded, nan, u, _mm512_set1_epi32(0x00400000));
}

static inline __mmask16 bf16_lanes_avx512(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

// dst[0, n) = bf16(src[0, n)).
static inline void bf16_round_row_avx512(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = bf16_lanes_avx512(n - i);
    const __m512i bits = bf16_round_bits_avx512(_mm512_maskz_loadu_ps(m, src + i));
    _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)));
  }
}

// dst[0, n) = bf16(src[0, n)) widened back to f32 (exact), for the FMA kernels.
static inline void bf16_round_row_f32_avx512(const float* src, float* dst, int64_t n) {
  const __m512i hi = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = bf16_lanes_avx512(n - i);
    const __m512i bits = bf16_round_bits_avx512(_mm512_maskz_loadu_ps(m, src + i));
    _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_and_si512(bits, hi)));
  }
}

}  // namespace dspark::kernels
