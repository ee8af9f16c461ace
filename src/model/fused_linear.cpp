#include "model/fused_linear.h"

namespace dspark {

Linear load_fused_linear(const WeightStore& store, const std::vector<std::string>& names,
                         const std::vector<int64_t>& rows, int64_t cols, bool with_bias,
                         const LinearOptions& options) {
  std::vector<float> weight;  // [sum rows, cols]
  std::vector<float> bias;    // [sum rows] or empty
  int64_t total_rows = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const int64_t shape[2] = {rows[i], cols};
    const std::vector<float> w = store.load_f32(names[i] + ".weight", shape);
    weight.insert(weight.end(), w.begin(), w.end());
    if (with_bias) {
      const int64_t bias_shape[1] = {rows[i]};
      const std::vector<float> b = store.load_f32(names[i] + ".bias", bias_shape);
      bias.insert(bias.end(), b.begin(), b.end());
    }
    total_rows += rows[i];
  }
  return Linear(weight, total_rows, cols, bias, options);
}

std::vector<float> load_vector(const WeightStore& store, const std::string& name, int64_t n) {
  const int64_t shape[1] = {n};
  return store.load_f32(name, shape);
}

}  // namespace dspark
