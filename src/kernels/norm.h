// RMSNorm, as in Llama / Qwen: y = x / sqrt(mean(x²) + eps) * weight, per row, in f32.
// Every row uses the same reduction order whatever the number of rows (batch invariant).
// In place is allowed (y == x).
#pragma once

#include <cstdint>

namespace dspark {

// x, y: [num_rows, dim]; weight: [dim].
void rms_norm(const float* x, const float* weight, float* y, int64_t num_rows, int64_t dim, float eps);

namespace reference {
void rms_norm(const float* x, const float* weight, float* y, int64_t num_rows, int64_t dim, float eps);
}  // namespace reference

}  // namespace dspark
