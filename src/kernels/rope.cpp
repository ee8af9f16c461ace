#include "kernels/rope.h"

#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"

namespace dspark {
namespace {

constexpr int64_t kParallelMinElements = 64 * 1024;

}  // namespace

RopeTable::RopeTable(std::span<const float> inv_freq, int64_t max_positions, float cos_sin_scale)
    : half_dim_(static_cast<int64_t>(inv_freq.size())), max_positions_(max_positions) {
  DSPARK_CHECK(half_dim_ > 0, "RopeTable: inv_freq is empty");
  DSPARK_CHECK(max_positions_ > 0, "RopeTable: max_positions must be positive, got {}", max_positions_);
  cos_.resize(static_cast<size_t>(max_positions_ * half_dim_));
  sin_.resize(cos_.size());
  for (int64_t p = 0; p < max_positions_; ++p)
    for (int64_t i = 0; i < half_dim_; ++i) {
      // The angle is rounded to f32 before cos/sin, as HF computes it in f32.
      const float angle = static_cast<float>(p) * inv_freq[static_cast<size_t>(i)];
      cos_[static_cast<size_t>(p * half_dim_ + i)] = std::cos(angle) * cos_sin_scale;
      sin_[static_cast<size_t>(p * half_dim_ + i)] = std::sin(angle) * cos_sin_scale;
    }
}

void apply_rope(float* x, const int32_t* positions, int64_t num_tokens, int64_t num_heads,
                int64_t head_dim, const RopeTable& table) {
  const int64_t half = head_dim / 2;
  DSPARK_CHECK(head_dim % 2 == 0 && half == table.half_dim(),
               "apply_rope: head_dim {} does not match the table's half_dim {}", head_dim, table.half_dim());
  for (int64_t t = 0; t < num_tokens; ++t)
    DSPARK_CHECK(positions[t] >= 0 && positions[t] < table.max_positions(),
                 "apply_rope: position {} of token {} outside [0, {})", positions[t], t, table.max_positions());
  const int64_t rows = num_tokens * num_heads;
  parallel_for(rows, rows > 1 && rows * head_dim >= kParallelMinElements, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int32_t pos = positions[row / num_heads];
      const float* c = table.cos(pos);  // [half]
      const float* s = table.sin(pos);  // [half]
      float* lo = x + row * head_dim;   // [half]
      float* hi = lo + half;            // [half]
      // x*cos + rotate_half(x)*sin, with separate roundings (no fma) like HF's f32 ops; the
      // compiler vectorizes it, and element-wise work gives the same bits at any width.
      for (int64_t i = 0; i < half; ++i) {
        const float a = lo[i], b = hi[i];
        const float ac = a * c[i], bs = b * s[i], bc = b * c[i], as = a * s[i];
        lo[i] = ac - bs;
        hi[i] = bc + as;
      }
    }
  });
}

}  // namespace dspark
