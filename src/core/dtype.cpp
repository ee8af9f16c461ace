#include "core/dtype.h"

#include <cmath>

#include "core/check.h"

namespace dspark {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kBF16: return 2;
    case DType::kF16: return 2;
    case DType::kF8E4M3: return 1;
    case DType::kI8: return 1;
  }
  DSPARK_FAIL("unknown dtype {}", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kF8E4M3: return "f8_e4m3";
    case DType::kI8: return "i8";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32" || name == "F32") return DType::kF32;
  if (name == "bf16" || name == "bfloat16" || name == "BF16") return DType::kBF16;
  if (name == "f16" || name == "float16" || name == "F16") return DType::kF16;
  if (name == "f8_e4m3" || name == "F8_E4M3") return DType::kF8E4M3;
  DSPARK_FAIL("unknown dtype '{}' (expected f32, bf16, f16 or f8_e4m3)", name);
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float value;
  if (exp == 0) value = std::ldexp(static_cast<float>(mant), -24);          // subnormal / zero
  else if (exp == 31) value = mant ? NAN : INFINITY;
  else value = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -value : value;
}

uint16_t float_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // subnormal half (or zero): value = m * 2^-24
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 16777216.0f;  // exact: multiply by 2^24
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  uint32_t m = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  m -= 0x38000000u;                                // rebias exponent 127 -> 15
  return static_cast<uint16_t>(sign | (m >> 13));
}

float f8e4m3_to_float(uint8_t b) {
  const uint32_t sign = b >> 7, exp = (b >> 3) & 0xfu, mant = b & 0x7u;
  float value;
  if (exp == 0xf && mant == 0x7) value = NAN;  // e4m3fn has no infinities
  else if (exp == 0) value = std::ldexp(static_cast<float>(mant), -9);
  else value = std::ldexp(static_cast<float>(mant | 0x8u), static_cast<int>(exp) - 10);
  return sign ? -value : value;
}

void convert_to_f32(const void* src, DType from, float* dst, size_t n) {
  switch (from) {
    case DType::kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(s[i]);
      return;
    }
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_float(s[i]);
      return;
    }
    case DType::kF8E4M3: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f8e4m3_to_float(s[i]);
      return;
    }
    case DType::kI8: break;  // quantized values mean nothing without their scales
  }
  DSPARK_FAIL("unknown dtype {}", static_cast<int>(from));
}

void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

}  // namespace dspark
