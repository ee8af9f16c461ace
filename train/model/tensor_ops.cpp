#include "train/model/tensor_ops.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

namespace dspark::train {

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

torch::Tensor repeat_kv(const torch::Tensor& x, int64_t n_rep) {
  if (n_rep == 1) return x;
  const auto b = x.size(0), n_kv = x.size(1), t = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, n_kv, n_rep, t, d}).reshape({b, n_kv * n_rep, t, d});
}

torch::Tensor to_autocast_dtype(const torch::Tensor& x) {
  if (!at::autocast::is_cpu_enabled() || x.scalar_type() != at::kFloat) return x;
  return x.to(at::autocast::get_autocast_cpu_dtype());
}

}  // namespace dspark::train
