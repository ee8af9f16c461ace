// Scalar reference of silu_mul with std::exp.
#include "kernels/elementwise.h"

#include <cmath>

namespace dspark::reference {

void silu_mul(const float* gate_up, float* out, int64_t num_rows, int64_t ffn) {
  for (int64_t r = 0; r < num_rows; ++r)
    for (int64_t i = 0; i < ffn; ++i) {
      const float g = gate_up[r * 2 * ffn + i];
      const float u = gate_up[r * 2 * ffn + ffn + i];
      out[r * ffn + i] = g / (1.0f + std::exp(-g)) * u;
    }
}

}  // namespace dspark::reference
