// f32 -> bf16 row conversion for the AVX-512 translation units (internal; static so that
// each unit keeps its own copy, compiled for its own ISA).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dspark::kernels {

// dst[0, n) = bf16(src[0, n)): nearest even, NaN made quiet, exactly as float_to_bf16.
static inline void bf16_round_row_avx512(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(m, src + i);
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i bits = _mm512_mask_or_epi32(rounded, nan, u, _mm512_set1_epi32(0x00400000));
    _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)));
  }
}

}  // namespace dspark::kernels
