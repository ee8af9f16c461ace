#include "model/fused_linear.h"

#include <cmath>

#include "core/check.h"

namespace dspark {

bool is_quantized(const WeightStore& store, const std::string& name) {
  return store.contains(name + ".weight_scale");
}

Int8Weights load_int8_weights(const WeightStore& store, const std::string& name, int64_t rows, int64_t cols) {
  const int64_t shape[2] = {rows, cols};
  const int64_t scale_shape[2] = {rows, (cols + kInt8ScaleBlock - 1) / kInt8ScaleBlock};
  Int8Weights w;
  w.out = rows;
  w.in = cols;
  w.q = store.load_i8(name + ".weight", shape);
  w.scales = store.load_f32(name + ".weight_scale", scale_shape);
  for (int8_t q : w.q)
    DSPARK_CHECK(q != -128, "{}: tensor '{}.weight' holds -128; int8 weights are within [-127, 127]",
                 store.dir().string(), name);
  for (float s : w.scales)
    DSPARK_CHECK(std::isfinite(s) && s >= 0.0f, "{}: tensor '{}.weight_scale' holds {}; scales are finite and >= 0",
                 store.dir().string(), name, s);
  return w;
}

Linear load_fused_linear(const WeightStore& store, const std::vector<std::string>& names,
                         const std::vector<int64_t>& rows, int64_t cols, bool with_bias,
                         const LinearOptions& options) {
  std::vector<float> bias;  // [sum rows] or empty
  int64_t total_rows = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (with_bias) {
      const int64_t bias_shape[1] = {rows[i]};
      const std::vector<float> b = store.load_f32(names[i] + ".bias", bias_shape);
      bias.insert(bias.end(), b.begin(), b.end());
    }
    total_rows += rows[i];
  }
  if (is_quantized(store, names[0])) {
    // Quantization is per output row, so stacking rows of int8 weights is exact.
    Int8Weights stacked;
    stacked.out = total_rows;
    stacked.in = cols;
    for (size_t i = 0; i < names.size(); ++i) {
      DSPARK_CHECK(is_quantized(store, names[i]), "{}: '{}.weight_scale' is missing ('{}' is quantized)",
                   store.dir().string(), names[i], names[0]);
      const Int8Weights w = load_int8_weights(store, names[i], rows[i], cols);
      stacked.q.insert(stacked.q.end(), w.q.begin(), w.q.end());
      stacked.scales.insert(stacked.scales.end(), w.scales.begin(), w.scales.end());
    }
    return Linear(stacked, bias, options);
  }
  std::vector<float> weight;  // [sum rows, cols]
  for (size_t i = 0; i < names.size(); ++i) {
    const int64_t shape[2] = {rows[i], cols};
    const std::vector<float> w = store.load_f32(names[i] + ".weight", shape);
    weight.insert(weight.end(), w.begin(), w.end());
  }
  return Linear(weight, total_rows, cols, bias, options);
}

std::vector<float> load_vector(const WeightStore& store, const std::string& name, int64_t n) {
  const int64_t shape[1] = {n};
  return store.load_f32(name, shape);
}

}  // namespace dspark
