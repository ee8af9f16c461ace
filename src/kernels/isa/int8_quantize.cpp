// Per-row activation quantization, scalar: the definition the kernels' vector versions
// follow operation for operation (max |x| is exact in any order, x * (127 / max) is one f32
// product rounded to the nearest integer, ties to even, as vcvtps2dq does), so every path
// quantizes to the same bytes.
#include <cmath>

#include "kernels/isa/int8_kernels.h"

namespace dspark::kernels {

void quantize_int8_row(const float* x, int64_t in, int64_t padded_in, int64_t r, const Int8Activations& a) {
  const int64_t num_chunks = padded_in / kInt8Chunk;
  int8_t* q = a.q + r * padded_in;
  for (int64_t ch = 0; ch < num_chunks; ++ch) {
    const int64_t k0 = ch * kInt8Chunk;
    const int64_t k1 = k0 + kInt8Chunk < in ? k0 + kInt8Chunk : in;
    float amax = 0.0f;
    for (int64_t k = k0; k < k1; ++k) amax = std::fmax(amax, std::fabs(x[k]));
    const float t = amax / 127.0f;
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int64_t k = k0; k < k1; ++k) {
      const int32_t qi = static_cast<int32_t>(std::nearbyint(x[k] * inv));  // |x * inv| <= 127 (+ rounding)
      q[k] = static_cast<int8_t>(qi);
      sum += qi;
    }
    a.scale[r * num_chunks + ch] = t;
    a.offset[r * num_chunks + ch] = t * static_cast<float>(128 * sum);
  }
}

}  // namespace dspark::kernels
