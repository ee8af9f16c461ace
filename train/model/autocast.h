// Bf16Autocast: scoped CPU autocast to bf16 (libtorch's mixed precision: matmuls and
// linears run in bf16, everything else keeps its dtype). Restores the previous state and
// drops the cast-weight cache on exit, so casts never outlive one forward.
#pragma once

#include <ATen/autocast_mode.h>

namespace dspark::train {

class Bf16Autocast {
 public:
  explicit Bf16Autocast(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
    prev_enabled_ = at::autocast::is_cpu_enabled();
    prev_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  }
  ~Bf16Autocast() {
    if (!enabled_) return;
    at::autocast::set_cpu_enabled(prev_enabled_);
    at::autocast::set_autocast_cpu_dtype(prev_dtype_);
    if (!prev_enabled_) at::autocast::clear_cache();
  }
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  bool enabled_;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kBFloat16;
};

}  // namespace dspark::train
