#include "kernels/packed_bf16_gemm.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/threads.h"
#include "kernels/isa.h"
#include "kernels/kernel_test_util.h"
#include "kernels/linear.h"

namespace dspark {
namespace {

using testing::random_floats;
using testing::same_bits;

// Every kernel, each run where the CPU (and the ISA cap, e.g. DSPARK_ISA) allows it.
class PackedBf16GemmTest : public ::testing::TestWithParam<Bf16Kernel> {
 protected:
  void SetUp() override {
    if (!isa_allowed(bf16_kernel_isa(GetParam())))
      GTEST_SKIP() << bf16_kernel_name(GetParam()) << " needs ISA " << isa_name(bf16_kernel_isa(GetParam()))
                   << "; active: " << isa_name(active_isa());
  }
};

// Tolerance: 1e-4 of sum_k |x_k w_k| + |b| (f32 accumulation of exact bf16 products); kFp16,
// whose sums of 32 products a lane are fp16 (kernels/isa/bf16_kernels.h), 2e-3.
TEST_P(PackedBf16GemmTest, MatchesReference) {
  const bool fp16 = GetParam() == Bf16Kernel::kFp16;
  for (auto [out, in, rows] :
       {std::tuple{37, 53, 1}, {130, 67, 17}, {200, 333, 40}, {64, 1000, 3}, {16, 32, 33}, {1000, 64, 9},
        {72, 99, 12}}) {
    const auto w = random_floats(static_cast<size_t>(out * in), 1 + out);
    const auto b = random_floats(static_cast<size_t>(out), 2);
    const auto x = random_floats(static_cast<size_t>(rows * in), 3 + in, -2.0f, 2.0f);
    PackedBf16Gemm gemm(w.data(), out, in, b, rows, GetParam());
    EXPECT_EQ(gemm.kernel(), GetParam());
    std::vector<float> y(static_cast<size_t>(rows * out)), ref(y.size());
    gemm.multiply(x.data(), y.data(), rows);
    reference::linear(x.data(), w.data(), b.data(), ref.data(), rows, out, in, DType::kBF16);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < out; ++n) {
        double magnitude = std::fabs(b[n]);
        for (int64_t k = 0; k < in; ++k)
          magnitude += std::fabs(round_to_bf16(x[r * in + k]) * round_to_bf16(w[n * in + k]));
        ASSERT_NEAR(y[r * out + n], ref[r * out + n], (fp16 ? 2e-3 : 1e-4) * magnitude) << "row " << r << " col " << n;
      }
  }
}

// Small integers times powers of two are exact in every kernel's arithmetic, kFp16's fp16
// sums included (below 2048 times the scale): the products must equal the exact ones bit
// for bit, whatever each row's and each output's scale.
TEST_P(PackedBf16GemmTest, ExactOnValuesEveryKernelHoldsExactly) {
  constexpr int64_t kOut = 70, kIn = 200, kRows = 13;
  std::vector<float> w(static_cast<size_t>(kOut * kIn)), x(static_cast<size_t>(kRows * kIn));
  uint32_t state = 7;
  const auto next = [&state] { return (state = state * 1664525u + 1013904223u) >> 8; };
  for (int64_t n = 0; n < kOut; ++n)
    for (int64_t k = 0; k < kIn; ++k)
      w[n * kIn + k] = std::ldexp(static_cast<float>(static_cast<int>(next() % 7) - 3), static_cast<int>(n % 9) - 6);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t k = 0; k < kIn; ++k)
      x[r * kIn + k] =
          std::ldexp(static_cast<float>(static_cast<int>(next() % 5) - 2), 3 * static_cast<int>(r % 5) - 5);
  PackedBf16Gemm gemm(w.data(), kOut, kIn, {}, kRows, GetParam());
  std::vector<float> y(static_cast<size_t>(kRows * kOut));
  gemm.multiply(x.data(), y.data(), kRows);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t n = 0; n < kOut; ++n) {
      double exact = 0;
      for (int64_t k = 0; k < kIn; ++k) exact += static_cast<double>(x[r * kIn + k]) * w[n * kIn + k];
      ASSERT_EQ(y[r * kOut + n], static_cast<float>(exact)) << "row " << r << " col " << n;
    }
}

