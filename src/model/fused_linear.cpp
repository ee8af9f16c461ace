#include "model/fused_linear.h"

#include <cmath>

#include "core/check.h"
#include "core/dtype.h"

namespace dspark {

bool is_quantized(const WeightStore& store, const std::string& name) {
  return store.contains(name + ".weight_scale");
}

Int8Weights load_int8_weights(const WeightStore& store, const std::string& name, int64_t rows, int64_t cols) {
  const int64_t scale_shape[2] = {rows, (cols + kInt8ScaleBlock - 1) / kInt8ScaleBlock};
  Int8Weights w;
  w.out = rows;
  w.in = cols;
  // 4-bit weights come two to a byte: [rows, ceil(cols / 2)] (quantize_checkpoint.h).
  const std::vector<int64_t>& stored = store.get(name + ".weight").shape;
  w.bits = stored.size() == 2 && cols > 1 && stored[1] == (cols + 1) / 2 ? 4 : 8;
  const int64_t shape[2] = {rows, w.bits == 8 ? cols : (cols + 1) / 2};
  w.q = store.load_i8(name + ".weight", shape);
  w.scales = store.load_f32(name + ".weight_scale", scale_shape);
  if (w.bits == 4) {
    const std::vector<int8_t> packed = std::move(w.q);
    w.q.resize(static_cast<size_t>(rows * cols));
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t k = 0; k < cols; ++k) {
        const auto byte = static_cast<uint8_t>(packed[static_cast<size_t>(n * shape[1] + k / 2)]);
        const int nibble = k % 2 == 0 ? byte & 0x0F : byte >> 4;
        DSPARK_CHECK(nibble != 0, "{}: tensor '{}.weight' holds the nibble 0 (-8); 4-bit weights are within [-7, 7]",
                     store.dir().string(), name);
        w.q[static_cast<size_t>(n * cols + k)] = static_cast<int8_t>(nibble - 8);
      }
  }
  for (int8_t q : w.q)
    DSPARK_CHECK(q != -128, "{}: tensor '{}.weight' holds -128; int8 weights are within [-127, 127]",
                 store.dir().string(), name);
  for (float s : w.scales) {
    DSPARK_CHECK(std::isfinite(s) && s >= 0.0f, "{}: tensor '{}.weight_scale' holds {}; scales are finite and >= 0",
                 store.dir().string(), name, s);
    DSPARK_CHECK(w.bits == 8 || round_to_f16(s) == s,
                 "{}: tensor '{}.weight_scale' holds {}; 4-bit scales are f16 values", store.dir().string(), name, s);
  }
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
      if (i == 0) stacked.bits = w.bits;
      DSPARK_CHECK(w.bits == stacked.bits, "{}: '{}.weight' is stored in {} bits, '{}.weight' in {}",
                   store.dir().string(), names[i], w.bits, names[0], stacked.bits);
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
