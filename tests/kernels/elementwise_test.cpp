#include "kernels/elementwise.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/threads.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

using testing::random_floats;
using testing::same_bits;

// Tolerance: 4e-7 relative + 1e-30 (the vector exp is within a few ulp of std::exp; the
// division and product add one rounding each). Inputs cover large |gate| where exp
// overflows or underflows, and lengths with a partial last vector (8 and 16 lanes).
// Every ISA cap the CPU has (the AVX2 and AVX-512 versions).
TEST(SiluMul, MatchesReference) {
  testing::EachIsa each;
  for (Isa isa : each.caps) {
    set_active_isa(isa);
    for (int64_t ffn : {1, 5, 8, 13, 16, 31, 100, 1536}) {
      const int64_t rows = 3;
      auto gate_up = random_floats(static_cast<size_t>(rows * 2 * ffn), 40 + ffn, -12.0f, 12.0f);
      gate_up[0] = -100.0f;  // exp(100) overflows: silu = -0
      if (ffn > 1) gate_up[1] = 95.0f;
      std::vector<float> out(static_cast<size_t>(rows * ffn)), ref(out.size());
      silu_mul(gate_up.data(), out.data(), rows, ffn);
      reference::silu_mul(gate_up.data(), ref.data(), rows, ffn);
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], ref[i], 4e-7 * std::fabs(ref[i]) + 1e-30)
            << isa_name(isa) << " ffn " << ffn << " index " << i;
    }
  }
}

// Where exp(-g) is a normal float the AVX2 and AVX-512 versions share every operation, so a
// model's MLP gives the same bits under either cap.
TEST(SiluMul, SameBitsUnderEveryIsaCap) {
  testing::EachIsa each;
  const int64_t rows = 4, ffn = 1000;
  const auto gate_up = random_floats(static_cast<size_t>(rows * 2 * ffn), 9, -30.0f, 30.0f);
  std::vector<float> first(static_cast<size_t>(rows * ffn)), out(first.size());
  set_active_isa(each.caps.front());
  silu_mul(gate_up.data(), first.data(), rows, ffn);
  for (Isa isa : each.caps) {
    set_active_isa(isa);
    silu_mul(gate_up.data(), out.data(), rows, ffn);
    EXPECT_TRUE(same_bits(first.data(), out.data(), out.size())) << isa_name(isa);
  }
}

TEST(SiluMul, RowsIndependentOfBatchAndThreads) {
  const int64_t rows = 64, ffn = 1000;
  const auto gate_up = random_floats(static_cast<size_t>(rows * 2 * ffn), 3, -8.0f, 8.0f);
  std::vector<float> alone(static_cast<size_t>(rows * ffn)), batch(alone.size());
  const int saved = num_threads();
  set_num_threads(1);
  for (int64_t r = 0; r < rows; ++r) silu_mul(gate_up.data() + r * 2 * ffn, alone.data() + r * ffn, 1, ffn);
  set_num_threads(2);
  silu_mul(gate_up.data(), batch.data(), rows, ffn);
  set_num_threads(saved);
  EXPECT_TRUE(same_bits(alone.data(), batch.data(), alone.size()));
}

TEST(AddInplace, AddsElementwise) {
  auto x = random_floats(37, 1);
  const auto y = random_floats(37, 2);
  const auto before = x;
  add_inplace(x.data(), y.data(), 37);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], before[i] + y[i]);
}

}  // namespace
}  // namespace dspark
