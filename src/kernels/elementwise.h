// Small element-wise kernels of the decoder layer.
#pragma once

#include <cstdint>

namespace dspark {

// out[r, i] = silu(gate_up[r, i]) * gate_up[r, ffn + i]: the fused gate/up projection
// output holds gate in its first half and up in its second.
// gate_up: [num_rows, 2 * ffn]; out: [num_rows, ffn].
void silu_mul(const float* gate_up, float* out, int64_t num_rows, int64_t ffn);

// x[i] += y[i] for i < n (residual connections).
void add_inplace(float* x, const float* y, int64_t n);

namespace reference {
void silu_mul(const float* gate_up, float* out, int64_t num_rows, int64_t ffn);
}  // namespace reference

}  // namespace dspark
