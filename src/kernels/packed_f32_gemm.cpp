#include "kernels/packed_f32_gemm.h"

#include <cstring>

#include "core/check.h"
#include "kernels/isa/f32_kernels.h"
#include "kernels/packed_common.h"

namespace dspark {
namespace {

using kernels::kBf16Block;
using kernels::kBf16Chunk;
using kernels::kBf16Group;

}  // namespace

std::string_view f32_kernel_name(F32Kernel kernel) {
  switch (kernel) {
    case F32Kernel::kBest: return "best";
    case F32Kernel::kFma256: return "fma256";
    case F32Kernel::kFma512: return "fma512";
  }
  return "?";
}

Isa f32_kernel_isa(F32Kernel kernel) { return kernel == F32Kernel::kFma512 ? Isa::kAvx512 : Isa::kAvx2; }

F32Kernel best_f32_kernel() { return isa_allowed(Isa::kAvx512) ? F32Kernel::kFma512 : F32Kernel::kFma256; }

PackedF32Gemm::PackedF32Gemm(const float* weight, int64_t out_features, int64_t in_features,
                             std::span<const float> bias, int64_t max_rows, F32Kernel kernel)
    : out_(out_features),
      in_(in_features),
      padded_in_((in_features + kBf16Chunk - 1) / kBf16Chunk * kBf16Chunk),
      num_groups_((out_features + kBf16Group - 1) / kBf16Group),
      max_rows_(max_rows),
      kernel_(kernel == F32Kernel::kBest ? best_f32_kernel() : kernel) {
  kernels::check_packed_args("PackedF32Gemm", out_, in_, bias, max_rows_);
  DSPARK_CHECK(isa_allowed(f32_kernel_isa(kernel_)), "PackedF32Gemm: kernel {} needs ISA {} (active: {})",
               f32_kernel_name(kernel_), isa_name(f32_kernel_isa(kernel_)), isa_name(active_isa()));
  // A k-pair's 16 even-k weights, then its 16 odd-k ones: two FMA operands as loaded.
  packed_ = kernels::pack_tiles<float>(
      weight, out_, in_, [](float w, int64_t) { return w; },
      [](int64_t lane, int64_t e) { return e * kBf16Block + lane; });
  bias_ = kernels::padded_bias(bias, num_groups_ * kBf16Group);
  if (in_ != padded_in_) scratch_ = AlignedBuffer(static_cast<size_t>(max_rows_ * padded_in_) * sizeof(float));
}

PackedF32Gemm::PackedF32Gemm(const PackedF32Gemm& source, int64_t max_rows)
    : out_(source.out_),
      in_(source.in_),
      padded_in_(source.padded_in_),
      num_groups_(source.num_groups_),
      max_rows_(max_rows),
      kernel_(source.kernel_),
      packed_(source.packed_),
      bias_(source.bias_) {
  DSPARK_CHECK(max_rows_ >= 1, "PackedF32Gemm: max_rows must be >= 1, got {}", max_rows_);
  if (in_ != padded_in_) scratch_ = AlignedBuffer(static_cast<size_t>(max_rows_ * padded_in_) * sizeof(float));
}

void PackedF32Gemm::multiply(const float* x, float* y, int64_t num_rows) {
  DSPARK_CHECK(num_rows >= 1 && num_rows <= max_rows_, "PackedF32Gemm: num_rows {} outside [1, {}]", num_rows,
               max_rows_);
  const kernels::PackedF32View w{packed_->as<float>(), bias_->as<float>(), out_, in_, padded_in_, num_groups_};
  const float* rows = x;  // [num_rows, padded_in]: x itself when in needs no padding
  if (in_ != padded_in_) {
    for (int64_t r = 0; r < num_rows; ++r)
      std::memcpy(scratch_.as<float>() + r * padded_in_, x + r * in_, static_cast<size_t>(in_) * sizeof(float));
    rows = scratch_.as<float>();
  }
  if (kernel_ == F32Kernel::kFma512) kernels::f32_gemm_fma512(w, rows, y, num_rows);
  else kernels::f32_gemm_fma256(w, rows, y, num_rows);
}

}  // namespace dspark
