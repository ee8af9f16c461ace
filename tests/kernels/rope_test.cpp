#include "kernels/rope.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

using testing::random_floats;
using testing::same_bits;

std::vector<float> inv_freq(int64_t head_dim, double theta) {
  std::vector<float> f(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i)
    f[i] = static_cast<float>(1.0 / std::pow(theta, 2.0 * i / static_cast<double>(head_dim)));
  return f;
}

// The table and the reference compute the same f32 angle and the same un-fused products,
// so the result is exact (tolerance 0).
TEST(Rope, MatchesReferenceExactly) {
  for (int64_t head_dim : {8, 64, 128, 34}) {
    const auto freq = inv_freq(head_dim, 10000.0);
    const RopeTable table(freq, 4096);
    const int64_t tokens = 5, heads = 3;
    const std::vector<int32_t> positions = {0, 1, 17, 1000, 4095};
    auto x = random_floats(static_cast<size_t>(tokens * heads * head_dim), 5 + head_dim);
    auto ref = x;
    apply_rope(x.data(), positions.data(), tokens, heads, head_dim, table);
    reference::apply_rope(ref.data(), positions.data(), tokens, heads, head_dim, freq);
    EXPECT_TRUE(same_bits(x.data(), ref.data(), x.size())) << "head_dim " << head_dim;
  }
}

TEST(Rope, PositionZeroIsIdentityAndRotationPreservesNorm) {
  const int64_t head_dim = 64;
  const auto freq = inv_freq(head_dim, 500000.0);
  const RopeTable table(freq, 128);
  auto x = random_floats(2 * head_dim, 9);
  const auto before = x;
  const std::vector<int32_t> positions = {0, 77};
  apply_rope(x.data(), positions.data(), 2, 1, head_dim, table);
  EXPECT_TRUE(same_bits(x.data(), before.data(), static_cast<size_t>(head_dim)));
  double n0 = 0, n1 = 0;
  for (int64_t i = 0; i < head_dim; ++i) {
    n0 += before[head_dim + i] * before[head_dim + i];
    n1 += x[head_dim + i] * x[head_dim + i];
  }
  EXPECT_NEAR(n0, n1, 1e-5 * n0);
}

TEST(Rope, RejectsBadPositionsAndShapes) {
  const auto freq = inv_freq(8, 10000.0);
  const RopeTable table(freq, 16);
  std::vector<float> x(8);
  const int32_t too_far = 16, negative = -1;
  EXPECT_THROW(apply_rope(x.data(), &too_far, 1, 1, 8, table), Error);
  EXPECT_THROW(apply_rope(x.data(), &negative, 1, 1, 8, table), Error);
  const int32_t ok = 3;
  EXPECT_THROW(apply_rope(x.data(), &ok, 1, 1, 6, table), Error);
  EXPECT_THROW(RopeTable({}, 16), Error);
}

}  // namespace
}  // namespace dspark
