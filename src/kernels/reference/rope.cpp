// Scalar reference of apply_rope: angles computed directly, same f32 formula as the table.
#include "kernels/rope.h"

#include <cmath>

namespace dspark::reference {

void apply_rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, std::span<const float> inv_freq, float cos_sin_scale) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t h = 0; h < num_heads; ++h) {
      float* v = x + (t * num_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(positions[t]) * inv_freq[static_cast<size_t>(i)];
        const float c = std::cos(angle) * cos_sin_scale, s = std::sin(angle) * cos_sin_scale;
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
      }
    }
}

}  // namespace dspark::reference
