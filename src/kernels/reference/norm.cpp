// Scalar reference of RMSNorm: mean of squares in double, then the f32 formula of HF.
#include "kernels/norm.h"

#include <cmath>

namespace dspark::reference {

void rms_norm(const float* x, const float* weight, float* y, int64_t num_rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* row = x + r * dim;
    double sum = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(row[i]) * row[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(dim) + eps));
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = row[i] * inv * weight[i];
  }
}

}  // namespace dspark::reference
