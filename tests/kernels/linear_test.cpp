#include "kernels/linear.h"

#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/threads.h"
#include "kernels/kernel_test_util.h"

namespace dspark {
namespace {

using testing::random_floats;
using testing::same_bits;

struct Config {
  DType compute;
  LinearBackend backend;
};

std::string name(const Config& c) {
  return std::string(dtype_name(c.compute)) + (c.backend == LinearBackend::kOneDnn ? "_onednn" : "_packed");
}

// Skips a configuration this CPU cannot run batch invariant (oneDNN without AVX-512, or bf16
// without AVX512_BF16).
class LinearTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override {
    if (!linear_backend_supported(GetParam().backend, GetParam().compute))
      GTEST_SKIP() << "oneDNN's matmul is not batch invariant on this CPU";
  }
};

// Tolerance, stated relative to the magnitude of the dot product sum_k |x_k w_k| + |b|:
// f32 accumulation over K terms of exactly representable products (bf16) or rounded
// products (f32). f32: 1e-5; bf16 (inputs rounded the same way in the reference): 1e-4, or
// 2e-3 where the kernel is fp16 (sums of 32 products a lane in fp16: kernels/packed_bf16_gemm.h).
void expect_matches_reference(const Config& c, int64_t out, int64_t in, int64_t rows, bool with_bias) {
  const auto w = random_floats(static_cast<size_t>(out * in), 1 + out + in);
  const auto b = with_bias ? random_floats(static_cast<size_t>(out), 2) : std::vector<float>{};
  const auto x = random_floats(static_cast<size_t>(rows * in), 3 + rows, -2.0f, 2.0f);
  Linear linear(w, out, in, b, {c.compute, 64, c.backend});
  std::vector<float> y(static_cast<size_t>(rows * out)), ref(y.size());
  linear.forward(x.data(), y.data(), rows);
  reference::linear(x.data(), w.data(), with_bias ? b.data() : nullptr, ref.data(), rows, out, in, c.compute);
  const double rel = c.compute == DType::kF32 ? 1e-5 : linear.kernel_name() == "fp16" ? 2e-3 : 1e-4;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < out; ++n) {
      double magnitude = with_bias ? std::fabs(b[n]) : 0.0;
      for (int64_t k = 0; k < in; ++k) magnitude += std::fabs(x[r * in + k] * w[n * in + k]);
      ASSERT_NEAR(y[r * out + n], ref[r * out + n], rel * magnitude + 1e-30)
          << "row " << r << " col " << n << " shape [" << out << ", " << in << "]";
    }
}

TEST_P(LinearTest, MatchesReference) {
  const Config c = GetParam();
  for (auto [out, in, rows] : {std::tuple{37, 53, 1}, {37, 53, 5}, {130, 67, 17}, {200, 333, 9}, {64, 1000, 3}}) {
    expect_matches_reference(c, out, in, rows, false);
    expect_matches_reference(c, out, in, rows, true);
  }
}

// The key property: row r of an M-row product is bit-identical to the same row computed
// alone, and to the same row inside any other M.
TEST_P(LinearTest, BatchInvariant) {
  const Config c = GetParam();
  for (auto [out, in] : {std::pair{200, 333}, {96, 1536}, {40, 8192}}) {
    const int64_t max_rows = 128;
    const auto w = random_floats(static_cast<size_t>(out * in), 11);
    const auto b = random_floats(static_cast<size_t>(out), 12);
    const auto x = random_floats(static_cast<size_t>(max_rows * in), 13, -3.0f, 3.0f);
    Linear linear(w, out, in, b, {c.compute, max_rows, c.backend});
    std::vector<float> single(static_cast<size_t>(max_rows * out));
    for (int64_t r = 0; r < max_rows; ++r) linear.forward(x.data() + r * in, single.data() + r * out, 1);
    for (int64_t m : {1, 2, 3, 7, 9, 16, 33, 128}) {
      std::vector<float> y(static_cast<size_t>(m * out));
      linear.forward(x.data(), y.data(), m);
      for (int64_t r = 0; r < m; ++r)
        ASSERT_TRUE(same_bits(y.data() + r * out, single.data() + r * out, static_cast<size_t>(out)))
            << "row " << r << " of M=" << m << " differs from M=1, shape [" << out << ", " << in << "]";
    }
  }
}

