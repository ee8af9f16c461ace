#include "kernels/elementwise.h"

#include "core/thread_pool.h"
#include "kernels/simd.h"

namespace dspark {
namespace {

// From 6 rows of tiny-target's MLP (verification steps, drafter blocks) up, split over the
// kernels' team: its hand-off costs about a microsecond (core/thread_pool.h), and a 9-row
// silu_mul measured 6.0 -> 4.0 us (int8 weights) and 6.5 -> 4.4 us (fma512) in a verification
// step (64 Ki, the old bound, was set when a parallel loop cost 3-4 us).
constexpr int64_t kParallelMinElements = 8 * 1024;

// o[i] = silu(gate[i]) * up[i] for one row.
DSPARK_AVX512_BEGIN
void silu_mul_row_avx512(const float* gate, const float* up, float* o, int64_t ffn) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < ffn; i += 16) {
    const __mmask16 m = simd::lanes(ffn - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, simd::exp(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(o + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
  }
}
DSPARK_AVX512_END

// The same on 8 lanes (AVX2, the build's baseline), with the same exp reduction and
// polynomial: the two give the same bits wherever exp(-g) is a normal float.
void silu_mul_row_avx2(const float* gate, const float* up, float* o, int64_t ffn) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < ffn; i += 8) {
    const __m256i m = simd::lanes8(ffn - i);
    const __m256 g = _mm256_maskload_ps(gate + i, m);
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, simd::exp8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    _mm256_maskstore_ps(o + i, m, _mm256_mul_ps(silu, _mm256_maskload_ps(up + i, m)));
  }
}

}  // namespace

void silu_mul(const float* gate_up, float* out, int64_t num_rows, int64_t ffn) {
  const bool wide = simd::wide();
  parallel_for(num_rows, num_rows > 1 && num_rows * ffn >= kParallelMinElements, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* gate = gate_up + r * 2 * ffn;  // [ffn]
      const float* up = gate + ffn;               // [ffn]
      float* o = out + r * ffn;                   // [ffn]
      if (wide) silu_mul_row_avx512(gate, up, o, ffn);
      else silu_mul_row_avx2(gate, up, o, ffn);
    }
  });
}

void add_inplace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace dspark
