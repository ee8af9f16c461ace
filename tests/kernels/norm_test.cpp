#include "kernels/norm.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/threads.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

using testing::random_floats;
using testing::same_bits;

// Tolerance: 2e-6 relative to |x * inv_rms * weight| + 1e-7 (f32 sum of squares vs double).
TEST(RmsNorm, MatchesReference) {
  for (int64_t dim : {1, 8, 15, 17, 64, 100, 333, 512, 1000}) {
    const int64_t rows = 5;
    const auto x = random_floats(static_cast<size_t>(rows * dim), 100 + dim, -3.0f, 3.0f);
    const auto w = random_floats(static_cast<size_t>(dim), 200 + dim, 0.5f, 1.5f);
    std::vector<float> y(x.size()), ref(x.size());
    rms_norm(x.data(), w.data(), y.data(), rows, dim, 1e-6f);
    reference::rms_norm(x.data(), w.data(), ref.data(), rows, dim, 1e-6f);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], ref[i], 2e-6 * std::fabs(ref[i]) + 1e-7) << "dim " << dim << " index " << i;
  }
}

TEST(RmsNorm, InPlaceEqualsOutOfPlace) {
  const int64_t rows = 3, dim = 77;
  auto x = random_floats(rows * dim, 1);
  const auto w = random_floats(dim, 2);
  std::vector<float> y(x.size());
  rms_norm(x.data(), w.data(), y.data(), rows, dim, 1e-5f);
  rms_norm(x.data(), w.data(), x.data(), rows, dim, 1e-5f);
  EXPECT_TRUE(same_bits(x.data(), y.data(), x.size()));
}

// A row normalised alone, inside a batch of other rows, and with 1 or 2 threads: same bits.
TEST(RmsNorm, BatchAndThreadInvariant) {
  const int saved = num_threads();
  for (int64_t dim : {64, 333, 2048}) {
    const int64_t rows = 96;  // 96 * 2048 elements: large enough to run in parallel
    const auto x = random_floats(static_cast<size_t>(rows * dim), 7 + dim, -4.0f, 4.0f);
    const auto w = random_floats(static_cast<size_t>(dim), 8);
    std::vector<float> alone(x.size()), batch1(x.size()), batch2(x.size());
    set_num_threads(1);
    for (int64_t r = 0; r < rows; ++r) rms_norm(x.data() + r * dim, w.data(), alone.data() + r * dim, 1, dim, 1e-6f);
    rms_norm(x.data(), w.data(), batch1.data(), rows, dim, 1e-6f);
    set_num_threads(2);
    rms_norm(x.data(), w.data(), batch2.data(), rows, dim, 1e-6f);
    EXPECT_TRUE(same_bits(alone.data(), batch1.data(), x.size())) << "dim " << dim;
    EXPECT_TRUE(same_bits(alone.data(), batch2.data(), x.size())) << "dim " << dim;
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace dspark
