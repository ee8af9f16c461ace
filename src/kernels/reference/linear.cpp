// Scalar reference of Linear: one double accumulator per output.
#include "kernels/linear.h"

#include "core/check.h"

namespace dspark::reference {

void linear(const float* x, const float* weight, const float* bias, float* y, int64_t num_rows,
            int64_t out_features, int64_t in_features, DType compute) {
  DSPARK_CHECK(compute == DType::kBF16 || compute == DType::kF32, "reference::linear: bad compute dtype");
  const bool bf16 = compute == DType::kBF16;
  auto operand = [bf16](float v) { return bf16 ? round_to_bf16(v) : v; };
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t n = 0; n < out_features; ++n) {
      double acc = 0.0;
      for (int64_t k = 0; k < in_features; ++k)
        acc += static_cast<double>(operand(x[r * in_features + k])) *
               static_cast<double>(operand(weight[n * in_features + k]));
      if (bias) acc += bias[n];
      y[r * out_features + n] = static_cast<float>(acc);
    }
  }
}

}  // namespace dspark::reference