// kFp16's fp16 sums add an error well under the one every kernel makes by rounding x to bf16:
// on decoder-like shapes, the RMS of its difference from the bf16 reference is below 0.75x
// the RMS of that reference's difference from the exact products (measured on an Intel Xeon:
// about 0.5x).
TEST(PackedBf16Gemm, Fp16SumsAddLessErrorThanRoundingActivationsToBf16) {
  if (!isa_allowed(bf16_kernel_isa(Bf16Kernel::kFp16))) GTEST_SKIP() << "fp16 needs ISA avx512fp16";
  for (auto [out, in] : {std::pair{512, 512}, {256, 1536}}) {
    constexpr int64_t kRows = 9;
    const auto w = random_floats(static_cast<size_t>(out * in), 21, -0.1f, 0.1f);
    const auto x = random_floats(static_cast<size_t>(kRows * in), 22, -3.0f, 3.0f);
    PackedBf16Gemm gemm(w.data(), out, in, {}, kRows, Bf16Kernel::kFp16);
    std::vector<float> y(static_cast<size_t>(kRows * out)), bf16_x(y.size());
    gemm.multiply(x.data(), y.data(), kRows);
    reference::linear(x.data(), w.data(), nullptr, bf16_x.data(), kRows, out, in, DType::kBF16);
    double sums_error = 0, rounding_error = 0;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t n = 0; n < out; ++n) {
        double exact = 0;
        for (int64_t k = 0; k < in; ++k) exact += static_cast<double>(x[r * in + k]) * round_to_bf16(w[n * in + k]);
        sums_error += std::pow(y[r * out + n] - bf16_x[r * out + n], 2);
        rounding_error += std::pow(bf16_x[r * out + n] - exact, 2);
      }
    const double ratio = std::sqrt(sums_error / rounding_error);
    std::printf("[%d, %d]: RMS of the fp16 sums' error / of rounding x to bf16 %.3f\n", static_cast<int>(out),
                static_cast<int>(in), ratio);
    EXPECT_LT(ratio, 0.75);
  }
}

// Row r of every M (every M of one or two row tiles, and tile edges at 12, 16, 32 and 48
// rows) equals row r computed alone, and 2 threads equal 1.
TEST_P(PackedBf16GemmTest, BatchAndThreadInvariant) {
  const int saved = num_threads();
  for (auto [out, in] : {std::pair{200, 333}, {96, 1536}, {1000, 64}}) {
    const int64_t max_rows = 130;
    const auto w = random_floats(static_cast<size_t>(out * in), 11);
    const auto x = random_floats(static_cast<size_t>(max_rows * in), 13, -3.0f, 3.0f);
    PackedBf16Gemm gemm(w.data(), out, in, {}, max_rows, GetParam());
    set_num_threads(1);
    std::vector<float> single(static_cast<size_t>(max_rows * out));
    for (int64_t r = 0; r < max_rows; ++r) gemm.multiply(x.data() + r * in, single.data() + r * out, 1);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 31, 32, 33, 48, 49, 130}) {
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

INSTANTIATE_TEST_SUITE_P(Kernels, PackedBf16GemmTest,
                         ::testing::Values(Bf16Kernel::kFma256, Bf16Kernel::kFma512, Bf16Kernel::kDpbf16,
                                           Bf16Kernel::kAmx, Bf16Kernel::kFp16),
                         [](const auto& info) { return std::string(bf16_kernel_name(info.param)); });

TEST(PackedBf16Gemm, BestIsOneKernelForTheWholeProcess) {
  const auto w = random_floats(64, 1);
  const PackedBf16Gemm a(w.data(), 8, 8, {}, 4), b(w.data(), 4, 16, {}, 4);
  EXPECT_NE(a.kernel(), Bf16Kernel::kBest);
  EXPECT_EQ(a.kernel(), b.kernel());
  EXPECT_EQ(a.kernel(), best_bf16_kernel());
  EXPECT_TRUE(isa_allowed(bf16_kernel_isa(a.kernel())));
  if (isa_allowed(Isa::kAmx)) {
    EXPECT_EQ(a.kernel(), Bf16Kernel::kAmx);
  }
}

TEST(PackedBf16Gemm, RefusesAKernelAboveTheIsaCap) {
  const auto w = random_floats(64, 1);
  for (Bf16Kernel k : {Bf16Kernel::kFma512, Bf16Kernel::kDpbf16, Bf16Kernel::kAmx, Bf16Kernel::kFp16})
    if (!isa_allowed(bf16_kernel_isa(k))) {
      EXPECT_THROW(PackedBf16Gemm(w.data(), 8, 8, {}, 4, k), Error);
    }
  EXPECT_THROW(PackedBf16Gemm(w.data(), 8, 8, {}, 0), Error);
  PackedBf16Gemm gemm(w.data(), 8, 8, {}, 4);
  std::vector<float> x(5 * 8), y(5 * 8);
  EXPECT_THROW(gemm.multiply(x.data(), y.data(), 5), Error);
}

}  // namespace
}  // namespace dspark
