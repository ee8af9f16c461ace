// Learning-rate schedule: linear warm-up from 0 to peak over `warmup` steps, then cosine
// decay to `min_lr` at `total` steps (held there after). Steps are 1-based: the first
// optimizer step uses lr_at(1).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace dspark::train {

struct CosineSchedule {
  double peak_lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup = 0;
  int64_t total = 1;

  double lr_at(int64_t step) const {
    if (warmup > 0 && step <= warmup) return peak_lr * static_cast<double>(step) / static_cast<double>(warmup);
    const int64_t span = std::max<int64_t>(1, total - warmup);
    const double progress = std::clamp(static_cast<double>(step - warmup) / static_cast<double>(span), 0.0, 1.0);
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
  }
};

}  // namespace dspark::train
