#include "kernels/packed_f32_gemm.h"

#include <cmath>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/threads.h"
#include "kernels/isa.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

using testing::random_floats;
using testing::same_bits;

// The kernels' definition, scalar: one fused multiply-add chain per output over k in
// order, then + bias.
std::vector<float> fma_chain(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                             int64_t rows, int64_t out, int64_t in) {
  std::vector<float> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < out; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < in; ++k) acc = std::fma(x[r * in + k], w[n * in + k], acc);
      y[r * out + n] = acc + (b.empty() ? 0.0f : b[n]);
    }
  return y;
}

// Both kernels, each run where the CPU (and the ISA cap, e.g. DSPARK_ISA) allows it.
class PackedF32GemmTest : public ::testing::TestWithParam<F32Kernel> {
 protected:
  void SetUp() override {
    if (!isa_allowed(f32_kernel_isa(GetParam())))
      GTEST_SKIP() << f32_kernel_name(GetParam()) << " needs ISA " << isa_name(f32_kernel_isa(GetParam()))
                   << "; active: " << isa_name(active_isa());
  }
};

// Bit for bit the scalar chain: odd shapes (padding in k and in the last group of 64
// outputs), with and without bias, tile edges of 5 rows and half-group tiles of 9 and 12.
TEST_P(PackedF32GemmTest, SameBitsAsTheScalarChain) {
  for (auto [out, in, rows] :
       {std::tuple{37, 53, 1}, {130, 67, 17}, {200, 333, 40}, {64, 1000, 3}, {16, 32, 33}, {1000, 64, 9},
        {72, 99, 12}}) {
    for (bool with_bias : {false, true}) {
      const auto w = random_floats(static_cast<size_t>(out * in), 1 + out);
      const auto b = with_bias ? random_floats(static_cast<size_t>(out), 2) : std::vector<float>{};
      const auto x = random_floats(static_cast<size_t>(rows * in), 3 + in, -2.0f, 2.0f);
      PackedF32Gemm gemm(w.data(), out, in, b, rows, GetParam());
      EXPECT_EQ(gemm.kernel(), GetParam());
      std::vector<float> y(static_cast<size_t>(rows * out));
      gemm.multiply(x.data(), y.data(), rows);
      const auto expected = fma_chain(x, w, b, rows, out, in);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_TRUE(same_bits(y.data() + r * out, expected.data() + r * out, static_cast<size_t>(out)))
            << "row " << r << " shape [" << out << ", " << in << "] bias " << with_bias;
    }
  }
}

// Row r of every M equals row r computed alone, and 2 threads equal 1.
TEST_P(PackedF32GemmTest, BatchAndThreadInvariant) {
  const int saved = num_threads();
  for (auto [out, in] : {std::pair{200, 333}, {96, 1536}}) {
    const int64_t max_rows = 64;
    const auto w = random_floats(static_cast<size_t>(out * in), 11);
    const auto x = random_floats(static_cast<size_t>(max_rows * in), 13, -3.0f, 3.0f);
    PackedF32Gemm gemm(w.data(), out, in, {}, max_rows, GetParam());
    set_num_threads(1);
    std::vector<float> single(static_cast<size_t>(max_rows * out));
    for (int64_t r = 0; r < max_rows; ++r) gemm.multiply(x.data() + r * in, single.data() + r * out, 1);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (int64_t m : {1, 2, 5, 6, 7, 9, 12, 13, 16, 17, 49, 64}) {
        std::vector<float> y(static_cast<size_t>(m * out));
        gemm.multiply(x.data(), y.data(), m);
        for (int64_t r = 0; r < m; ++r)
          ASSERT_TRUE(same_bits(y.data() + r * out, single.data() + r * out, static_cast<size_t>(out)))
              << "row " << r << " of M=" << m << " threads " << threads << " shape [" << out << ", " << in << "]";
      }
    }
  }
  set_num_threads(saved);
}

INSTANTIATE_TEST_SUITE_P(Kernels, PackedF32GemmTest, ::testing::Values(F32Kernel::kFma256, F32Kernel::kFma512),
                         [](const auto& info) { return std::string(f32_kernel_name(info.param)); });

TEST(PackedF32Gemm, BestIsTheWidestAllowedAndAViewSharesTheWeights) {
  const auto w = random_floats(64, 1);
  PackedF32Gemm gemm(w.data(), 8, 8, {}, 4);
  EXPECT_EQ(gemm.kernel(), isa_allowed(Isa::kAvx512) ? F32Kernel::kFma512 : F32Kernel::kFma256);
  PackedF32Gemm view(gemm, 2);
  EXPECT_EQ(view.weights_data(), gemm.weights_data());
  EXPECT_EQ(view.kernel(), gemm.kernel());
  std::vector<float> x = random_floats(16, 2), y(16), y_view(16);
  gemm.multiply(x.data(), y.data(), 2);
  view.multiply(x.data(), y_view.data(), 2);
  EXPECT_TRUE(same_bits(y.data(), y_view.data(), y.size()));
  EXPECT_THROW(view.multiply(x.data(), y_view.data(), 3), Error);
}

TEST(PackedF32Gemm, RefusesBadArguments) {
  const auto w = random_floats(64, 1);
  if (!isa_allowed(Isa::kAvx512)) {
    EXPECT_THROW(PackedF32Gemm(w.data(), 8, 8, {}, 4, F32Kernel::kFma512), Error);
  }
  EXPECT_THROW(PackedF32Gemm(w.data(), 8, 8, {}, 0), Error);
  EXPECT_THROW(PackedF32Gemm(w.data(), 8, 8, std::vector<float>(7), 4), Error);
  PackedF32Gemm gemm(w.data(), 8, 8, {}, 4);
  std::vector<float> x(5 * 8), y(5 * 8);
  EXPECT_THROW(gemm.multiply(x.data(), y.data(), 5), Error);
}

}  // namespace
}  // namespace dspark
