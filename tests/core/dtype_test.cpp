#include "core/dtype.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "core/check.h"

namespace dspark {
namespace {

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is halfway too: ties to even goes up.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
}

TEST(DType, F16RoundTripsAllFiniteValues) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = f16_to_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_f16(f), bits) << "bits " << h;
  }
  EXPECT_EQ(f16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float_to_f16(1e6f), 0x7c00);
}

TEST(DType, F8E4M3KnownValues) {
  EXPECT_EQ(f8e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(f8e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(f8e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(f8e4m3_to_float(0x7f)));
}

TEST(DType, ParseNamesAndReject) {
  EXPECT_EQ(parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("F32"), DType::kF32);
  EXPECT_THROW(parse_dtype("int4"), Error);
}

}  // namespace
}  // namespace dspark
