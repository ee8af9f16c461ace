// The hand-written f32 matrix product behind LinearBackend::kPackedF32 (internal).
//
// y[M, out] = x[M, in] · Wᵀ + bias in f32: W packed once (kernels/isa/f32_kernels.h), every
// weight panel read once per call for all M rows, one FMA chain per output over k in
// order, so row r never depends on M or on the thread count, on every x86 CPU (oneDNN's
// f32 matmul does not promise that: on AVX2-only CPUs its M = 1 and M > 1 rows differ).
// Two kernels: kFma512 (AVX-512F) where the ISA cap allows it, kFma256 (AVX2) elsewhere.
// Both run the same FMA chain per output, so they give the same bits.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/aligned_buffer.h"
#include "kernels/isa.h"

namespace dspark {

enum class F32Kernel : uint8_t { kBest, kFma256, kFma512 };

std::string_view f32_kernel_name(F32Kernel kernel);  // "fma256", "fma512"
Isa f32_kernel_isa(F32Kernel kernel);                 // the level a kernel needs
F32Kernel best_f32_kernel();                          // the widest allowed under the ISA cap

class PackedF32Gemm {
 public:
  // weight: [out_features, in_features] f32; bias: [out_features] or empty; max_rows: the
  // largest M of multiply. Throws when `kernel` is not allowed under the ISA cap.
  PackedF32Gemm(const float* weight, int64_t out_features, int64_t in_features, std::span<const float> bias,
                int64_t max_rows, F32Kernel kernel = F32Kernel::kBest);
  // `source`'s packed weights and bias (shared, read only), scratch of its own for up to
  // max_rows rows, the same kernel.
  PackedF32Gemm(const PackedF32Gemm& source, int64_t max_rows);

  // x: [num_rows, in] f32; y: [num_rows, out] f32. Uses per-object scratch: one object
  // must not run two multiplies at once.
  void multiply(const float* x, float* y, int64_t num_rows);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  size_t weight_bytes() const { return packed_->size(); }
  const void* weights_data() const { return packed_->data(); }  // identifies the stored copy
  F32Kernel kernel() const { return kernel_; }  // never kBest

 private:
  int64_t out_;
  int64_t in_;
  int64_t padded_in_;
  int64_t num_groups_;
  int64_t max_rows_;
  F32Kernel kernel_;

  std::shared_ptr<const AlignedBuffer> packed_;  // [groups][padded_in / 32][blocks <= 4][16][2][16] f32
  std::shared_ptr<const AlignedBuffer> bias_;    // [num_groups * 64] f32, zero beyond out_ (and when no bias)
  AlignedBuffer scratch_;  // [max_rows, padded_in] f32, zero in columns >= in_; empty when in_ == padded_in_
};

}  // namespace dspark
