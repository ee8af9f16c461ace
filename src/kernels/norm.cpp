#include "kernels/norm.h"

#include <cmath>

#include "core/thread_pool.h"
#include "kernels/simd.h"

namespace dspark {
namespace {

// Below this many elements a call stays on the calling thread (a decode step's one row).
constexpr int64_t kParallelMinElements = 32 * 1024;

// One row, always in the same order: four 16-lane partial sums over consecutive 64-element
// chunks (masked tail), summed pairwise, then a fixed lane tree.
DSPARK_AVX512_BEGIN
void rms_norm_row_avx512(const float* x, const float* weight, float* y, int64_t dim, float eps) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= dim; i += 64) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    const __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
    s0 = _mm512_fmadd_ps(a, a, s0);
    s1 = _mm512_fmadd_ps(b, b, s1);
    s2 = _mm512_fmadd_ps(c, c, s2);
    s3 = _mm512_fmadd_ps(d, d, s3);
  }
  for (; i < dim; i += 16) {
    const __m512 a = _mm512_maskz_loadu_ps(simd::lanes(dim - i), x + i);
    s0 = _mm512_fmadd_ps(a, a, s0);
  }
  const float sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  const __m512 inv = _mm512_set1_ps(1.0f / std::sqrt(sum / static_cast<float>(dim) + eps));
  for (int64_t j = 0; j < dim; j += 16) {
    const __mmask16 m = simd::lanes(dim - j);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), inv);
    _mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + j)));
  }
}
DSPARK_AVX512_END

// Without AVX-512: one sequential sum (a different order, so other bits, still per row).
void rms_norm_row_portable(const float* x, const float* weight, float* y, int64_t dim, float eps) {
  float sum = 0.0f;
  for (int64_t i = 0; i < dim; ++i) sum += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
  for (int64_t i = 0; i < dim; ++i) y[i] = x[i] * inv * weight[i];
}

}  // namespace

void rms_norm(const float* x, const float* weight, float* y, int64_t num_rows, int64_t dim, float eps) {
  const bool wide = simd::wide();
  parallel_for(num_rows, num_rows > 1 && num_rows * dim >= kParallelMinElements, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (wide) rms_norm_row_avx512(x + r * dim, weight, y + r * dim, dim, eps);
      else rms_norm_row_portable(x + r * dim, weight, y + r * dim, dim, eps);
    }
  });
}

}  // namespace dspark