// Same rows with 1 and 2 threads (each Linear made under its own thread count).
TEST_P(LinearTest, ThreadCountInvariant) {
  const Config c = GetParam();
  const int saved = num_threads();
  for (auto [out, in] : {std::pair{520, 333}, {512, 1536}}) {
    const int64_t rows = 33;
    const auto w = random_floats(static_cast<size_t>(out * in), 21);
    const auto x = random_floats(static_cast<size_t>(rows * in), 22);
    std::vector<float> y1(static_cast<size_t>(rows * out)), y2(y1.size()), y2_single(static_cast<size_t>(out));
    set_num_threads(1);
    {
      Linear linear(w, out, in, {}, {c.compute, rows, c.backend});
      linear.forward(x.data(), y1.data(), rows);
    }
    set_num_threads(2);
    {
      Linear linear(w, out, in, {}, {c.compute, rows, c.backend});
      linear.forward(x.data(), y2.data(), rows);
      linear.forward(x.data() + 5 * in, y2_single.data(), 1);
    }
    EXPECT_TRUE(same_bits(y1.data(), y2.data(), y1.size())) << "shape [" << out << ", " << in << "]";
    EXPECT_TRUE(same_bits(y1.data() + 5 * out, y2_single.data(), static_cast<size_t>(out)));
  }
  set_num_threads(saved);
}

TEST_P(LinearTest, PrepareThenForwardAndAccessors) {
  const Config c = GetParam();
  const auto w = random_floats(40 * 24, 31);
  Linear linear(w, 40, 24, {}, {c.compute, 8, c.backend});
  EXPECT_EQ(linear.in_features(), 24);
  EXPECT_EQ(linear.out_features(), 40);
  EXPECT_EQ(linear.backend(), c.backend);
  EXPECT_GE(linear.weight_bytes(), size_t{40 * 24} * dtype_size(c.compute));
  for (int64_t m = 1; m <= 8; ++m) linear.prepare(m);
  const auto x = random_floats(8 * 24, 32);
  std::vector<float> y(8 * 40);
  linear.forward(x.data(), y.data(), 8);
  EXPECT_THROW(linear.forward(x.data(), y.data(), 9), Error);
  EXPECT_THROW(linear.forward(x.data(), y.data(), 0), Error);
  EXPECT_THROW(linear.prepare(9), Error);
  // Moved-to object keeps working.
  Linear moved = std::move(linear);
  std::vector<float> y2(y.size());
  moved.forward(x.data(), y2.data(), 8);
  EXPECT_TRUE(same_bits(y.data(), y2.data(), y.size()));
}

// A view multiplies by its source's weights (one stored copy, alive as long as the view)
// over a row range of its own: its rows are those of a Linear built for that range, and
// for the packed kernels also those of the source.
void expect_view_like_fresh(const std::vector<float>& w, int64_t out, int64_t in, const LinearOptions& options) {
  constexpr int64_t kSourceRows = 4, kViewRows = 40;
  const auto x = random_floats(static_cast<size_t>(kViewRows * in), 41);
  std::vector<float> from_source(static_cast<size_t>(kSourceRows * out));
  std::optional<Linear> view;
  {
    Linear source(w, out, in, {}, {options.compute, kSourceRows, options.backend, options.quantization});
    view.emplace(source.shared_view(kViewRows));
    EXPECT_TRUE(view->shares_weights_with(source));
    EXPECT_EQ(view->kernel_name(), source.kernel_name());
    EXPECT_EQ(view->weight_bytes(), source.weight_bytes());
    source.forward(x.data(), from_source.data(), kSourceRows);
    EXPECT_THROW(source.forward(x.data(), from_source.data(), kSourceRows + 1), Error);
  }  // the source is gone; the view keeps the weights
  Linear fresh(w, out, in, {}, {options.compute, kViewRows, options.backend, options.quantization});
  EXPECT_FALSE(view->shares_weights_with(fresh));
  std::vector<float> y(static_cast<size_t>(kViewRows * out)), expected(y.size());
  view->forward(x.data(), y.data(), kViewRows);
  fresh.forward(x.data(), expected.data(), kViewRows);
  EXPECT_TRUE(same_bits(y.data(), expected.data(), y.size()));
  if (view->backend() != LinearBackend::kOneDnn) {
    EXPECT_TRUE(same_bits(y.data(), from_source.data(), from_source.size()));
  }
  EXPECT_THROW(view->forward(x.data(), y.data(), kViewRows + 1), Error);
}

