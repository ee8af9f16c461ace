// What both 256-bit int8 kernels (AVX2, AVX-VNNI) read from a chunk record the same way: a
// half block's scales and the nibbles of 4-bit weights. Included only by translation units
// built for AVX2 and F16C or more; static: each compiles its own copy (kernels/isa/ objects
// share no inline symbols).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dspark::kernels {

// Half h (8 outputs) of one block's 16 scales as the epilogue multiplies by them: f32, or for
// 4-bit weights f16 divided by 16 (exact: a power of two; int8_kernels.h).
template <int kBits>
static inline __m256 int8_ymm_scales(const uint8_t* scales, int h) {
  if constexpr (kBits == 8) return _mm256_loadu_ps(reinterpret_cast<const float*>(scales) + h * 8);
  const __m256 s = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales) + h));
  return _mm256_mul_ps(s, _mm256_set1_ps(1.0f / 16.0f));
}

// The nibbles n = q + 8 of 32 bytes of 4-bit weights as bytes: the low nibbles (step 0 of
// the load, high = false) or the high ones (step 1).
static inline __m256i int4_ymm_nibbles(__m256i raw, bool high) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  return _mm256_and_si256(high ? _mm256_srli_epi16(raw, 4) : raw, low);
}

}  // namespace dspark::kernels
