#include "kernels/packed_int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
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

// Every int8 kernel with 8-bit weights, and those that take 4-bit weights (all but amx) with
// 4-bit ones, each run where the CPU (and the ISA cap) allows it.
class PackedInt8GemmTest : public ::testing::TestWithParam<std::tuple<Int8Kernel, int>> {
 protected:
  Int8Kernel kernel() const { return std::get<0>(GetParam()); }
  int bits() const { return std::get<1>(GetParam()); }
  void SetUp() override {
    if (!isa_allowed(int8_kernel_isa(kernel())))
      GTEST_SKIP() << int8_kernel_name(kernel()) << " needs ISA " << isa_name(int8_kernel_isa(kernel()))
                   << "; active: " << isa_name(active_isa());
  }
};

TEST(Int8Quantization, RoundTripsWithinHalfAStep) {
  const int64_t out = 5, in = 70;  // 3 blocks per row, the last one partial
  auto w = random_floats(static_cast<size_t>(out * in), 7, -3.0f, 3.0f);
  for (int64_t k = 32; k < 64; ++k) w[2 * in + k] = 0.0f;  // an all-zero block
  for (const int bits : {8, 4}) {
    const int q_max = bits == 8 ? 127 : 7;
    const Int8Weights q = quantize_int8_weights(w.data(), out, in, bits);
    ASSERT_EQ(q.scales.size(), size_t{out * 3});
    EXPECT_EQ(q.bits, bits);
    EXPECT_EQ(q.scales[2 * 3 + 1], 0.0f);
    int extremes = 0;  // the block's largest |w| lands on ±q_max
    // squared error per block, and of the plain scale max|w| / q_max with rounding
    std::vector<double> error(out * 3), plain(out * 3);
    for (int64_t n = 0; n < out; ++n)
      for (int64_t k = 0; k < in; ++k) {
        const float s = q.scales[n * 3 + k / 32];
        EXPECT_LE(std::abs(q.q[n * in + k]), q_max);
        extremes += std::abs(q.q[n * in + k]) == q_max;
        error[n * 3 + k / 32] += std::pow(q.q[n * in + k] * s - w[n * in + k], 2);
        float amax = 0.0f;
        for (int64_t j = k / 32 * 32; j < std::min<int64_t>(in, k / 32 * 32 + 32); ++j)
          amax = std::max(amax, std::fabs(w[n * in + j]));
        const float step = amax / static_cast<float>(q_max);
        const float rounded = step > 0 ? std::nearbyint(w[n * in + k] / step) * step : 0.0f;
        plain[n * 3 + k / 32] += std::pow(rounded - w[n * in + k], 2);
        // 8 bits: within half a step of the weight
        if (bits == 8) EXPECT_LE(std::fabs(q.q[n * in + k] * s - w[n * in + k]), 0.5f * s * (1 + 1e-6f) + 1e-30f);
      }
    EXPECT_GE(extremes, out * 3 - 1) << bits << " bits";  // every block but the zero one
    if (bits == 4) {  // the scale search: never worse than the plain scale in a block, better overall
      for (const float s : q.scales) EXPECT_EQ(round_to_f16(s), s) << "an f16 value";
      for (size_t b = 0; b < error.size(); ++b) EXPECT_LE(error[b], plain[b] * (1 + 1e-6) + 1e-12) << "block " << b;
      const double total = std::accumulate(error.begin(), error.end(), 0.0);
      EXPECT_LT(total, 0.9 * std::accumulate(plain.begin(), plain.end(), 0.0));
    }
  }
}

// The kernel computes exactly what the plain-loop reference computes (same integer sums,
// same f32 operations in the same order): bit for bit.
TEST_P(PackedInt8GemmTest, SameBitsAsReference) {
  for (auto [out, in, rows] : {std::tuple{37, 53, 1}, {130, 67, 17}, {200, 333, 40}, {64, 1000, 3}, {16, 32, 13},
                              {33, 96, 7}, {70, 130, 9}, {50, 64, 12}, {8, 40, 8}}) {
    const auto w = random_floats(static_cast<size_t>(out * in), 1 + out);
    const auto b = random_floats(static_cast<size_t>(out), 2);
    const auto x = random_floats(static_cast<size_t>(rows * in), 3 + in, -2.0f, 2.0f);
    const Int8Weights q = quantize_int8_weights(w.data(), out, in, bits());
    PackedInt8Gemm gemm(q, b, rows, kernel());
    std::vector<float> y(static_cast<size_t>(rows * out)), ref(y.size());
    gemm.multiply(x.data(), y.data(), rows);
    reference::int8_linear(x.data(), q, b.data(), ref.data(), rows);
    ASSERT_TRUE(same_bits(y.data(), ref.data(), y.size())) << "shape [" << out << ", " << in << "] rows " << rows;
  }
}

