// Element types of stored and computed tensors, and scalar conversions between them.
// bf16/f16 values are carried as raw uint16_t bit patterns; conversions to them round
// to nearest even, exactly as PyTorch and oneDNN do, so files written here and there agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string_view>

namespace dspark {

// kI8: int8 values, stored only (quantized weights come with their scales).
enum class DType : uint8_t { kF32, kBF16, kF16, kF8E4M3, kI8 };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);     // "f32", "bf16", "f16", "f8_e4m3", "i8"
DType parse_dtype(std::string_view name);     // accepts the names above; throws otherwise
inline std::ostream& operator<<(std::ostream& os, DType dtype) { return os << dtype_name(dtype); }

inline float bf16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}

// Rounds f to the nearest bf16 value and returns it as float.
inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float f);
// Rounds f to the nearest f16 value and returns it as float.
inline float round_to_f16(float f) { return f16_to_float(float_to_f16(f)); }
float f8e4m3_to_float(uint8_t bits);

// Converts n elements of type `from` at src into f32 at dst.
void convert_to_f32(const void* src, DType from, float* dst, size_t n);
// Converts n f32 values into bf16 (round to nearest even).
void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n);

}  // namespace dspark
