// The hand-written bf16-weight matrix product behind LinearBackend::kPackedBf16 (internal).
//
// y[M, out] = bf16(x)[M, in] · Wᵀ + bias with W in bf16 and f32 accumulation. W is packed
// once (layout in kernels/isa/bf16_kernels.h); each call reads every weight panel once for
// all M rows, so a small-M step (decode, verification, drafter blocks) costs about one
// weight read.
//
// Five kernels, one per object, each with its own fixed reduction order (so row r never
// depends on M or on the thread count, but two kernels differ in the last bits):
//  - kFma256 (AVX2) and kFma512 (AVX-512F): bf16 weights widened to f32, FMA chains.
//  - kDpbf16 (AVX512_BF16): vdpbf16ps pairs.
//  - kAmx: AMX tiles.
//  - kFp16 (AVX512-FP16): fp16 multiply-adds on the same bf16 values (exact in fp16 after a
//    power of two), summed in fp16 over 64 k before f32 (kernels/isa/bf16_kernels.h): twice
//    the multiply-adds per instruction of kFma512, and an error a little above the others'.
// kBest picks, under the process's ISA cap (kernels/isa.h): AMX when allowed; otherwise
// the fastest allowed vector kernel, measured once per cap on a decoder-sized matrix at 8
// rows (CPUs differ: one here runs vdpbf16ps at half its f32 FMA rate). kFp16, the one
// whose sums are not f32 throughout, is kept only when it is clearly (10%) the fastest; a
// cap below avx512fp16 (--isa vnni) leaves it out.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/aligned_buffer.h"
#include "kernels/isa.h"

namespace dspark {

enum class Bf16Kernel : uint8_t { kBest, kFma256, kFma512, kDpbf16, kAmx, kFp16 };

std::string_view bf16_kernel_name(Bf16Kernel kernel);  // "fma256", "fma512", "dpbf16", "amx", "fp16"
Isa bf16_kernel_isa(Bf16Kernel kernel);                 // the level a kernel needs
// The kernel kBest resolves to under the current ISA cap (measured on first call per cap).
Bf16Kernel best_bf16_kernel();

class PackedBf16Gemm {
 public:
  // weight: [out_features, in_features] f32; bias: [out_features] or empty; max_rows: the
  // largest M of multiply. Throws when `kernel` is not allowed under the ISA cap.
  PackedBf16Gemm(const float* weight, int64_t out_features, int64_t in_features, std::span<const float> bias,
                 int64_t max_rows, Bf16Kernel kernel = Bf16Kernel::kBest);
  // Multiplies by `source`'s packed weights and bias (shared, read only: nothing is copied,
  // and they live as long as either object) with scratch of its own for up to max_rows
  // rows, and the same kernel, so a row gives the same bits through either object.
  PackedBf16Gemm(const PackedBf16Gemm& source, int64_t max_rows);

  // x: [num_rows, in] f32 (rounded to bf16 here); y: [num_rows, out] f32.
  // Uses per-object scratch: one object must not run two multiplies at once.
  void multiply(const float* x, float* y, int64_t num_rows);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  size_t weight_bytes() const { return packed_->size(); }
  const void* weights_data() const { return packed_->data(); }  // identifies the stored copy
  Bf16Kernel kernel() const { return kernel_; }  // never kBest

 private:
  int64_t out_;
  int64_t in_;
  int64_t padded_in_;
  int64_t num_groups_;
  int64_t max_rows_;
  Bf16Kernel kernel_;
  void allocate_scratch();

  std::shared_ptr<const AlignedBuffer> packed_;  // [groups][padded_in / 32][blocks <= 4][16][16][2] bf16 (kFp16: fp16)
  std::shared_ptr<const AlignedBuffer> bias_;    // [num_groups * 64] f32, zero beyond out_ (and when no bias)
  std::shared_ptr<const AlignedBuffer> out_exponent_;  // kFp16: [num_groups * 64] f32 (bf16_kernels.h); else null
  // f32 kernels: [max_rows, padded_in] f32; bf16 kernels: [32-padded max_rows, padded_in] bf16;
  // kFp16: [max_rows, padded_in] fp16, then (64-byte aligned) [max_rows] f32 row exponents.
  AlignedBuffer scratch_;
  size_t row_exponent_offset_ = 0;  // kFp16: bytes from scratch_'s start to its row exponents
};

}  // namespace dspark