// Weights and activations at their extremes, one sign per 32-column block: every integer
// sum as large as the format allows (the AVX2 kernel adds a chunk's 4-bit products in
// int16, up to 8 x 2 x 15 x 127 = 30,480), still the reference's bits.
TEST_P(PackedInt8GemmTest, LargestSumsStayExact) {
  const int64_t out = 48, in = 160, rows = 9;
  std::vector<float> w(static_cast<size_t>(out * in)), x(static_cast<size_t>(rows * in));
  for (int64_t n = 0; n < out; ++n)
    for (int64_t k = 0; k < in; ++k) w[n * in + k] = (n + k / 32) % 3 == 0 ? -1.0f : 1.0f;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < in; ++k) x[r * in + k] = (r + k / 64) % 2 == 0 ? 2.0f : -2.0f;
  const Int8Weights q = quantize_int8_weights(w.data(), out, in, bits());
  for (const int8_t v : q.q) ASSERT_EQ(std::abs(v), bits() == 8 ? 127 : 7);
  PackedInt8Gemm gemm(q, {}, rows, kernel());
  std::vector<float> y(static_cast<size_t>(rows * out)), ref(y.size());
  for (int64_t m = 1; m <= rows; ++m) {
    gemm.multiply(x.data(), y.data(), m);
    reference::int8_linear(x.data(), q, nullptr, ref.data(), m);
    ASSERT_TRUE(same_bits(y.data(), ref.data(), static_cast<size_t>(m * out))) << "rows " << m;
  }
  for (int64_t r = 0; r < rows; ++r)  // the sums did not wrap
    for (int64_t n = 0; n < out; ++n) {
      double exact = 0;
      for (int64_t k = 0; k < in; ++k) exact += double{w[n * in + k]} * x[r * in + k];
      ASSERT_NEAR(y[r * out + n], exact, 0.02 * 2 * in) << "row " << r << " output " << n;
    }
}

// Quantization error against the f32 product: per-block int8 on both sides keeps each
// output within 2% of sum_k |x_k w_k|, 4-bit weights within 6% (random data; real
// activations are checked through perplexity in the model tests).
TEST_P(PackedInt8GemmTest, CloseToTheFloatProduct) {
  const int64_t out = 96, in = 512, rows = 4;
  const auto w = random_floats(static_cast<size_t>(out * in), 5);
  const auto x = random_floats(static_cast<size_t>(rows * in), 6, -2.0f, 2.0f);
  PackedInt8Gemm gemm(quantize_int8_weights(w.data(), out, in, bits()), {}, rows, kernel());
  std::vector<float> y(static_cast<size_t>(rows * out)), ref(y.size());
  gemm.multiply(x.data(), y.data(), rows);
  reference::linear(x.data(), w.data(), nullptr, ref.data(), rows, out, in, DType::kF32);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < out; ++n) {
      double magnitude = 0;
      for (int64_t k = 0; k < in; ++k) magnitude += std::fabs(x[r * in + k] * w[n * in + k]);
      ASSERT_NEAR(y[r * out + n], ref[r * out + n], (bits() == 8 ? 0.02 : 0.06) * magnitude);
    }
}

TEST_P(PackedInt8GemmTest, BatchAndThreadInvariant) {
  const int saved = num_threads();
  for (auto [out, in] : {std::pair{200, 333}, {96, 1536}, {1000, 64}}) {
    const int64_t max_rows = 130;
    const auto w = random_floats(static_cast<size_t>(out * in), 11);
    const auto x = random_floats(static_cast<size_t>(max_rows * in), 13, -3.0f, 3.0f);
    PackedInt8Gemm gemm(quantize_int8_weights(w.data(), out, in, bits()), {}, max_rows, kernel());
    set_num_threads(1);
    std::vector<float> single(static_cast<size_t>(max_rows * out));
    for (int64_t r = 0; r < max_rows; ++r) gemm.multiply(x.data() + r * in, single.data() + r * out, 1);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (int64_t m : {1, 2, 6, 7, 9, 10, 12, 13, 16, 18, 19, 33, 48, 49, 130}) {
        std::vector<float> y(static_cast<size_t>(m * out));
        gemm.multiply(x.data(), y.data(), m);
        for (int64_t r = 0; r < m; ++r)
          ASSERT_TRUE(same_bits(y.data() + r * out, single.data() + r * out, static_cast<size_t>(out)))
              << "row " << r << " of M=" << m << " threads " << threads;
      }
    }
  }
  set_num_threads(saved);
}

