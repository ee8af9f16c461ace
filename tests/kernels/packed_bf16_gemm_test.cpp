#include "kernels/packed_bf16_gemm.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/dtype.h"
#include "core/threads.h"
#include "kernels/kernel_test_util.h"
#include "kernels/linear.h"

namespace dspark {
namespace {

using testing::random_floats;
using testing::same_bits;

class PackedBf16GemmTest : public ::testing::TestWithParam<PackedIsa> {
 protected:
  void SetUp() override {
    if (GetParam() == PackedIsa::kAmx && !amx_available()) GTEST_SKIP() << "no AMX on this machine";
  }
};

// x rounded to bf16 in the kernel's padded layout: [padded_rows(rows), padded_in].
std::vector<uint16_t> pack_input(const std::vector<float>& x, int64_t rows, int64_t in, const PackedBf16Gemm& gemm) {
  std::vector<uint16_t> xb(static_cast<size_t>(PackedBf16Gemm::padded_rows(rows) * gemm.padded_in()), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < in; ++k) xb[r * gemm.padded_in() + k] = float_to_bf16(x[r * in + k]);
  return xb;
}

// Tolerance: 1e-4 of sum_k |x_k w_k| + |b| (f32 accumulation of exact bf16 products).
TEST_P(PackedBf16GemmTest, MatchesReference) {
  for (auto [out, in, rows] : {std::tuple{37, 53, 1}, {130, 67, 17}, {200, 333, 40}, {64, 1000, 3}, {16, 32, 33}}) {
    const auto w = random_floats(static_cast<size_t>(out * in), 1 + out);
    const auto b = random_floats(static_cast<size_t>(out), 2);
    const auto x = random_floats(static_cast<size_t>(rows * in), 3 + in, -2.0f, 2.0f);
    PackedBf16Gemm gemm(w.data(), out, in, b, GetParam());
    EXPECT_EQ(gemm.isa(), GetParam());
    const auto xb = pack_input(x, rows, in, gemm);
    std::vector<float> y(static_cast<size_t>(rows * out)), ref(y.size());
    gemm.multiply(xb.data(), y.data(), rows);
    reference::linear(x.data(), w.data(), b.data(), ref.data(), rows, out, in, DType::kBF16);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < out; ++n) {
        double magnitude = std::fabs(b[n]);
        for (int64_t k = 0; k < in; ++k) magnitude += std::fabs(round_to_bf16(x[r * in + k]) * round_to_bf16(w[n * in + k]));
        ASSERT_NEAR(y[r * out + n], ref[r * out + n], 1e-4 * magnitude) << "row " << r << " col " << n;
      }
  }
}

// Row r of every M (tile edges at 6, 16 and 32 rows included) equals row r computed alone,
// and 2 threads equal 1.
TEST_P(PackedBf16GemmTest, BatchAndThreadInvariant) {
  const int saved = num_threads();
  for (auto [out, in] : {std::pair{200, 333}, {96, 1536}, {1000, 64}}) {
    const int64_t max_rows = 130;
    const auto w = random_floats(static_cast<size_t>(out * in), 11);
    const auto x = random_floats(static_cast<size_t>(max_rows * in), 13, -3.0f, 3.0f);
    PackedBf16Gemm gemm(w.data(), out, in, {}, GetParam());
    const auto xb = pack_input(x, max_rows, in, gemm);
    const int64_t ldx = gemm.padded_in();
    set_num_threads(1);
    std::vector<float> single(static_cast<size_t>(max_rows * out));
    for (int64_t r = 0; r < max_rows; ++r) {
      // Alone: its row copied into a fresh 16-row input whose other rows are garbage.
      std::vector<uint16_t> one(static_cast<size_t>(16 * ldx), 0x7f7f);
      std::copy(xb.begin() + r * ldx, xb.begin() + (r + 1) * ldx, one.begin());
      gemm.multiply(one.data(), single.data() + r * out, 1);
    }
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (int64_t m : {1, 2, 6, 7, 15, 16, 17, 31, 32, 33, 130}) {
        std::vector<float> y(static_cast<size_t>(m * out));
        gemm.multiply(xb.data(), y.data(), m);
        for (int64_t r = 0; r < m; ++r)
          ASSERT_TRUE(same_bits(y.data() + r * out, single.data() + r * out, static_cast<size_t>(out)))
              << "row " << r << " of M=" << m << " threads " << threads << " shape [" << out << ", " << in << "]";
      }
    }
  }
  set_num_threads(saved);
}

INSTANTIATE_TEST_SUITE_P(Isas, PackedBf16GemmTest, ::testing::Values(PackedIsa::kAvx512, PackedIsa::kAmx),
                         [](const auto& info) { return info.param == PackedIsa::kAmx ? "amx" : "avx512"; });

TEST(PackedBf16Gemm, BestIsOneIsaForTheWholeProcess) {
  const auto w = random_floats(64, 1);
  const PackedBf16Gemm a(w.data(), 8, 8, {}, PackedIsa::kBest), b(w.data(), 4, 16, {}, PackedIsa::kBest);
  EXPECT_NE(a.isa(), PackedIsa::kBest);
  EXPECT_EQ(a.isa(), b.isa());
  EXPECT_EQ(a.isa(), amx_available() ? PackedIsa::kAmx : PackedIsa::kAvx512);
  EXPECT_EQ(a.padded_in(), 32);
}

}  // namespace
}  // namespace dspark