TEST_P(LinearTest, SharedViewRunsItsOwnRowsOnTheSameWeights) {
  const Config c = GetParam();
  const auto w = random_floats(96 * 200, 40);
  expect_view_like_fresh(w, 96, 200, {c.compute, 1, c.backend});
}

TEST(Linear, SharedViewOfInt8Weights) {
  const auto w = random_floats(96 * 200, 42);
  expect_view_like_fresh(w, 96, 200, {DType::kBF16, 1, LinearBackend::kPackedInt8, WeightQuantization::kInt8});
}

INSTANTIATE_TEST_SUITE_P(Configs, LinearTest,
                         ::testing::Values(Config{DType::kF32, LinearBackend::kOneDnn},
                                           Config{DType::kBF16, LinearBackend::kOneDnn},
                                           Config{DType::kBF16, LinearBackend::kPackedBf16},
                                           Config{DType::kF32, LinearBackend::kPackedF32}),
                         [](const auto& info) { return name(info.param); });

TEST(Linear, AutoPicksThePackedKernelsForBothDtypes) {
  const auto w = random_floats(6, 1);
  EXPECT_EQ(Linear(w, 2, 3, {}, {DType::kBF16, 4}).backend(), LinearBackend::kPackedBf16);
  EXPECT_EQ(Linear(w, 2, 3, {}, {DType::kF32, 4}).backend(), LinearBackend::kPackedF32);
}

// Where oneDNN would not be batch invariant, asking for it is a clear error, not a wrong row.
TEST(Linear, OneDnnIsRefusedWhereItIsNotBatchInvariant) {
  const auto w = random_floats(6, 1);
  int refused = 0;
  for (DType compute : {DType::kF32, DType::kBF16}) {
    if (linear_backend_supported(LinearBackend::kOneDnn, compute)) continue;
    EXPECT_THROW(Linear(w, 2, 3, {}, {compute, 4, LinearBackend::kOneDnn}), Error) << dtype_name(compute);
    ++refused;
  }
  if (refused == 0) GTEST_SKIP() << "this CPU has AVX512_BF16: oneDNN is batch invariant for both dtypes";
}

TEST(Linear, RejectsBadConfiguration) {
  const auto w = random_floats(6, 1);
  EXPECT_THROW(Linear(w, 2, 4, {}, {}), Error);                          // 6 values for 2x4
  EXPECT_THROW(Linear(w, 2, 3, std::vector<float>(3), {}), Error);       // bias of 3 for 2 outputs
  EXPECT_THROW(Linear(w, 2, 3, {}, {DType::kF16, 4}), Error);            // unsupported compute
  EXPECT_THROW(Linear(w, 2, 3, {}, {DType::kBF16, 0}), Error);           // max_rows 0
  EXPECT_THROW(Linear(w, 2, 3, {}, {DType::kF32, 4, LinearBackend::kPackedBf16}), Error);
  EXPECT_THROW(Linear(w, 2, 3, {}, {DType::kBF16, 4, LinearBackend::kPackedF32}), Error);
}

}  // namespace
}  // namespace dspark