TEST(PackedInt8Gemm, ThroughLinear) {
  const auto w = random_floats(64 * 64, 31);
  const auto x = random_floats(8 * 64, 32);
  // weight bytes: 64 x 64 weights of `bits` bits plus a scale per 32 (f32; f16 for 4 bits)
  for (const auto [quantization, bits] : {std::pair{WeightQuantization::kInt8, 8}, {WeightQuantization::kInt4, 4}}) {
    Linear linear(w, 64, 64, {}, {DType::kBF16, 8, LinearBackend::kAuto, quantization});
    EXPECT_EQ(linear.backend(), LinearBackend::kPackedInt8);
    EXPECT_EQ(linear.kernel_name(), int8_kernel_name(best_int8_kernel(bits)));
    EXPECT_EQ(linear.weight_bytes(), size_t{64 * 64 * bits / 8 + 64 * 2 * (bits == 8 ? 4 : 2)});
    std::vector<float> y(8 * 64), ref(y.size());
    linear.forward(x.data(), y.data(), 8);
    reference::int8_linear(x.data(), quantize_int8_weights(w.data(), 64, 64, bits), nullptr, ref.data(), 8);
    EXPECT_TRUE(same_bits(y.data(), ref.data(), y.size())) << bits << " bits";
    EXPECT_THROW(linear.forward(x.data(), y.data(), 9), Error);
  }
}

// The 4-bit product is the 8-bit one of the weights 16 q with scales s / 16 (exact), so
// both give the same bits: the nibbles unpack to the right k and lanes.
TEST(PackedInt8Gemm, FourBitWeightsMultiplyAsTheirEightBitEqual) {
  const int64_t out = 70, in = 100, rows = 9;
  const auto w = random_floats(static_cast<size_t>(out * in), 41);
  const auto x = random_floats(static_cast<size_t>(rows * in), 42, -2.0f, 2.0f);
  const Int8Weights four = quantize_int8_weights(w.data(), out, in, 4);
  Int8Weights eight = four;
  eight.bits = 8;
  for (int8_t& q : eight.q) q = static_cast<int8_t>(q * 16);
  for (float& s : eight.scales) s /= 16.0f;
  std::vector<float> y4(static_cast<size_t>(rows * out)), y8(y4.size());
  for (Int8Kernel kernel : {Int8Kernel::kAvx2, Int8Kernel::kAvxVnni, Int8Kernel::kVnni512}) {
    if (!isa_allowed(int8_kernel_isa(kernel))) continue;
    PackedInt8Gemm(four, {}, rows, kernel).multiply(x.data(), y4.data(), rows);
    PackedInt8Gemm(eight, {}, rows, kernel).multiply(x.data(), y8.data(), rows);
    EXPECT_TRUE(same_bits(y4.data(), y8.data(), y4.size())) << int8_kernel_name(kernel);
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, PackedInt8GemmTest,
                         ::testing::Values(std::tuple{Int8Kernel::kAvx2, 8}, std::tuple{Int8Kernel::kAvxVnni, 8},
                                           std::tuple{Int8Kernel::kVnni512, 8}, std::tuple{Int8Kernel::kAmx, 8},
                                           std::tuple{Int8Kernel::kAvx2, 4}, std::tuple{Int8Kernel::kAvxVnni, 4},
                                           std::tuple{Int8Kernel::kVnni512, 4}),
                         [](const auto& info) {
                           return std::string(int8_kernel_name(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "bit";
                         });

TEST(PackedInt8Gemm, RejectsBadInput) {
  const auto w = random_floats(64, 1);
  Int8Weights q = quantize_int8_weights(w.data(), 8, 8);
  q.scales.pop_back();
  EXPECT_THROW(PackedInt8Gemm(q, {}, 4, Int8Kernel::kAvx2), Error);
  for (Int8Kernel kernel : {Int8Kernel::kAvxVnni, Int8Kernel::kVnni512, Int8Kernel::kAmx}) {
    if (!isa_allowed(int8_kernel_isa(kernel))) {
      EXPECT_THROW(PackedInt8Gemm(quantize_int8_weights(w.data(), 8, 8), {}, 4, kernel), Error);
    }
  }
  // 4-bit weights: not on AMX tiles, and only values a nibble holds
  const Int8Weights four = quantize_int8_weights(w.data(), 8, 8, 4);
  EXPECT_THROW(PackedInt8Gemm(four, {}, 4, Int8Kernel::kAmx), Error);
  Int8Weights too_wide = four;
  too_wide.q[3] = 8;
  EXPECT_THROW(PackedInt8Gemm(too_wide, {}, 4, Int8Kernel::kAvx2), Error);
  Int8Weights not_f16 = four;  // 4-bit scales are packed as f16
  not_f16.scales[1] = std::nextafter(not_f16.scales[1], 1.0f);
  EXPECT_THROW(PackedInt8Gemm(not_f16, {}, 4, Int8Kernel::kAvx2), Error);
  EXPECT_THROW(quantize_int8_weights(w.data(), 8, 8, 2), Error);
  EXPECT_THROW(parse_quantization("int2"), Error);
  EXPECT_EQ(parse_quantization("int8"), WeightQuantization::kInt8);
  EXPECT_EQ(parse_quantization("int4"), WeightQuantization::kInt4);
  EXPECT_THROW(Linear(w, 8, 8, {}, {DType::kBF16, 4, LinearBackend::kPackedBf16, WeightQuantization::kInt8}), Error);
}

}  // namespace
}  // namespace dspark
